// Package applyorder reads, from a plan's configuration, which planned
// changes the engine completes before it starts each other one: the order
// that lets a run that stopped tell a create that cannot have started from
// one that may have (docs/design.md §2.4 "Intent").
//
// The engine starts a resource's change only once every node it depends on
// is done, and a node's completion is reported (apply_complete) before the
// node is done. The dependencies are the references of the resource block
// (its arguments, nested blocks, count, for_each and provisioners) and its
// depends_on, those of the module calls it sits in (their depends_on, count
// and for_each), followed through module inputs (var.x is the call's
// argument in the parent) and module outputs (module.m.out is the output's
// expression in the child), and through data sources read during the apply.
//
// Waits is deliberately a subset of what the engine waits for, never more:
// a dependency it cannot see is left out (locals, which the plan's JSON
// does not describe; provider configurations; resources without a change,
// which have no node in the engine's apply graph), because a wait it made
// up would settle a create as never started when it may have been.
package applyorder

import (
	"slices"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

// Waits returns, for every planned change of p that creates or updates an
// object (create, update, replace) and every data source the engine reads
// during the apply, the addresses of the planned creates and updates it
// waits for. Changes without waits are left out.
func Waits(p *tfjson.Plan) map[string][]string {
	if p == nil || p.Config == nil || p.Config.RootModule == nil {
		return nil
	}
	g := newGraph(p)
	out := map[string][]string{}
	for _, c := range g.changes {
		set := map[string]bool{}
		g.resourceRefs(c, set, map[string]bool{})
		delete(set, c.address)
		if len(set) == 0 {
			continue
		}
		waits := make([]string, 0, len(set))
		for a := range set {
			waits = append(waits, a)
		}
		slices.Sort(waits)
		out[c.address] = waits
	}
	return out
}

// Provisioned returns the planned creates and updates of p whose resource
// block has provisioners (the plan's configuration does not say when each
// runs): a create of them that a stopped run may have started runs them
// again (docs/design.md §2.4).
func Provisioned(p *tfjson.Plan) map[string]bool {
	if p == nil || p.Config == nil || p.Config.RootModule == nil {
		return nil
	}
	g := newGraph(p)
	out := map[string]bool{}
	for _, c := range g.changes {
		if r := g.block(c); r != nil && len(r.Provisioners) > 0 {
			out[c.address] = true
		}
	}
	return out
}

// block is the resource block of change c, nil if the configuration lacks
// it.
func (g *graph) block(c *change) *tfjson.ConfigResource {
	mod := g.module(c.module)
	if mod == nil {
		return nil
	}
	var res *tfjson.ConfigResource
	for _, r := range mod.Resources {
		mode := r.Mode == tfjson.DataResourceMode
		if r.Type+"."+r.Name == c.res && mode == c.data {
			res = r
		}
	}
	return res
}

// change is one planned change the engine has a node for.
type change struct {
	address string
	module  string // the module instance, "" for the root: module.a[0].module.b
	data    bool
	res     string // type.name
	key     string // the instance key as written in addresses: [0], ["x"], or ""
	// waitable is set for a change a dependent waits for: a create or an
	// update (a data read is followed through instead, see Waits).
	waitable bool
}

type graph struct {
	root    *tfjson.ConfigModule
	changes []*change
}

func newGraph(p *tfjson.Plan) *graph {
	g := &graph{root: p.Config.RootModule}
	for _, rc := range p.ResourceChanges {
		if rc.Change == nil || rc.DeposedKey != "" {
			continue
		}
		acts := rc.Change.Actions
		c := &change{address: rc.Address, module: rc.ModuleAddress, res: rc.Type + "." + rc.Name}
		switch {
		case rc.Mode == tfjson.DataResourceMode && acts.Read():
			c.data = true
		case rc.Mode == tfjson.ManagedResourceMode && (acts.Create() || acts.Update() || acts.Replace()):
			c.waitable = true
		default:
			continue
		}
		prefix := rc.Address
		if c.module != "" {
			prefix = strings.TrimPrefix(prefix, c.module+".")
		}
		prefix = strings.TrimPrefix(prefix, "data.")
		c.key = strings.TrimPrefix(prefix, c.res)
		g.changes = append(g.changes, c)
	}
	return g
}

// resourceRefs adds to set what change c waits for: the references of its
// resource block and of the module calls around it.
func (g *graph) resourceRefs(c *change, set, seen map[string]bool) {
	res := g.block(c)
	if res == nil {
		return
	}
	for _, ref := range blockRefs(res) {
		g.resolve(c.module, ref, false, set, seen)
	}
	for _, d := range res.DependsOn {
		g.resolve(c.module, d, true, set, seen)
	}
	g.callRefs(c.module, set, seen)
}

// callRefs adds what every module call around the module instance mod
// waits for: its depends_on, count and for_each, in its parent.
func (g *graph) callRefs(mod string, set, seen map[string]bool) {
	for mod != "" {
		parent, name := splitLast(mod)
		call := g.call(parent, name)
		if call == nil {
			return
		}
		for _, ref := range exprRefs(call.CountExpression, call.ForEachExpression) {
			g.resolve(parent, ref, false, set, seen)
		}
		for _, d := range call.DependsOn {
			g.resolve(parent, d, true, set, seen)
		}
		mod = parent
	}
}

// resolve adds what the reference ref, made in module instance mod, makes
// the engine wait for. dependsOn says ref is a depends_on entry: a module
// there stands for every change inside it, in an expression for its
// outputs.
func (g *graph) resolve(mod, ref string, dependsOn bool, set, seen map[string]bool) {
	visit := mod + "\x00" + ref + "\x00" + map[bool]string{true: "d"}[dependsOn]
	if seen[visit] {
		return
	}
	seen[visit] = true
	parts := splitRef(ref)
	if len(parts) < 2 {
		return
	}
	switch parts[0] {
	case "var":
		g.input(mod, parts[1], set, seen)
	case "module":
		g.moduleRef(mod, parts, dependsOn, set, seen)
	case "data":
		if len(parts) < 3 {
			return
		}
		name, key := splitKey(parts[2])
		for _, c := range g.changes {
			if c.data && c.module == mod && c.res == parts[1]+"."+name && (key == "" || key == c.key) {
				// A data source read during the apply: its node waits for
				// what it references, and the dependent for it.
				g.resourceRefs(c, set, seen)
			}
		}
	case "local", "each", "count", "self", "path", "terraform":
	default:
		name, key := splitKey(parts[1])
		for _, c := range g.changes {
			if c.waitable && c.module == mod && c.res == parts[0]+"."+name && (key == "" || key == c.key) {
				set[c.address] = true
			}
		}
	}
}

// input adds what input variable name of module instance mod stands for:
// its call's argument, in the parent.
func (g *graph) input(mod, name string, set, seen map[string]bool) {
	if mod == "" {
		return
	}
	parent, call := splitLast(mod)
	c := g.call(parent, call)
	if c == nil {
		return
	}
	for _, r := range exprRefs(c.Expressions[name]) {
		g.resolve(parent, r, false, set, seen)
	}
}

// moduleRef adds what a reference to a module call made in mod waits for:
// module.m.out its output, module.m all its outputs, and in depends_on
// every change inside it.
func (g *graph) moduleRef(mod string, parts []string, dependsOn bool, set, seen map[string]bool) {
	name, key := splitKey(parts[1])
	for _, inst := range g.instances(mod, name, key) {
		switch {
		case dependsOn:
			for _, c := range g.changes {
				if c.waitable && within(c.module, inst) {
					set[c.address] = true
				}
			}
		case len(parts) >= 3:
			g.output(inst, parts[2], set, seen)
		default:
			if m := g.module(inst); m != nil {
				for out := range m.Outputs {
					g.output(inst, out, set, seen)
				}
			}
		}
	}
}

// output adds what output out of module instance inst waits for.
func (g *graph) output(inst, out string, set, seen map[string]bool) {
	m := g.module(inst)
	if m == nil || m.Outputs[out] == nil {
		return
	}
	o := m.Outputs[out]
	for _, r := range exprRefs(o.Expression) {
		g.resolve(inst, r, false, set, seen)
	}
	for _, d := range o.DependsOn {
		g.resolve(inst, d, true, set, seen)
	}
}

// instances are the instances of module call name in mod: the one key
// given, or those the plan has changes in (an instance without changes
// adds nothing to wait for but through its outputs, and then only
// references with a key reach it), or the single instance of a call
// without count or for_each.
func (g *graph) instances(mod, name, key string) []string {
	base := "module." + name
	if mod != "" {
		base = mod + "." + base
	}
	if key != "" {
		return []string{base + key}
	}
	call := g.call(mod, name)
	if call == nil {
		return nil
	}
	if call.CountExpression == nil && call.ForEachExpression == nil {
		return []string{base}
	}
	found := map[string]bool{}
	for _, c := range g.changes {
		if !strings.HasPrefix(c.module, base+"[") {
			continue
		}
		rest := c.module[len(base):]
		if k := keyLength(rest); k > 0 {
			found[base+rest[:k]] = true
		}
	}
	out := make([]string, 0, len(found))
	for inst := range found {
		out = append(out, inst)
	}
	slices.Sort(out)
	return out
}

// module returns the configuration of module instance inst.
func (g *graph) module(inst string) *tfjson.ConfigModule {
	m := g.root
	for _, seg := range splitModule(inst) {
		call := m.ModuleCalls[seg]
		if call == nil || call.Module == nil {
			return nil
		}
		m = call.Module
	}
	return m
}

// call returns module call name of module instance mod.
func (g *graph) call(mod, name string) *tfjson.ModuleCall {
	m := g.module(mod)
	if m == nil {
		return nil
	}
	return m.ModuleCalls[name]
}

// within reports whether module instance mod is inst or inside it.
func within(mod, inst string) bool {
	return mod == inst || strings.HasPrefix(mod, inst+".")
}

// blockRefs are the references of a resource block: its arguments and
// nested blocks, count, for_each and provisioners.
func blockRefs(r *tfjson.ConfigResource) []string {
	refs := exprRefs(r.CountExpression, r.ForEachExpression)
	refs = append(refs, mapRefs(r.Expressions)...)
	for _, p := range r.Provisioners {
		refs = append(refs, mapRefs(p.Expressions)...)
	}
	return refs
}

func mapRefs(m map[string]*tfjson.Expression) []string {
	var out []string
	for _, e := range m {
		out = append(out, exprRefs(e)...)
	}
	return out
}

// exprRefs are the references of expressions, without the shorter forms
// the plan lists beside a longer one (terraform_data.a[0].id comes with
// terraform_data.a[0] and terraform_data.a, module.m.out with module.m):
// the engine waits for what the longest form names, which may be less
// than the shorter ones stand for.
func exprRefs(es ...*tfjson.Expression) []string {
	var out []string
	for _, e := range es {
		if e == nil || e.ExpressionData == nil {
			continue
		}
		for _, r := range e.References {
			longer := false
			for _, o := range e.References {
				if len(o) > len(r) && strings.HasPrefix(o, r) && (o[len(r)] == '.' || o[len(r)] == '[') {
					longer = true
				}
			}
			if !longer {
				out = append(out, r)
			}
		}
		for _, block := range e.NestedBlocks {
			out = append(out, mapRefs(block)...)
		}
	}
	return out
}

// splitRef splits a reference at its dots, keeping an index with the name
// before it: module.m["a.b"].out is module, m["a.b"], out.
func splitRef(ref string) []string {
	var parts []string
	start, depth, quoted := 0, 0, false
	for i := 0; i < len(ref); i++ {
		switch ch := ref[i]; {
		case quoted && ch == '\\':
			i++
		case ch == '"':
			quoted = !quoted
		case quoted:
		case ch == '[':
			depth++
		case ch == ']':
			depth--
		case ch == '.' && depth == 0:
			parts = append(parts, ref[start:i])
			start = i + 1
		}
	}
	return append(parts, ref[start:])
}

// splitKey splits name[key] into name and [key].
func splitKey(s string) (name, key string) {
	if i := strings.IndexByte(s, '['); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// keyLength is the length of the instance key that s starts with ([0],
// ["x"]), 0 if none.
func keyLength(s string) int {
	if s == "" || s[0] != '[' {
		return 0
	}
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == ']':
			return i + 1
		}
	}
	return 0
}

// splitModule returns the call names of a module instance address:
// module.a[0].module.b is a, b.
func splitModule(inst string) []string {
	var out []string
	parts := splitRef(inst)
	for i := 0; i+1 < len(parts); i += 2 {
		name, _ := splitKey(parts[i+1])
		out = append(out, name)
	}
	return out
}

// splitLast splits a module instance into its parent and its call's name:
// module.a[0].module.b is module.a[0] and b.
func splitLast(inst string) (parent, name string) {
	parts := splitRef(inst)
	if len(parts) < 2 {
		return "", ""
	}
	name, _ = splitKey(parts[len(parts)-1])
	return strings.Join(parts[:len(parts)-2], "."), name
}
