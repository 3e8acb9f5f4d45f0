// Package ownership decides who owns what: the identity of every resource a
// plan touches, the ledger a run leaves, and the check that refuses a plan
// changing a resource another scope of the same environment owns
// (OWNED_BY_OTHER_SCOPE, DESIGN.md §2 "Foreign").
//
// An identity names a real object independently of any resource address, so
// that `moved` blocks and renames keep ownership and two scopes that name
// the same object collide even with different addresses:
//
//	<provider source>|<type>|<attr>=<json value>[,<attr>=<json value>...]
//
// The identifying attributes of a type are declared in the sponson_scope
// resource's `identity` policy; where the engine's JSON exposes the
// provider's own resource identity, that is used; otherwise the `id` of an
// existing object.
package ownership

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

// ScopeResourceType is the resource whose planned values carry the policy.
const ScopeResourceType = "sponson_scope"

// Policy is what a configuration's sponson_scope resource declares.
type Policy struct {
	// Identity maps a resource type to its identifying attributes.
	Identity map[string][]string
}

// PolicyFromPlan reads the policy from the planned values of the plan's
// sponson_scope resource (the zero Policy when there is none).
func PolicyFromPlan(p *tfjson.Plan) Policy {
	pol := Policy{Identity: map[string][]string{}}
	if p == nil {
		return pol
	}
	for _, rc := range p.ResourceChanges {
		if rc.Type != ScopeResourceType || rc.Mode != tfjson.ManagedResourceMode || rc.Change == nil {
			continue
		}
		vals, _ := rc.Change.After.(map[string]any)
		if rc.Change.Actions.Delete() {
			vals, _ = rc.Change.Before.(map[string]any)
		}
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

// Of returns the identity of an object of typ from provider with the given
// attribute values. providerIdentity is the engine's resource identity of
// the object, if it exposes one. unknown lists the identifying attributes
// whose values are not known (yet); the identity is "" then.
func (pol Policy) Of(provider, typ string, attrs map[string]any, unknownAttrs map[string]any, providerIdentity any) (identity string, unknown []string) {
	if names, ok := pol.Identity[typ]; ok && len(names) > 0 {
		parts := make([]string, 0, len(names))
		for _, n := range names {
			if isUnknown(unknownAttrs, n) {
				unknown = append(unknown, n)
				continue
			}
			v, present := attrs[n]
			if !present || v == nil {
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
	if m, ok := providerIdentity.(map[string]any); ok && len(m) > 0 {
		return provider + "|" + typ + "|identity=" + canonical(m), nil
	}
	if isUnknown(unknownAttrs, "id") {
		return "", []string{"id"}
	}
	if id, ok := attrs["id"].(string); ok && id != "" {
		return provider + "|" + typ + "|id=" + canonical(id), nil
	}
	return "", []string{"id"}
}

func isUnknown(unknownAttrs map[string]any, name string) bool {
	b, ok := unknownAttrs[name].(bool)
	return ok && b
}

// canonical renders a value as JSON with sorted keys (encoding/json sorts
// map keys), so equal values give equal identities.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
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

// Identify lists the changes of a plan that write (create, update, replace,
// delete) with their identities. Reads and no-ops are left out: reading a
// foreign resource is allowed.
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
		if a.NoOp() || a.Read() || len(a) == 0 {
			continue
		}
		pl := Planned{Address: rc.Address, PreviousAddress: rc.PreviousAddress, Type: rc.Type, Provider: rc.ProviderName}
		for _, x := range a {
			pl.Actions = append(pl.Actions, string(x))
		}
		if a.Delete() {
			before, _ := rc.Change.Before.(map[string]any)
			pl.Identity, pl.Unknown = pol.Of(rc.ProviderName, rc.Type, before, nil, rc.Change.BeforeIdentity)
		} else {
			after, _ := rc.Change.After.(map[string]any)
			unknown, _ := rc.Change.AfterUnknown.(map[string]any)
			pl.Identity, pl.Unknown = pol.Of(rc.ProviderName, rc.Type, after, unknown, rc.Change.AfterIdentity)
			if pl.Identity == "" && !pl.Creates() {
				// An update in place keeps the object: its identity is the
				// one it had before.
				before, _ := rc.Change.Before.(map[string]any)
				pl.Identity, pl.Unknown = pol.Of(rc.ProviderName, rc.Type, before, nil, rc.Change.BeforeIdentity)
			}
		}
		out = append(out, pl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// IntentIdentity keys an intent whose identity is not known yet: its
// address stands in until the run settles it.
func IntentIdentity(provider, typ, address string) string {
	return provider + "|" + typ + "|intent:" + address
}
