package tfstate

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Output is one root module output of a state, as the engines write it: the
// value as JSON, its type in cty's JSON notation.
type Output struct {
	Sensitive bool            `json:"sensitive"`
	Type      json.RawMessage `json:"type,omitempty"`
	Value     json.RawMessage `json:"value"`
}

// Outputs is what a reader of a stack's outputs takes from a state.
type Outputs struct {
	Serial  int64
	Outputs map[string]Output
	// Holds is set when the state has resources or outputs: an empty one
	// is a scope never applied, or destroyed.
	Holds bool
}

// ReadOutputs reads the serial and root module outputs of a state; the
// zero Outputs (no outputs, Holds unset) for an empty or absent one.
func ReadOutputs(state []byte) (Outputs, error) {
	if len(bytes.TrimSpace(state)) == 0 {
		return Outputs{Outputs: map[string]Output{}}, nil
	}
	var doc struct {
		Serial    int64             `json:"serial"`
		Outputs   map[string]Output `json:"outputs"`
		Resources []json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(state, &doc); err != nil {
		return Outputs{}, fmt.Errorf("the state is not a state document: %w", err)
	}
	out := Outputs{Serial: doc.Serial, Outputs: doc.Outputs, Holds: len(doc.Outputs) > 0 || len(doc.Resources) > 0}
	if out.Outputs == nil {
		out.Outputs = map[string]Output{}
	}
	return out, nil
}
