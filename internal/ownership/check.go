package ownership

import (
	"sort"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Conflict is a planned change to an object another scope owns.
type Conflict struct {
	Change Planned
	Owner  store.Owner
}

// Identities returns the known identities of the planned changes.
func Identities(planned []Planned) []string {
	var ids []string
	seen := map[string]bool{}
	for _, p := range planned {
		for _, id := range p.AllKeys() {
			if id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Check returns the planned changes whose identity a scope other than self
// owns or intends to create, according to owners (the environment's
// ownership index, every stack of it): the same scope name of another stack
// is another scope.
func Check(planned []Planned, owners []store.Owner, self store.Key) []Conflict {
	byID := map[string][]store.Owner{}
	for _, o := range owners {
		if (o.Scope != self.Scope || o.Stack != self.Stack) && o.CreatedBy != store.SchemeCreatedBy {
			byID[o.Identity] = append(byID[o.Identity], o)
		}
	}
	var out []Conflict
	for _, p := range planned {
		// One conflict per owning entry, whichever of the change's keys
		// matched it.
		seen := map[[2]string]bool{}
		for _, id := range p.AllKeys() {
			for _, o := range byID[id] {
				if k := [2]string{o.Scope, o.Address}; !seen[k] {
					seen[k] = true
					out = append(out, Conflict{Change: p, Owner: o})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Change.Address != out[j].Change.Address {
			return out[i].Change.Address < out[j].Change.Address
		}
		if out[i].Owner.Scope != out[j].Owner.Scope {
			return out[i].Owner.Scope < out[j].Owner.Scope
		}
		return out[i].Owner.Stack < out[j].Owner.Stack
	})
	return out
}
