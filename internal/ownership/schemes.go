package ownership

import (
	"context"
	"fmt"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// A scope's identity policy is its own: another scope of the environment
// may declare other identifying attributes for the same type, or none. So
// that no policy decides which identities a scope is checked by (issue 12
// item 1), ownership is matched under every identity scheme in use:
//
//   - every ledger entry is indexed under its identity and also under its
//     base identity (the provider's identity or the id), which every scope
//     computes the same way for an existing object;
//   - every scheme a ledger uses is indexed too (store.SchemeIdentity), and
//     a run computes each planned change under each scheme in use for its
//     type (Keyed), before the foreign check and the race rule.
//
// A scope's own policy change could still make objects it owns unmatchable,
// by naming attributes they do not have: Unmatchable refuses it.

// Scheme is an identity scheme a scope uses: the identifying attributes it
// declares for a provider's resource type.
type Scheme struct {
	Provider, Type string
	Attributes     []string
}

// Keyed returns planned with the Keys of every change: its identities under
// the base scheme and under every scheme the scopes of env use for its
// type, read from the ownership index in one query.
func Keyed(ctx context.Context, idx store.Index, env string, plan *tfjson.Plan, own Policy, planned []Planned) ([]Planned, error) {
	seen := map[string]bool{}
	var queries []string
	for _, p := range planned {
		if q := store.SchemeIdentity(p.Provider, p.Type); !seen[q] {
			seen[q] = true
			queries = append(queries, q)
		}
	}
	var schemes []Scheme
	if len(queries) > 0 {
		rows, err := idx.Owners(ctx, env, queries)
		if err != nil {
			return nil, err
		}
		schemes = SchemesFrom(rows)
	}
	return WithKeys(plan, planned, own, schemes), nil
}

// SchemesFrom returns the schemes that scheme rows of the ownership index
// name, deduplicated.
func SchemesFrom(rows []store.Owner) []Scheme {
	var out []Scheme
	seen := map[string]bool{}
	for _, r := range rows {
		if r.CreatedBy != store.SchemeCreatedBy || seen[r.Identity+"\x00"+r.Address] {
			continue
		}
		seen[r.Identity+"\x00"+r.Address] = true
		rest, ok := strings.CutPrefix(r.Identity, "scheme|")
		i := strings.LastIndex(rest, "|")
		if !ok || i < 0 || r.Address == "" {
			continue
		}
		out = append(out, Scheme{Provider: rest[:i], Type: rest[i+1:], Attributes: strings.Split(r.Address, ",")})
	}
	return out
}

// WithKeys returns planned with the Keys of every change under the base
// scheme, the scope's own policy (own) and the given schemes, computed from the plan's values: the
// object as it is (before) for anything but a pure create, the object as
// planned (after) for a create or an update.
func WithKeys(plan *tfjson.Plan, planned []Planned, own Policy, schemes []Scheme) []Planned {
	byAddr := map[string]*tfjson.ResourceChange{}
	if plan != nil {
		for _, rc := range plan.ResourceChanges {
			if rc.Mode == tfjson.ManagedResourceMode && rc.Change != nil {
				byAddr[rc.Address] = rc
			}
		}
	}
	out := make([]Planned, len(planned))
	for i, p := range planned {
		rc := byAddr[p.Address]
		if rc == nil {
			out[i] = p
			continue
		}
		pols := []Policy{own.base(), own}
		for _, s := range schemes {
			if s.Provider == p.Provider && s.Type == p.Type {
				pols = append(pols, Policy{Identity: map[string][]string{s.Type: s.Attributes}, AddressOwned: own.AddressOwned, Sensitive: own.Sensitive, HashKey: own.HashKey})
			}
		}
		unknown, _ := rc.Change.AfterUnknown.(map[string]any)
		var keys []string
		for _, pol := range pols {
			// Marked values are hashed as the plan marks them; another scope
			// may have marked every identifying value, so all hashed too
			// when the environment has a key.
			for _, all := range []bool{false, true} {
				if all && pol.HashKey == nil {
					continue
				}
				before, after := pol.values(rc, all)
				if before != nil {
					id, _ := pol.Of(p.Provider, p.Type, p.Address, before, nil, rc.Change.BeforeIdentity)
					keys = append(keys, id)
				}
				if after != nil && !rc.Change.Actions.Delete() {
					id, _ := pol.Of(p.Provider, p.Type, p.Address, after, unknown, rc.Change.AfterIdentity)
					keys = append(keys, id)
				}
			}
		}
		p.Keys = otherKeys(p.Identity, keys)
		out[i] = p
	}
	return out
}

// otherKeys returns keys without "", primary and repeats, sorted.
func otherKeys(primary string, keys []string) []string {
	seen := map[string]bool{primary: true, "": true}
	var out []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// baseIdentity is an object's identity under the base scheme, the one every
// scope of the environment computes alike (pol.base): "" when it has
// neither a provider identity, nor a declared scheme, nor an id.
func (pol Policy) baseIdentity(o Object) string {
	return pol.base().identityOf(o)
}

// AllKeys returns the identity and the keys of a planned change that other
// scopes can own: its address identity, if it has one, is left out.
func (p Planned) AllKeys() []string {
	return global(append([]string{p.Identity}, p.Keys...))
}

// Unmatchable refuses a policy that would record objects the scope owns
// under their address alone: its identifying attributes for their type are
// absent or null on them, so no other scope could match them under the
// scope's scheme (typically a misspelt attribute, or a policy change to an
// attribute the objects do not set). prev is the scope's latest receipt,
// objects its current state; objects the plan deletes are left out.
func Unmatchable(prev *receipt.Receipt, objects []Object, pol Policy, planned []Planned) error {
	if prev == nil {
		return nil
	}
	owned := map[string]bool{}
	for _, e := range prev.Ledger {
		if e.CreatedBy != receipt.CreatedByIntent {
			owned[e.Address] = true
		}
	}
	deleted := map[string]bool{}
	for _, p := range planned {
		for _, a := range p.Actions {
			if a == string(tfjson.ActionDelete) && !p.Creates() {
				deleted[p.Address] = true
			}
		}
	}
	var lines []string
	var addrs []string
	for _, o := range objects {
		names := pol.SchemeOf(o.Type)
		if !owned[o.Address] || deleted[o.Address] || len(names) == 0 {
			continue
		}
		if id := pol.identityOf(o); id == "" {
			_, missing := pol.Of(o.Provider, o.Type, o.Address, o.Attributes, nil, o.ProviderIdentity)
			lines = append(lines, fmt.Sprintf("%s has no value for %s", o.Address, strings.Join(missing, ", ")))
			addrs = append(addrs, o.Address)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return errcode.New(errcode.IdentityPolicy, "the identity scheme (the sponson_scope policy, or sponson.hcl's identity) names attributes that %d object(s) this scope owns do not have, so their ownership could not be matched; nothing was written:\n  %s", len(lines), strings.Join(lines, "\n  ")).
		With("addresses", addrs)
}
