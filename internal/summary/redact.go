package summary

import (
	"encoding/json"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

// Redacted is what a sensitive value becomes, in the engine's own words.
const Redacted = "(sensitive value)"

// minSecret is the shortest value Redact replaces: a shorter one ("on",
// "db") would blank out unrelated words of the engine's text.
const minSecret = 4

// Redact removes from the engine's plan text every value the plan marks
// sensitive. The engine redacts what it knows to be sensitive, but not
// everything: a provider-computed attribute copied from a sensitive input
// (terraform_data's output is one, measured with OpenTofu 1.12.6) keeps no
// mark in the state, and the engine prints its prior value. The plan JSON
// still has the marks on the input, so every string found under a sensitive
// mark (in resource and output changes, the prior state, and sensitive
// variables) is replaced wherever it appears in the text.
func Redact(text string, p *tfjson.Plan) string {
	secrets := Secrets(p)
	if len(secrets) == 0 {
		return text
	}
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, Redacted)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// Secrets returns the sensitive strings of a plan, longest first (so that a
// secret containing another is replaced whole), each line of a multi-line
// value on its own as the engine prints it in a heredoc.
func Secrets(p *tfjson.Plan) []string {
	if p == nil {
		return nil
	}
	set := map[string]bool{}
	add := func(v any) {
		collect(v, true, set)
	}
	if p.Config != nil && p.Config.RootModule != nil {
		for name, v := range p.Config.RootModule.Variables {
			if v != nil && v.Sensitive {
				if pv := p.Variables[name]; pv != nil {
					add(pv.Value)
				}
			}
		}
	}
	changes := append(append([]*tfjson.ResourceChange{}, p.ResourceChanges...), p.ResourceDrift...)
	for _, rc := range changes {
		if rc == nil || rc.Change == nil {
			continue
		}
		c := rc.Change
		collect(c.Before, c.BeforeSensitive, set)
		collect(c.After, c.AfterSensitive, set)
	}
	for _, c := range p.OutputChanges {
		if c == nil {
			continue
		}
		collect(c.Before, c.BeforeSensitive, set)
		collect(c.After, c.AfterSensitive, set)
	}
	if p.PriorState != nil && p.PriorState.Values != nil {
		for _, o := range p.PriorState.Values.Outputs {
			if o != nil && o.Sensitive {
				add(o.Value)
			}
		}
		stateSecrets(p.PriorState.Values.RootModule, set)
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

func stateSecrets(m *tfjson.StateModule, set map[string]bool) {
	if m == nil {
		return
	}
	for _, r := range m.Resources {
		if r == nil || len(r.SensitiveValues) == 0 {
			continue
		}
		var marks any
		if json.Unmarshal(r.SensitiveValues, &marks) == nil {
			collect(r.AttributeValues, marks, set)
		}
	}
	for _, c := range m.ChildModules {
		stateSecrets(c, set)
	}
}

// collect adds the strings of v that marks (a mirror of v whose true leaves
// mark sensitive subtrees) covers.
func collect(v, marks any, set map[string]bool) {
	if b, ok := marks.(bool); ok {
		if b {
			leaves(v, set)
		}
		return
	}
	switch m := marks.(type) {
	case map[string]any:
		obj, _ := v.(map[string]any)
		for k, mk := range m {
			collect(obj[k], mk, set)
		}
	case []any:
		list, _ := v.([]any)
		for i, mk := range m {
			if i < len(list) {
				collect(list[i], mk, set)
			}
		}
	}
}

// leaves adds every string under v, and the JSON of every other scalar that
// is long enough to be recognisable.
func leaves(v any, set map[string]bool) {
	switch x := v.(type) {
	case string:
		addSecret(x, set)
	case map[string]any:
		for _, e := range x {
			leaves(e, set)
		}
	case []any:
		for _, e := range x {
			leaves(e, set)
		}
	case nil, bool:
	default:
		if b, err := json.Marshal(x); err == nil {
			addSecret(string(b), set)
		}
	}
}

func addSecret(s string, set map[string]bool) {
	if len(s) >= minSecret {
		set[s] = true
	}
	if strings.Contains(s, "\n") {
		for l := range strings.SplitSeq(s, "\n") {
			if l = strings.TrimSpace(l); len(l) >= minSecret {
				set[l] = true
			}
		}
	}
}
