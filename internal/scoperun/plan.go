package scoperun

import (
	"encoding/json"
	"sort"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// What the receipts and saved plans record of the engine's plan, read from
// its JSON.

// Changes lists the planned actions on managed resources, no-ops left out.
func Changes(p *tfjson.Plan) []receipt.Change {
	out := []receipt.Change{}
	if p == nil {
		return out
	}
	for _, rc := range p.ResourceChanges {
		if rc.Mode != tfjson.ManagedResourceMode || rc.Change == nil || rc.Change.Actions.NoOp() {
			continue
		}
		acts := make([]string, len(rc.Change.Actions))
		for i, a := range rc.Change.Actions {
			acts[i] = string(a)
		}
		out = append(out, receipt.Change{Address: rc.Address, Type: rc.Type, Actions: acts})
	}
	return out
}

// StackReads lists what the plan's sponson_outputs data sources read
// (docs/design.md §6.4), from the plan's planned values, else its prior
// state, in address order; a read not known at plan time (deferred to the
// apply) is left out.
func StackReads(p *tfjson.Plan) []receipt.StackRead {
	if p == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []receipt.StackRead
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		if m == nil {
			return
		}
		for _, r := range m.Resources {
			if r.Mode != tfjson.DataResourceMode || r.Type != "sponson_outputs" || seen[r.Address] {
				continue
			}
			stack, _ := r.AttributeValues["stack_name"].(string)
			scope, _ := r.AttributeValues["read_scope"].(string)
			var serial int64
			switch n := r.AttributeValues["serial"].(type) {
			case float64:
				serial = int64(n)
			case json.Number:
				serial, _ = n.Int64()
			}
			if stack == "" || scope == "" {
				continue
			}
			seen[r.Address] = true
			read := receipt.StackRead{Address: r.Address, Stack: stack, Scope: scope, Serial: serial}
			read.Planned, _ = r.AttributeValues["planned"].(bool)
			read.PlanRun, _ = r.AttributeValues["planned_run"].(string)
			named, _ := r.AttributeValues["scope"].(string)
			read.Named = named != ""
			list, _ := r.AttributeValues["provisional"].([]any)
			for _, e := range list {
				if s, ok := e.(string); ok {
					read.Provisional = append(read.Provisional, s)
				}
			}
			out = append(out, read)
		}
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	if p.PlannedValues != nil {
		walk(p.PlannedValues.RootModule)
	}
	if p.PriorState != nil && p.PriorState.Values != nil {
		walk(p.PriorState.Values.RootModule)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// planChanges reports whether a plan changes anything (a saved plan says
// so only in its JSON).
func planChanges(p *tfjson.Plan) bool {
	for _, rc := range p.ResourceChanges {
		if rc.Change != nil && !rc.Change.Actions.NoOp() {
			return true
		}
	}
	for _, oc := range p.OutputChanges {
		if oc != nil && !oc.Actions.NoOp() {
			return true
		}
	}
	return false
}
