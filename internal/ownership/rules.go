package ownership

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// This file holds the rest of the sponson_scope policy: which planned changes
// write production (docs/design.md §2.11 "Approval") and which resources are entries
// of a shared parent object (docs/design.md §2.10 "Parent lease"). The wrapper reads both from the plan, like the identity
// policy, and decides with the pure functions below before the engine
// writes anything.

// ProductionEnvironment is the environment whose runs always need an
// approver, whatever the policy says.
const ProductionEnvironment = "production"

// ParentLeaseScopePrefix starts the store scope of every parent lease
// (store.ParentScopePrefix). Real scopes are pr-<n>, main and
// branch-<name>, so a parent lease never shares a key with a scope, and
// the listers of an environment's scopes leave these out
// (store.ListScopes).
const ParentLeaseScopePrefix = store.ParentScopePrefix

// Rules is the production and parent policy of a configuration's
// sponson_scope resource.
type Rules struct {
	Production ProductionRules
	// Parents maps a resource type to the attributes whose values name the
	// parent object its resources are entries of.
	Parents map[string][]string
	// StateOnly are resource types that keep nothing outside the state,
	// besides the table StateOnly knows.
	StateOnly []string
}

// ProductionRules mark planned changes as production writes. A change that
// matches any rule is one; no rule at all marks nothing.
type ProductionRules struct {
	// Types are resource types, matched exactly.
	Types []string
	// Addresses are glob patterns matched against the whole resource
	// address (and its previous address, for a moved resource): `*` matches
	// any run of characters, `.` and `[` included, `?` matches one
	// character, and every other character matches itself.
	Addresses []string
	// Attributes maps an attribute, or a dotted path into nested maps and
	// objects such as `tags.Environment`, to the value that marks the
	// object as production. Strings compare as they are; numbers and bools
	// compare by their JSON text ("true", "3").
	Attributes map[string]string
	// Approvers is the allow-list of approvers; nil allows any name.
	Approvers []string
}

// ProductionHit is one planned change that writes production, with the rule
// that says so.
type ProductionHit struct {
	Address string
	Type    string
	Actions []string
	// Rule is the first matching rule, for messages: `type "vercel_project"`,
	// `address "module.prod.*"` or `attribute environment = "production"`.
	Rule string
}

// Parent is a shared parent object whose entries a plan changes.
type Parent struct {
	// Key names the object, and so its lease:
	//
	//	<provider type>|<attr>=<value>[,<attr>=<value>...]
	//
	// with the attributes of the policy sorted by name, string values as
	// they are and other values as JSON, for example
	// `vercel|project_id=prj_123` or `fixture|list=allow-urls`. The
	// resource type of the entries is not part of it: two entry types with
	// the same parent attributes lock the same object. The key is also the
	// `name` of a sponson_lease that takes the same lease without the
	// wrapper. Two different objects whose keys coincide (a value holding
	// `,` or `=`) share one lease, which only serialises them.
	Key string
	// Name describes the object for people: the attributes and the types
	// of its entries in the plan.
	Name string
	// Children are the addresses of the planned changes under it, sorted.
	Children []string
}

// UnresolvedParent is a planned change whose parent object is not known at
// plan time: a parent attribute is unknown or null, typically because the
// parent itself is created by the same plan.
type UnresolvedParent struct {
	Address string
	Type    string
	// Unknown lists the parent attributes without a known value.
	Unknown []string
}

// RulesFromPlan reads the production and parent policy from the planned
// values of the plan's sponson_scope resources, or their prior values when
// the scope is destroyed or the plan leaves it out (ScopeValues). Several sponson_scope resources add up: their
// rules and allow-lists are joined. The zero Rules (no production rule, no
// parent) is the result when there is none.
func RulesFromPlan(p *tfjson.Plan) Rules {
	r := Rules{Parents: map[string][]string{}}
	for _, vals := range ScopeValues(p) {
		if prod, ok := vals["production"].(map[string]any); ok {
			r.Production.Types = append(r.Production.Types, stringList(prod["types"])...)
			r.Production.Addresses = append(r.Production.Addresses, stringList(prod["addresses"])...)
			if attrs, ok := prod["attributes"].(map[string]any); ok {
				if r.Production.Attributes == nil {
					r.Production.Attributes = map[string]string{}
				}
				for k, v := range attrs {
					if s, ok := v.(string); ok {
						r.Production.Attributes[k] = s
					}
				}
			}
			if list, ok := prod["approvers"].([]any); ok {
				r.Production.Approvers = append(r.Production.Approvers, stringList(list)...)
				if r.Production.Approvers == nil {
					r.Production.Approvers = []string{} // declared empty: nobody may approve
				}
			}
		}
		r.StateOnly = append(r.StateOnly, stringList(vals["state_only"])...)
		parents, _ := vals["parents"].(map[string]any)
		for typ, attrs := range parents {
			r.Parents[typ] = append(r.Parents[typ], stringList(attrs)...)
		}
	}
	return r
}

// stringList returns the strings of a JSON list.
func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// NeedsApproval reports whether a run in environment whose plan has the
// given production hits needs a named approver: every run in the
// production environment does, and any run whose plan writes production.
func NeedsApproval(environment string, hits []ProductionHit) bool {
	return environment == ProductionEnvironment || len(hits) > 0
}

// Approved checks a run's approver (--approved-by or SPONSON_APPROVED_BY)
// and returns the name to record in the receipt: approver without
// surrounding space. An approver that is empty or only space is none, and
// ENV_NOT_APPROVED; so is a name outside the policy's allow-list, when it
// has one.
func (r Rules) Approved(approver string) (string, error) {
	name := strings.TrimSpace(approver)
	if name == "" {
		err := errcode.New(errcode.EnvNotApproved, "this run can write production and names no approver")
		if r.Production.Approvers != nil {
			err = err.WithHint(fmt.Sprintf("Pass --approved-by NAME or set SPONSON_APPROVED_BY, with one of the approvers the sponson_scope policy allows: %s.",
				strings.Join(r.Production.Approvers, ", ")))
		}
		return "", err
	}
	if r.Production.Approvers == nil {
		return name, nil
	}
	for _, a := range r.Production.Approvers {
		if strings.TrimSpace(a) == name {
			return name, nil
		}
	}
	hint := fmt.Sprintf("Name one of the allowed approvers with --approved-by: %s.", strings.Join(r.Production.Approvers, ", "))
	if len(r.Production.Approvers) == 0 {
		hint = "The sponson_scope policy allows no approvers at all; add names to its production approvers."
	}
	return "", errcode.New(errcode.EnvNotApproved, "%q is not an approver the sponson_scope policy allows", name).
		WithHint(hint).
		With("approver", name).With("approvers", append([]string(nil), r.Production.Approvers...))
}

// ProductionChanges lists the planned changes that write production, sorted
// by address. A change writes when it creates, updates, replaces or deletes
// an object; reads, no-ops and `forget` (which only drops an object from
// the state) do not. Attribute rules look at the values after the change
// for a create, before it for a delete, and at both for an update or a
// replacement: moving an object out of production writes production too. An
// attribute whose planned value is unknown counts, because the apply may
// make it production.
func (r Rules) ProductionChanges(plan *tfjson.Plan) []ProductionHit {
	var out []ProductionHit
	if plan == nil {
		return out
	}
	attrNames := make([]string, 0, len(r.Production.Attributes))
	for k := range r.Production.Attributes {
		attrNames = append(attrNames, k)
	}
	sort.Strings(attrNames)
	for _, rc := range plan.ResourceChanges {
		before, after, unknown, ok := writeValues(rc)
		if !ok {
			continue
		}
		rule := r.Production.match(rc, attrNames, before, after, unknown)
		if rule == "" {
			continue
		}
		hit := ProductionHit{Address: rc.Address, Type: rc.Type, Rule: rule}
		for _, a := range rc.Change.Actions {
			hit.Actions = append(hit.Actions, string(a))
		}
		out = append(out, hit)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// match returns the first rule that marks rc as production, "" when none
// does.
func (pr ProductionRules) match(rc *tfjson.ResourceChange, attrNames []string, before, after map[string]any, unknown any) string {
	for _, t := range pr.Types {
		if rc.Type == t {
			return fmt.Sprintf("type %q", t)
		}
	}
	for _, pat := range pr.Addresses {
		if Glob(pat, rc.Address) || (rc.PreviousAddress != "" && Glob(pat, rc.PreviousAddress)) {
			return fmt.Sprintf("address %q", pat)
		}
	}
	for _, name := range attrNames {
		want := pr.Attributes[name]
		if before != nil && attrEquals(before, name, want) {
			return fmt.Sprintf("attribute %s = %q", name, want)
		}
		if after != nil {
			if attrEquals(after, name, want) {
				return fmt.Sprintf("attribute %s = %q", name, want)
			}
			if attrUnknown(unknown, name) {
				return fmt.Sprintf("attribute %s = %q (unknown until apply)", name, want)
			}
		}
	}
	return ""
}

// writeValues returns the values the policy looks at for a planned change of
// a managed resource that writes: before for a delete, after (with its
// unknown marks) for a create, both for an update or a replacement. ok is
// false for anything that does not write.
func writeValues(rc *tfjson.ResourceChange) (before, after map[string]any, unknown any, ok bool) {
	if rc == nil || rc.Mode != tfjson.ManagedResourceMode || rc.Change == nil {
		return nil, nil, nil, false
	}
	var creates, updates, deletes bool
	for _, a := range rc.Change.Actions {
		switch a {
		case tfjson.ActionCreate:
			creates = true
		case tfjson.ActionUpdate:
			updates = true
		case tfjson.ActionDelete:
			deletes = true
		}
	}
	if !creates && !updates && !deletes {
		return nil, nil, nil, false
	}
	if deletes || updates {
		before, _ = rc.Change.Before.(map[string]any)
		if before == nil {
			before = map[string]any{}
		}
	}
	if creates || updates {
		after, _ = rc.Change.After.(map[string]any)
		if after == nil {
			after = map[string]any{}
		}
		unknown = rc.Change.AfterUnknown
	}
	return before, after, unknown, true
}

// lookup finds an attribute by name, then by a dotted path into nested maps
// and objects. present is false when the path leads nowhere.
func lookup(vals map[string]any, name string) (v any, present bool) {
	if v, ok := vals[name]; ok {
		return v, true
	}
	var cur any = vals
	for _, seg := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// attrEquals reports whether the attribute name of vals has the value want.
func attrEquals(vals map[string]any, name, want string) bool {
	v, ok := lookup(vals, name)
	if !ok || v == nil {
		return false
	}
	if s, ok := v.(string); ok {
		return s == want
	}
	switch v.(type) {
	case bool, float64, int, int64:
		return canonical(v) == want
	}
	return false
}

// attrUnknown reports whether the engine marks the attribute name, or an
// object it lies in, as unknown until apply.
func attrUnknown(unknown any, name string) bool {
	if b, ok := unknown.(bool); ok {
		return b
	}
	m, ok := unknown.(map[string]any)
	if !ok {
		return false
	}
	if b, ok := m[name].(bool); ok {
		return b
	}
	var cur any = m
	for _, seg := range strings.Split(name, ".") {
		switch c := cur.(type) {
		case bool:
			return c
		case map[string]any:
			cur = c[seg]
		default:
			return false
		}
	}
	b, _ := cur.(bool)
	return b
}

// Glob reports whether s matches pattern: `*` matches any run of characters
// (`.`, `[` and `/` included), `?` matches exactly one character, and every
// other character matches itself. Unlike path.Match it gives `[` no
// meaning, because resource addresses contain it (`aws_instance.web[0]`,
// `module.app["prod"]`).
func Glob(pattern, s string) bool {
	// Iterative matching with backtracking to the last star: linear in
	// practice, and no recursion on hostile patterns.
	p, i := []rune(pattern), []rune(s)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(i) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == i[si]) && p[pi] != '*':
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// ParentsOf returns the parent objects whose entries the plan creates,
// updates, replaces or deletes, deduplicated and sorted by Key: the order in
// which a run takes their leases, the same in every run, so that two runs
// never each hold a lease the other waits for. An entry whose parent
// attribute changes counts under both parents, the one it leaves and the one
// it joins. Entries whose parent is not known at plan time are left out;
// UnresolvedParents lists them.
func (r Rules) ParentsOf(plan *tfjson.Plan) []Parent {
	parents, _ := r.parents(plan)
	return parents
}

// UnresolvedParents lists the planned changes of entry types whose parent is
// not known at plan time (an attribute unknown until apply, or null),
// sorted by address. Their parent is usually created by the same plan, so
// no other run writes it yet; the wrapper decides whether to warn or
// refuse.
func (r Rules) UnresolvedParents(plan *tfjson.Plan) []UnresolvedParent {
	_, unresolved := r.parents(plan)
	return unresolved
}

func (r Rules) parents(plan *tfjson.Plan) ([]Parent, []UnresolvedParent) {
	type acc struct {
		Parent
		attrs    string
		types    map[string]bool
		children map[string]bool
	}
	byKey := map[string]*acc{}
	var unresolved []UnresolvedParent
	if plan == nil {
		return nil, nil
	}
	for _, rc := range plan.ResourceChanges {
		names := sortedUnique(r.Parents[rc.Type])
		if len(names) == 0 {
			continue
		}
		before, after, unknown, ok := writeValues(rc)
		if !ok {
			continue
		}
		var keys [][2]string // key, human attributes
		var missing []string
		for _, side := range []struct {
			vals    map[string]any
			unknown any
		}{{before, nil}, {after, unknown}} {
			if side.vals == nil {
				continue
			}
			key, human, miss := parentKey(rc.ProviderName, names, side.vals, side.unknown)
			if len(miss) > 0 {
				missing = append(missing, miss...)
				continue
			}
			keys = append(keys, [2]string{key, human})
		}
		if len(missing) > 0 {
			unresolved = append(unresolved, UnresolvedParent{Address: rc.Address, Type: rc.Type, Unknown: sortedUnique(missing)})
		}
		for _, k := range keys {
			a := byKey[k[0]]
			if a == nil {
				a = &acc{Parent: Parent{Key: k[0]}, attrs: k[1], types: map[string]bool{}, children: map[string]bool{}}
				byKey[k[0]] = a
			}
			a.types[rc.Type] = true
			a.children[rc.Address] = true
		}
	}
	out := make([]Parent, 0, len(byKey))
	for _, a := range byKey {
		p := a.Parent
		p.Children = sortedKeys(a.children)
		p.Name = fmt.Sprintf("%s (parent of %s)", a.attrs, strings.Join(sortedKeys(a.types), ", "))
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	sort.Slice(unresolved, func(i, j int) bool { return unresolved[i].Address < unresolved[j].Address })
	return out, unresolved
}

// parentKey builds the Key of the parent named by the attributes names of
// vals, and its human form; missing lists the attributes without a known
// value.
func parentKey(providerName string, names []string, vals map[string]any, unknown any) (key, human string, missing []string) {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		v, ok := lookup(vals, n)
		if attrUnknown(unknown, n) || !ok || v == nil {
			missing = append(missing, n)
			continue
		}
		s, isString := v.(string)
		if !isString {
			s = canonical(v)
		}
		parts = append(parts, n+"="+s)
	}
	if len(missing) > 0 {
		return "", "", missing
	}
	human = strings.Join(parts, ",")
	return ProviderType(providerName) + "|" + human, human, nil
}

// ProviderType returns the type name of a provider source address, its last
// segment: "vercel" for registry.terraform.io/vercel/vercel. The host and
// namespace are left out of parent keys so that a configuration run with
// OpenTofu and one run with Terraform lock the same object.
func ProviderType(source string) string {
	if i := strings.LastIndex(source, "/"); i >= 0 {
		return source[i+1:]
	}
	return source
}

// ParentLeaseScope returns the store scope of the lease on the parent object
// named key (a Parent's Key, or a sponson_lease's name): ParentLeaseScopePrefix
// and the first 16 bytes of the SHA-256 of key in hex, 32 characters. A
// hash, because a key holds characters a store scope may not (paths and ref
// names are built from scopes, docs/design.md §9); a prefix real scopes never
// have, so a parent lease never shares a key with a scope.
func ParentLeaseScope(key string) string {
	sum := sha256.Sum256([]byte(key))
	return ParentLeaseScopePrefix + hex.EncodeToString(sum[:16])
}

func sortedUnique(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, s := range in {
		seen[s] = true
	}
	return sortedKeys(seen)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
