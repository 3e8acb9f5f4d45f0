// Package tfstate reads and edits Terraform state documents (the JSON the
// engine writes, format version 4): the one place sponson parses a state.
// Only the stable, documented top of the format is read: lineage, serial,
// outputs, and resources with mode, type, name, module, provider and
// instances. A document is kept whole (Doc), so that what sponson does not
// touch is written back as it was.
package tfstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
)

// Doc is a state document, kept whole.
type Doc map[string]any

// Parse reads a state document; an empty or absent state is an empty
// document of format version 4.
func Parse(data []byte) (Doc, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Doc{"version": 4.0, "resources": []any{}}, nil
	}
	var d Doc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("the state is not JSON: %w", err)
	}
	return d, nil
}

// ParseExact reads a state document as Parse does, keeping every number
// as the state spells it (json.Number): a value past 2^53 read as a float
// would be written back changed.
func ParseExact(data []byte) (Doc, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Parse(data)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var d Doc
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("the state is not JSON: %w", err)
	}
	if n, ok := d["serial"].(json.Number); ok {
		f, err := n.Float64()
		if err != nil {
			return nil, fmt.Errorf("the state's serial %s: %w", n, err)
		}
		d["serial"] = f
	}
	return d, nil
}

// Marshal renders the document as the next state: its serial one more.
func (d Doc) Marshal() ([]byte, error) {
	serial, _ := d["serial"].(float64)
	d["serial"] = serial + 1
	b, err := json.MarshalIndent(d, "", "  ")
	return append(b, '\n'), err
}

// Emptied returns state without any resource or output, with the next
// serial and the same lineage: what a scope keeps once its resources
// belong to another (a predecessor after its handover, a dropped copy).
// An absent state stays absent (nil).
func Emptied(state []byte) ([]byte, error) {
	if len(state) == 0 {
		return nil, nil
	}
	d, err := Parse(state)
	if err != nil {
		return nil, err
	}
	serial, _ := d["serial"].(float64)
	d["serial"] = serial + 1
	d["resources"] = []any{}
	d["outputs"] = map[string]any{}
	delete(d, "check_results")
	return json.MarshalIndent(d, "", "  ")
}

// Meta is the identity of a state: its lineage and serial.
type Meta struct {
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
}

// ReadMeta returns the lineage and serial of a state; the zero Meta for an
// empty one.
func ReadMeta(state []byte) (Meta, error) {
	var m Meta
	if len(bytes.TrimSpace(state)) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(state, &m); err != nil {
		return m, fmt.Errorf("the state is not JSON: %w", err)
	}
	return m, nil
}

// Resources returns the resources of the document.
func (d Doc) Resources() []map[string]any {
	list, _ := d["resources"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, r := range list {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// SetResources replaces the resources of the document.
func (d Doc) SetResources(rs []map[string]any) {
	list := make([]any, 0, len(rs))
	for _, r := range rs {
		list = append(list, r)
	}
	d["resources"] = list
}

// Instance is one resource instance of a document, as it stands there:
// changing Resource or Instance changes the document.
type Instance struct {
	Addr     Addr
	Resource map[string]any
	Instance map[string]any
}

// Instances returns every resource instance of the document, managed and
// data, in the document's order.
func (d Doc) Instances() []Instance {
	var out []Instance
	for _, r := range d.Resources() {
		base := resourceAddr(r)
		for _, inst := range instancesOf(r) {
			a := base
			a.Key, a.HasKey = inst["index_key"]
			out = append(out, Instance{Addr: a, Resource: r, Instance: inst})
		}
	}
	return out
}

// SensitiveNames are the top-level attributes an instance marks sensitive.
func (i Instance) SensitiveNames() map[string]bool {
	out := map[string]bool{}
	paths, _ := i.Instance["sensitive_attributes"].([]any)
	for _, p := range paths {
		steps, _ := p.([]any)
		if len(steps) == 0 {
			continue
		}
		if step, ok := steps[0].(map[string]any); ok {
			if name, ok := step["value"].(string); ok {
				out[name] = true
			}
		}
	}
	return out
}

func resourceAddr(r map[string]any) Addr {
	str := func(k string) string { v, _ := r[k].(string); return v }
	return Addr{Module: str("module"), Mode: str("mode"), Type: str("type"), Name: str("name")}
}

func instancesOf(r map[string]any) []map[string]any {
	list, _ := r["instances"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, i := range list {
		if m, ok := i.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// Object is one managed resource instance of a state, as a ledger reads
// it.
type Object struct {
	Address, Provider, Type, ID string
	Attributes                  map[string]any
	// Identity is the instance's resource identity, when the provider
	// reports one.
	Identity any
	// Sensitive are the top-level attributes the state marks sensitive.
	Sensitive map[string]bool
}

type rawState struct {
	Resources []struct {
		Module    string `json:"module"`
		Mode      string `json:"mode"`
		Type      string `json:"type"`
		Name      string `json:"name"`
		Provider  string `json:"provider"`
		Instances []struct {
			IndexKey   any            `json:"index_key"`
			Attributes map[string]any `json:"attributes"`
			Identity   any            `json:"identity"`
			// Sensitive are the value paths the state marks sensitive:
			// [[{"type": "get_attr", "value": "input"}, ...], ...].
			Sensitive []([]struct {
				Type  string `json:"type"`
				Value any    `json:"value"`
			}) `json:"sensitive_attributes"`
		} `json:"instances"`
	} `json:"resources"`
}

var providerSource = regexp.MustCompile(`^provider\["([^"]+)"\]`)

// Objects lists the managed resource instances of a state, sorted by
// address. An empty or absent state has none.
func Objects(data []byte) ([]Object, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var st rawState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("reading the scope's state: %w", err)
	}
	var out []Object
	for _, r := range st.Resources {
		if r.Mode != "managed" {
			continue
		}
		provider := r.Provider
		if m := providerSource.FindStringSubmatch(r.Provider); m != nil {
			provider = m[1]
		}
		base := r.Type + "." + r.Name
		if r.Module != "" {
			base = r.Module + "." + base
		}
		for _, in := range r.Instances {
			addr := base
			switch k := in.IndexKey.(type) {
			case float64:
				addr += fmt.Sprintf("[%d]", int64(k))
			case string:
				addr += fmt.Sprintf("[%q]", k)
			}
			id, _ := in.Attributes["id"].(string)
			var sensitive map[string]bool
			for _, path := range in.Sensitive {
				if len(path) == 0 || path[0].Type != "get_attr" {
					continue
				}
				if name, ok := path[0].Value.(string); ok {
					if sensitive == nil {
						sensitive = map[string]bool{}
					}
					sensitive[name] = true
				}
			}
			out = append(out, Object{Address: addr, Provider: provider, Type: r.Type, ID: id, Attributes: in.Attributes, Identity: in.Identity, Sensitive: sensitive})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}
