// Package ownership decides who owns what: the identity of every resource a
// plan touches, the ledger a run leaves, and the check that refuses a plan
// changing a resource another scope of the same environment owns
// (OWNED_BY_OTHER_SCOPE, docs/design.md §2.6 "Foreign").
//
// An identity names a real object independently of any resource address, so
// that `moved` blocks and renames keep ownership and two scopes that name
// the same object collide even with different addresses:
//
//	<provider source>|<type>|<attr>=<canonical JSON value>[,...]
//
// The identity scheme of a type is, in this order (docs/design.md §2.3
// "Ledger and identity"): the provider's own resource identity, where the
// engine's JSON exposes one; the scheme the environment declares for the
// type in sponson.hcl; the scheme the sponson_scope resource's `identity`
// policy declares; the object's address within its scope for the types
// whose id is not a global identity (addressOwned); otherwise the `id` of
// an existing object.
//
// Identifying values have one encoding (Normalize); sensitive ones are
// recorded as hmac:<hex> under a key per environment. Every entry is also
// indexed under its base identity (every step but the scope's policy), the
// schemes in use are indexed per type, and Keyed matches each planned change
// under all of them. The declaration the index was built under is the
// record SchemesRecord; a run that finds another re-indexes (scoperun's
// reindex, under MayChangeSchemes).
//
// The checks against the ownership index (docs/design.md §2.5 "Ownership"),
// all OWNED_BY_OTHER_SCOPE: CheckForeign before the engine writes;
// UnderIntentLease, the intent race rule, for a checkpoint whose intents
// have an identity known at plan time; CheckLate after the apply, for
// creates whose identity was unknown at plan time; ForeignOwners for what
// enters a state without a plan (adopt, the settlement's adoption).
package ownership

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// ScopeResourceType is the resource whose planned values carry the policy.
const ScopeResourceType = "sponson_scope"

// Policy is what a configuration's sponson_scope resource declares.
type Policy struct {
	// Identity maps a resource type to its identifying attributes, as the
	// scope's sponson_scope resource declares them.
	Identity map[string][]string
	// Declared maps a resource type to its identifying attributes as the
	// environment declares them (sponson.hcl): every scope of the
	// environment computes them alike, and they win over Identity.
	Declared map[string][]string
	// AddressOwned are the types the environment declares owned by
	// address, beyond the table (Declaration).
	AddressOwned map[string]bool
	// Sensitive maps a resource instance address to the attributes the plan
	// marks sensitive; their identifying values are hashed with HashKey.
	Sensitive map[string]map[string]bool
	// HashKey is the environment's key for sensitive identifying values
	// (HashKeyRecord).
	HashKey []byte
}

// PolicyFromPlan reads the policy from the planned values of the plan's
// sponson_scope resource (the zero Policy when there is none).
func PolicyFromPlan(p *tfjson.Plan) Policy {
	pol := Policy{Identity: map[string][]string{}, Sensitive: sensitiveFromPlan(p)}
	for _, vals := range ScopeValues(p) {
		ids, _ := vals["identity"].(map[string]any)
		for typ, attrs := range ids {
			list, _ := attrs.([]any)
			for _, a := range list {
				if s, ok := a.(string); ok {
					pol.Identity[typ] = append(pol.Identity[typ], s)
				}
			}
		}
	}
	return pol
}

// ScopeValues returns the values of the plan's sponson_scope resources: the
// planned ones, or the prior ones of a scope the plan deletes. A plan that
// leaves them out (-target of something else, -exclude, -refresh-only)
// still runs under the policy they declare: their values then come from the
// plan's prior state, so that a targeted apply computes the same
// identities, approvals and parents as a full one.
func ScopeValues(p *tfjson.Plan) []map[string]any {
	if p == nil {
		return nil
	}
	var out []map[string]any
	planned := map[string]bool{}
	for _, rc := range p.ResourceChanges {
		if rc.Type != ScopeResourceType || rc.Mode != tfjson.ManagedResourceMode || rc.Change == nil {
			continue
		}
		vals, _ := rc.Change.After.(map[string]any)
		if rc.Change.Actions.Delete() {
			vals, _ = rc.Change.Before.(map[string]any)
		}
		planned[rc.Address] = true
		out = append(out, vals)
	}
	if p.PriorState == nil || p.PriorState.Values == nil {
		return out
	}
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		if m == nil {
			return
		}
		for _, r := range m.Resources {
			if r.Type == ScopeResourceType && r.Mode == tfjson.ManagedResourceMode && !planned[r.Address] {
				out = append(out, r.AttributeValues)
			}
		}
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(p.PriorState.Values.RootModule)
	return out
}

// Of returns the identity of the object at address of typ from provider
// with the given attribute values. providerIdentity is the engine's
// resource identity of the object, if it exposes one. unknown lists the
// identifying attributes whose values are not known (yet); the identity is
// "" then.
func (pol Policy) Of(provider, typ, address string, attrs map[string]any, unknownAttrs map[string]any, providerIdentity any) (identity string, unknown []string) {
	if m, ok := providerIdentity.(map[string]any); ok && len(m) > 0 {
		return provider + "|" + typ + "|identity=" + canonical(m), nil
	}
	if names := pol.SchemeOf(typ); len(names) > 0 {
		return byAttributes(provider, typ, names, attrs, unknownAttrs)
	}
	if pol.addressOwned(typ) {
		return store.AddressIdentity(provider, typ, address), nil
	}
	if isUnknown(unknownAttrs, "id") {
		return "", []string{"id"}
	}
	if id, ok := attrs["id"].(string); ok && id != "" {
		// A sponson_scope's id is environment/scope, which the same scope
		// of another stack has too: its stack is part of what it is. One
		// written before stacks has none, and keeps its identity.
		if stack, ok := attrs["stack"].(string); typ == ScopeResourceType && ok && stack != "" {
			return provider + "|" + typ + "|id=" + canonical(id) + ",stack=" + canonical(stack), nil
		}
		return provider + "|" + typ + "|id=" + canonical(id), nil
	}
	return "", []string{"id"}
}

// SchemeOf returns the identifying attributes declared for typ: the
// environment's, else the scope's policy's; nil for none.
func (pol Policy) SchemeOf(typ string) []string {
	if names := pol.Declared[typ]; len(names) > 0 {
		return names
	}
	return pol.Identity[typ]
}

// base is the policy every scope of the environment shares: the declared
// schemes without the scope's own policy.
func (pol Policy) base() Policy {
	return Policy{Declared: pol.Declared, AddressOwned: pol.AddressOwned, Sensitive: pol.Sensitive, HashKey: pol.HashKey}
}

// byAttributes is the identity under a scheme of attribute names.
func byAttributes(provider, typ string, names []string, attrs, unknownAttrs map[string]any) (identity string, unknown []string) {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		if isUnknown(unknownAttrs, n) {
			unknown = append(unknown, n)
			continue
		}
		v, present := attrs[n]
		// Normalized first: a state's null of a dynamically typed
		// attribute is a wrapper around null.
		if v = Normalize(v); !present || v == nil {
			unknown = append(unknown, n)
			continue
		}
		parts = append(parts, n+"="+canonical(v))
	}
	if len(unknown) > 0 {
		return "", unknown
	}
	return provider + "|" + typ + "|" + strings.Join(parts, ","), nil
}

func isUnknown(unknownAttrs map[string]any, name string) bool {
	b, ok := unknownAttrs[name].(bool)
	return ok && b
}

// canonical renders an identifying value in its one canonical form, JSON
// with sorted keys (encoding/json sorts map keys) of the value Normalize
// returns, so that equal values give equal identities whatever their
// source: a plan, a state or an import (issue 12 item 2).
func canonical(v any) string {
	if s, ok := v.(sealed); ok {
		return string(s)
	}
	b, err := json.Marshal(Normalize(v))
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// Normalize returns a decoded JSON value the way a plan shows it. A state
// stores the value of a dynamically typed attribute (terraform_data's
// input, for one) together with its type, as {"value": ..., "type": ...},
// where the plan JSON shows the bare value; such a wrapper is unwrapped at
// every depth, since an object attribute can be dynamically typed too. A
// map that merely looks like a wrapper (exactly the keys "type" and
// "value", with a valid type) is unwrapped wherever it comes from, so both
// sources still agree. Numbers given as json.Number become float64, as
// encoding/json decodes them elsewhere.
func Normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if inner, ok := dynamicValue(x); ok {
			return Normalize(inner)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Normalize(e)
		}
		// An object attribute named "type" may be dynamic itself: the
		// map is a wrapper once its parts are normalized.
		if inner, ok := dynamicValue(out); ok {
			return Normalize(inner)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Normalize(e)
		}
		return out
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	}
	return v
}

// dynamicValue returns the value of a state's wrapper of a dynamically
// typed value: a map of exactly "value" and "type", whose type is a type
// in the engine's JSON type syntax.
func dynamicValue(m map[string]any) (any, bool) {
	t, hasType := m["type"]
	v, hasValue := m["value"]
	if len(m) != 2 || !hasType || !hasValue {
		return nil, false
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, false
	}
	if _, err := ctyjson.UnmarshalType(b); err != nil {
		return nil, false
	}
	return v, true
}

// Planned is one planned change of a managed resource, with its identity.
type Planned struct {
	Address         string
	PreviousAddress string
	Type            string
	Provider        string
	Actions         []string
	// Identity is "" when an identifying attribute is unknown at plan time
	// (Unknown names them); the change is then checked after the apply.
	Identity string
	Unknown  []string
	// Imports is set when the change imports an existing object.
	Imports bool
	// Keys are the change's further identities: under the base scheme and
	// under the other schemes in use in the environment (Keyed). The
	// foreign check and the race rule match every one of them.
	Keys []string
	// Scheme lists the identifying attributes of the scope's policy that
	// Identity was computed from; empty for the base scheme.
	Scheme []string
}

// Creates reports whether the change creates an object (create or replace).
func (p Planned) Creates() bool {
	for _, a := range p.Actions {
		if a == string(tfjson.ActionCreate) {
			return true
		}
	}
	return false
}

// ActionImport is the action Identify adds to a planned import: taking an
// existing object into the scope's state is a change of ownership, also
// when the engine plans no change to the object itself (issue 12 item 3).
const ActionImport = "import"

// Identify lists the changes of a plan that write (create, update, replace,
// delete, import) with their identities. Reads and no-ops are left out:
// reading a foreign resource is allowed. An import is kept whatever its
// action, no-op included.
func Identify(p *tfjson.Plan, pol Policy) []Planned {
	var out []Planned
	if p == nil {
		return out
	}
	for _, rc := range p.ResourceChanges {
		if rc.Mode != tfjson.ManagedResourceMode || rc.Change == nil {
			continue
		}
		a := rc.Change.Actions
		imports := rc.Change.Importing != nil
		if (a.NoOp() && !imports) || a.Read() || len(a) == 0 {
			continue
		}
		pl := Planned{Address: rc.Address, PreviousAddress: rc.PreviousAddress, Type: rc.Type, Provider: rc.ProviderName, Imports: imports}
		if imports {
			pl.Actions = append(pl.Actions, ActionImport)
		}
		for _, x := range a {
			if x != tfjson.ActionNoop {
				pl.Actions = append(pl.Actions, string(x))
			}
		}
		if names := pol.SchemeOf(rc.Type); len(names) > 0 {
			pl.Scheme = append([]string(nil), names...)
		}
		before, after := pol.values(rc, false)
		if a.Delete() {
			pl.Identity, pl.Unknown = pol.Of(rc.ProviderName, rc.Type, rc.Address, before, nil, rc.Change.BeforeIdentity)
		} else {
			unknown, _ := rc.Change.AfterUnknown.(map[string]any)
			pl.Identity, pl.Unknown = pol.Of(rc.ProviderName, rc.Type, rc.Address, after, unknown, rc.Change.AfterIdentity)
			if pl.Identity == "" && !pl.Creates() {
				// An update in place keeps the object: its identity is the
				// one it had before.
				pl.Identity, pl.Unknown = pol.Of(rc.ProviderName, rc.Type, rc.Address, before, nil, rc.Change.BeforeIdentity)
			}
		}
		out = append(out, pl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// values returns the values of a planned change before and after it, with
// the identifying values the plan marks sensitive (all of them with all)
// replaced by their keyed hash.
func (pol Policy) values(rc *tfjson.ResourceChange, all bool) (before, after map[string]any) {
	before, _ = rc.Change.Before.(map[string]any)
	after, _ = rc.Change.After.(map[string]any)
	if before != nil {
		before = pol.seal(rc.Type, before, topSensitive(rc.Change.BeforeSensitive), all)
	}
	if after != nil {
		after = pol.seal(rc.Type, after, topSensitive(rc.Change.AfterSensitive), all)
	}
	return before, after
}

// IntentIdentity keys an intent whose identity is not known yet: its
// address stands in until the run settles it.
func IntentIdentity(provider, typ, address string) string {
	return provider + "|" + typ + "|intent:" + address
}
