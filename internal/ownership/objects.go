package ownership

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The commands that move objects into a scope's state without a plan
// (`sponson adopt`, the adoption of a settled create, `resolve --id`)
// check the objects themselves, under every identity they have, against
// every other scope of the environment (docs/design.md §2.6 "Foreign"):
// otherwise two scopes could own one object and neither destroy it.

// ObjectKeys returns the identities other scopes can own o by: under pol,
// under the base scheme and under each of schemes for its type.
func ObjectKeys(o Object, pol Policy, schemes []Scheme) []string {
	keys := []string{pol.identityOf(o), pol.baseIdentity(o)}
	for _, s := range schemes {
		if s.Provider == o.Provider && s.Type == o.Type {
			sp := Policy{Identity: map[string][]string{s.Type: s.Attributes}, AddressOwned: pol.AddressOwned, Sensitive: pol.Sensitive, HashKey: pol.HashKey}
			keys = append(keys, sp.identityOf(o))
		}
	}
	return global(otherKeys("", keys))
}

// ForeignOwners returns, by address, the owners other than self of any
// identity of objects: the schemes in use for their types are read from
// the index first, then their owners, in two queries.
func ForeignOwners(ctx context.Context, idx store.Index, self store.Key, pol Policy, objects []Object) (map[string][]store.Owner, error) {
	var queries []string
	seen := map[string]bool{}
	for _, o := range objects {
		if q := store.SchemeIdentity(o.Provider, o.Type); !seen[q] {
			seen[q] = true
			queries = append(queries, q)
		}
	}
	if len(queries) == 0 {
		return nil, nil
	}
	rows, err := idx.Owners(ctx, self.Environment, queries)
	if err != nil {
		return nil, err
	}
	schemes := SchemesFrom(rows)
	byKey := map[string][]string{}
	var ids []string
	for _, o := range objects {
		for _, k := range ObjectKeys(o, pol, schemes) {
			byKey[k] = append(byKey[k], o.Address)
			ids = append(ids, k)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	owners, err := idx.Owners(ctx, self.Environment, ids)
	if err != nil {
		return nil, err
	}
	out := map[string][]store.Owner{}
	for _, ow := range owners {
		if ow.CreatedBy == store.SchemeCreatedBy || (ow.Scope == self.Scope && ow.Stack == self.Stack) {
			continue
		}
		for _, addr := range byKey[ow.Identity] {
			out[addr] = append(out[addr], ow)
		}
	}
	return out, nil
}

// ForeignObjectsError is the OWNED_BY_OTHER_SCOPE refusal of a command that
// would take objects other scopes own (ForeignOwners' result) into self's
// state, what saying it would do; nil when foreign is empty.
func ForeignObjectsError(self store.Key, what string, foreign map[string][]store.Owner) error {
	if len(foreign) == 0 {
		return nil
	}
	var lines, names []string
	seen := map[string]bool{}
	for addr, owners := range foreign {
		for _, o := range owners {
			lines = append(lines, fmt.Sprintf("%s is %s in scope %s (run %s)", addr, o.Address, ownerName(self, o), o.RunID))
			if n := ownerName(self, o); !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(lines)
	sort.Strings(names)
	return errcode.New(errcode.OwnedByOtherScope, "%s would take %d object(s) that another scope of %s owns into scope %s; nothing was written:\n  %s",
		what, len(foreign), self.Environment, self.Scope, strings.Join(lines, "\n  ")).
		WithHint(fmt.Sprintf("Manage these objects from the scope that owns them (%s), or remove them from that scope first.", strings.Join(names, ", "))).
		With("owners", names)
}
