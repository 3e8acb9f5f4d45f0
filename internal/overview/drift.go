package overview

import (
	"encoding/json"
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

// driftDoc is what ParseDrift reads: a `sponson drift --json` document
// (its envelope or the result alone), of one stack or of --all.
type driftDoc struct {
	Result      *driftDoc            `json:"result"`
	Environment string               `json:"environment"`
	Scopes      []summary.DriftScope `json:"scopes"`
	Stacks      []struct {
		Stack  string          `json:"stack"`
		Result json.RawMessage `json:"result"`
	} `json:"stacks"`
}

// ParseDrift reads the output of `sponson drift --json` into Input.Drift:
// drift records nothing in the store, so the overview shows drift only
// from a result it is given. A result of one stack names no stack: its
// scopes match a scope of that name in any stack of the environment.
func ParseDrift(data []byte) (map[string]summary.DriftScope, error) {
	var d driftDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("not the JSON of sponson drift --json: %w", err)
	}
	if d.Result != nil {
		d = *d.Result
	}
	out := map[string]summary.DriftScope{}
	for _, s := range d.Scopes {
		out[DriftKey(d.Environment, "", s.Scope)] = s
	}
	for _, st := range d.Stacks {
		if len(st.Result) == 0 {
			continue // a stack skipped or failed before its drift ran
		}
		var one driftDoc
		if err := json.Unmarshal(st.Result, &one); err != nil {
			return nil, fmt.Errorf("stack %s: not the JSON of sponson drift --json: %w", st.Stack, err)
		}
		env := one.Environment
		if env == "" {
			env = d.Environment
		}
		for _, s := range one.Scopes {
			out[DriftKey(env, st.Stack, s.Scope)] = s
		}
	}
	if d.Environment == "" && len(d.Stacks) == 0 {
		return nil, fmt.Errorf("not the JSON of sponson drift --json: it names no environment")
	}
	return out, nil
}
