package scoperun

import (
	"fmt"
	"sort"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

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

// Ledger lists the managed resources of a state, keyed by identity
// (provider, type, id). An entry the previous ledger already had keeps how
// it came to be owned.
func Ledger(st *tfjson.State, prev *receipt.Receipt) []receipt.Entry {
	known := map[string]receipt.Entry{}
	if prev != nil {
		for _, e := range prev.Ledger {
			known[e.Identity] = e
		}
	}
	out := []receipt.Entry{}
	if st == nil || st.Values == nil {
		return out
	}
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		if m == nil {
			return
		}
		for _, res := range m.Resources {
			if res.Mode != tfjson.ManagedResourceMode {
				continue
			}
			id, _ := res.AttributeValues["id"].(string)
			e := receipt.Entry{
				Identity:  Identity(res.ProviderName, res.Type, id),
				Address:   res.Address,
				Provider:  res.ProviderName,
				Type:      res.Type,
				ID:        id,
				CreatedBy: receipt.CreatedBySponson,
			}
			if old, ok := known[e.Identity]; ok && old.CreatedBy != "" {
				e.CreatedBy = old.CreatedBy
			}
			out = append(out, e)
		}
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(st.Values.RootModule)
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// Identity is the ledger key of a resource: provider source, type and id.
func Identity(provider, typ, id string) string {
	return fmt.Sprintf("%s|%s|%s", provider, typ, id)
}
