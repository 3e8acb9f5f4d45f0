package applyorder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"
	"pgregory.net/rapid"
)

// world is a generated configuration: modules (a root and children, each
// called once, with count or with for_each), resources in each module with
// their own expansion, and dependencies of every kind Waits reads. It
// renders itself as the plan JSON the engine writes, and it knows the
// dependencies directly, instance by instance: the model Waits is checked
// against.
type world struct {
	mods []*mod
	res  []*res
}

type mod struct {
	path   []int // indexes of the calls from the root: root is nil
	name   string
	keys   []string // instance keys of the call: [""] for a single one
	input  []ref    // what the call's input "v" references, in the parent
	after  []ref    // the call's depends_on, in the parent
	output []ref    // what output "out" references, in the module
}

type res struct {
	mod     int // index in mods
	name    string
	keys    []string
	changed map[string]bool // per instance key: planned create or update
	refs    []ref           // references in arguments
	deps    []ref           // depends_on
	useVar  bool            // an argument references var.v
	useOut  []ref           // module outputs referenced: module index and key
}

// ref names a resource (of the same module) and optionally one instance, or
// a child module (kind "module") and optionally one instance.
type ref struct {
	kind  string // "res" or "module"
	index int
	key   string
	// whole: a module reference without an output name (all outputs).
	whole bool
}

func genWorld(t *rapid.T) *world {
	w := &world{mods: []*mod{{name: "", keys: []string{""}}}}
	nMods := rapid.IntRange(0, 3).Draw(t, "modules")
	for i := 1; i <= nMods; i++ {
		parent := rapid.IntRange(0, i-1).Draw(t, "parent")
		m := &mod{path: append(slices.Clone(w.mods[parent].path), i), name: fmt.Sprintf("m%d", i), keys: genKeys(t)}
		w.mods = append(w.mods, m)
	}
	nRes := rapid.IntRange(1, 10).Draw(t, "resources")
	for i := range nRes {
		m := rapid.IntRange(0, len(w.mods)-1).Draw(t, "module")
		r := &res{mod: m, name: fmt.Sprintf("r%d", i), keys: genKeys(t), changed: map[string]bool{}}
		for _, k := range r.keys {
			r.changed[k] = rapid.Bool().Draw(t, "changed")
		}
		// References only to earlier resources of the same module: the
		// configuration has no cycles.
		for j, o := range w.res {
			if o.mod != m {
				continue
			}
			switch rapid.IntRange(0, 3).Draw(t, "edge") {
			case 1:
				r.refs = append(r.refs, ref{kind: "res", index: j})
			case 2:
				r.refs = append(r.refs, ref{kind: "res", index: j, key: rapid.SampledFrom(o.keys).Draw(t, "key")})
			case 3:
				r.deps = append(r.deps, ref{kind: "res", index: j})
			}
		}
		r.useVar = m != 0 && rapid.Bool().Draw(t, "var")
		w.res = append(w.res, r)
	}
	// Module inputs, depends_on and outputs reference resources of the
	// parent and of the module; a resource of the parent may read a
	// child's output. Cycles are avoided by direction: a module's inputs
	// and depends_on take only resources of the parent declared before
	// every resource that reads the module's output.
	for mi, m := range w.mods[1:] {
		mi++
		parent := w.parentOf(mi)
		for j, o := range w.res {
			if o.mod == parent && rapid.IntRange(0, 3).Draw(t, "input") == 1 {
				m.input = append(m.input, ref{kind: "res", index: j})
			}
			if o.mod == parent && rapid.IntRange(0, 5).Draw(t, "after") == 1 {
				m.after = append(m.after, ref{kind: "res", index: j})
			}
			if o.mod == mi && rapid.IntRange(0, 2).Draw(t, "output") == 1 {
				m.output = append(m.output, ref{kind: "res", index: j})
			}
		}
	}
	for _, r := range w.res {
		for mi := range w.mods {
			if mi == 0 || w.parentOf(mi) != r.mod || rapid.IntRange(0, 2).Draw(t, "reads") != 1 {
				continue
			}
			if w.reaches(mi, r) {
				continue // reading it would make a cycle
			}
			key := ""
			if len(w.mods[mi].keys) > 1 || w.mods[mi].keys[0] != "" {
				if rapid.Bool().Draw(t, "one instance") {
					key = rapid.SampledFrom(w.mods[mi].keys).Draw(t, "module key")
				}
			}
			r.useOut = append(r.useOut, ref{kind: "module", index: mi, key: key, whole: rapid.Bool().Draw(t, "whole")})
		}
	}
	return w
}

func genKeys(t *rapid.T) []string {
	switch rapid.IntRange(0, 2).Draw(t, "expansion") {
	case 1:
		n := rapid.IntRange(1, 3).Draw(t, "count")
		var keys []string
		for i := range n {
			keys = append(keys, fmt.Sprintf("[%d]", i))
		}
		return keys
	case 2:
		return []string{`["a"]`, `["b.c"]`}
	}
	return []string{""}
}

func (w *world) parentOf(mi int) int {
	p := w.mods[mi].path
	if len(p) <= 1 {
		return 0
	}
	return p[len(p)-2]
}

// reaches reports whether module mi's inputs or depends_on lead to r (or
// to a resource declared after it, which might read mi): reading mi's
// output from r would then be a cycle.
func (w *world) reaches(mi int, r *res) bool {
	idx := slices.Index(w.res, r)
	for _, x := range append(slices.Clone(w.mods[mi].input), w.mods[mi].after...) {
		if x.index >= idx {
			return true
		}
	}
	return false
}

// instances of module mi: their addresses.
func (w *world) instances(mi int) []string {
	if mi == 0 {
		return []string{""}
	}
	var out []string
	for _, parent := range w.instances(w.parentOf(mi)) {
		for _, k := range w.mods[mi].keys {
			a := "module." + w.mods[mi].name + k
			if parent != "" {
				a = parent + "." + a
			}
			out = append(out, a)
		}
	}
	return out
}

func addr(inst, res, key string) string {
	if inst == "" {
		return res + key
	}
	return inst + "." + res + key
}

// model computes what each changed instance waits for, from the generated
// dependencies directly.
func (w *world) model() map[string][]string {
	out := map[string][]string{}
	for _, r := range w.res {
		for _, inst := range w.instances(r.mod) {
			for _, k := range r.keys {
				if !r.changed[k] {
					continue
				}
				set := map[string]bool{}
				w.resWaits(r, inst, set)
				delete(set, addr(inst, "fixture_object."+r.name, k))
				if len(set) > 0 {
					out[addr(inst, "fixture_object."+r.name, k)] = sortedKeys(set)
				}
			}
		}
	}
	return out
}

func (w *world) resWaits(r *res, inst string, set map[string]bool) {
	for _, x := range append(slices.Clone(r.refs), r.deps...) {
		w.refWaits(x, inst, set)
	}
	if r.useVar {
		w.inputWaits(r.mod, inst, set)
	}
	for _, x := range r.useOut {
		for _, key := range w.mods[x.index].keys {
			if x.key != "" && key != x.key {
				continue
			}
			for _, o := range w.mods[x.index].output {
				w.refWaits(o, childInstance(inst, w.mods[x.index].name, key), set)
			}
		}
	}
	// The calls around it.
	for mi, cur := r.mod, inst; mi != 0; mi, cur = w.parentOf(mi), parentInstance(cur) {
		for _, x := range w.mods[mi].after {
			w.refWaits(x, parentInstance(cur), set)
		}
	}
}

func childInstance(inst, name, key string) string {
	if inst == "" {
		return "module." + name + key
	}
	return inst + ".module." + name + key
}

func parentInstance(inst string) string {
	p, _ := splitLast(inst)
	return p
}

// inputWaits adds what var.v of module mi's instance inst references.
func (w *world) inputWaits(mi int, inst string, set map[string]bool) {
	for _, x := range w.mods[mi].input {
		w.refWaits(x, parentInstance(inst), set)
	}
}

// refWaits adds the changed instances a resource reference made in module
// instance inst names.
func (w *world) refWaits(x ref, inst string, set map[string]bool) {
	o := w.res[x.index]
	for _, k := range o.keys {
		if o.changed[k] && (x.key == "" || x.key == k) {
			set[addr(inst, "fixture_object."+o.name, k)] = true
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// plan renders the world as the engine's plan JSON, with the shorter forms
// of each reference the engine lists beside it.
func (w *world) plan(t *rapid.T) *tfjson.Plan {
	mods := make([]map[string]any, len(w.mods))
	for i := range w.mods {
		mods[i] = map[string]any{"resources": []any{}, "module_calls": map[string]any{}, "outputs": map[string]any{}}
	}
	refText := func(x ref) []string {
		o := w.res[x.index]
		base := "fixture_object." + o.name
		if x.key == "" {
			return []string{base + ".id", base}
		}
		return []string{base + x.key + ".id", base + x.key, base}
	}
	for _, r := range w.res {
		var refs, deps []string
		for _, x := range r.refs {
			refs = append(refs, refText(x)...)
		}
		for _, x := range r.deps {
			deps = append(deps, "fixture_object."+w.res[x.index].name)
		}
		exprs := map[string]any{}
		if len(refs) > 0 {
			exprs["value"] = map[string]any{"references": refs}
		}
		if r.useVar {
			exprs["name"] = map[string]any{"references": []string{"var.v", "each.key"}}
		}
		for i, x := range r.useOut {
			m := "module." + w.mods[x.index].name + x.key
			if x.whole {
				exprs[fmt.Sprintf("tags%d", i)] = map[string]any{"references": []string{m}}
			} else {
				exprs[fmt.Sprintf("tags%d", i)] = map[string]any{"references": []string{m + ".out", m}}
			}
		}
		block := map[string]any{"address": "fixture_object." + r.name, "mode": "managed", "type": "fixture_object", "name": r.name,
			"expressions": exprs, "depends_on": deps}
		if r.keys[0] != "" {
			block["count_expression"] = map[string]any{"references": []string{"local.n"}}
		}
		mods[r.mod]["resources"] = append(mods[r.mod]["resources"].([]any), block)
	}
	for mi := len(w.mods) - 1; mi >= 1; mi-- {
		m := w.mods[mi]
		var in, after, out []string
		for _, x := range m.input {
			in = append(in, refText(x)...)
		}
		for _, x := range m.after {
			after = append(after, "fixture_object."+w.res[x.index].name)
		}
		for _, x := range m.output {
			out = append(out, refText(x)...)
		}
		if len(out) > 0 {
			mods[mi]["outputs"].(map[string]any)["out"] = map[string]any{"expression": map[string]any{"references": out}}
		}
		call := map[string]any{"source": "./" + m.name, "module": mods[mi], "depends_on": after,
			"expressions": map[string]any{"v": map[string]any{"references": in}}}
		if m.keys[0] != "" {
			call["for_each_expression"] = map[string]any{"references": []string{"var.keys"}}
		}
		mods[w.parentOf(mi)]["module_calls"].(map[string]any)[m.name] = call
	}
	var changes []any
	for _, r := range w.res {
		for _, inst := range w.instances(r.mod) {
			for _, k := range r.keys {
				action := "no-op"
				if r.changed[k] {
					action = rapid.SampledFrom([]string{"create", "update"}).Draw(t, "action")
				}
				rc := map[string]any{"address": addr(inst, "fixture_object."+r.name, k), "mode": "managed", "type": "fixture_object",
					"name": r.name, "change": map[string]any{"actions": []string{action}}}
				if inst != "" {
					rc["module_address"] = inst
				}
				changes = append(changes, rc)
			}
		}
	}
	doc := map[string]any{"format_version": "1.2", "configuration": map[string]any{"root_module": mods[0]}, "resource_changes": changes}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var p tfjson.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return &p
}

// TestWaitsMatchTheGraph: over generated configurations (modules with
// count and for_each, resources with count and for_each, references to a
// whole resource or one instance, depends_on, module inputs, outputs and
// depends_on), Waits read from the plan JSON is exactly what the generated
// graph says each changed instance waits for.
func TestWaitsMatchTheGraph(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t)
		p := w.plan(t)
		got, want := Waits(p), w.model()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("waits (-model +Waits):\n%s", diff)
		}
	})
}

// TestNeverStartedIsSound: in any execution the engine may make of a
// generated plan (each change starts only once what it waits for has
// completed, any number at once), stopped at any point, a change that
// waits for one without a completion had not started.
func TestNeverStartedIsSound(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t)
		waits := w.model()
		var nodes []string
		for _, rc := range w.plan(t).ResourceChanges {
			if !rc.Change.Actions.NoOp() {
				nodes = append(nodes, rc.Address)
			}
		}
		started, completed := map[string]bool{}, map[string]bool{}
		steps := rapid.IntRange(0, 3*len(nodes)).Draw(t, "steps")
		for range steps {
			var can []string
			for _, n := range nodes {
				switch {
				case started[n] && !completed[n]:
					can = append(can, "complete "+n)
				case !started[n] && allIn(waits[n], completed):
					can = append(can, "start "+n)
				}
			}
			if len(can) == 0 {
				break
			}
			step := rapid.SampledFrom(can).Draw(t, "step")
			if n, ok := cut(step, "start "); ok {
				started[n] = true
			} else if n, ok := cut(step, "complete "); ok {
				completed[n] = true
			}
		}
		got := Waits(w.plan(t))
		for _, n := range nodes {
			if !allIn(got[n], completed) && started[n] {
				t.Fatalf("%s started, yet it waits for %v of which not all completed (%v)", n, got[n], completed)
			}
		}
	})
}

func readTestdata(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", name))
}

func allIn(xs []string, set map[string]bool) bool {
	for _, x := range xs {
		if !set[x] {
			return false
		}
	}
	return true
}

func cut(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}

// TestWaitsOfARealPlan reads the configuration OpenTofu 1.12 wrote for a
// module with count and depends_on, an output, a local, a splat, for_each
// and a provisioner (testdata/plan.json).
func TestWaitsOfARealPlan(t *testing.T) {
	t.Parallel()
	b, err := readTestdata("plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var p tfjson.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		// var.v is the gate's output; the call depends on terraform_data.a.
		"module.m[0].terraform_data.o": {"terraform_data.a[0]", "terraform_data.a[1]", "terraform_data.gate"},
		// A splat, each.key, a local (not followed: the plan does not
		// describe locals) and depends_on the gate and the module.
		`terraform_data.b["x"]`: {"module.m[0].terraform_data.o", "terraform_data.a[0]", "terraform_data.a[1]", "terraform_data.gate"},
		"terraform_data.c":      {"module.m[0].terraform_data.o"},
		"terraform_data.d":      {"module.m[0].terraform_data.o"},
		// terraform_data.a[0].id in an argument, a[1] in its provisioner.
		"terraform_data.gate": {"terraform_data.a[0]", "terraform_data.a[1]"},
	}
	if diff := cmp.Diff(want, Waits(&p)); diff != "" {
		t.Fatalf("waits (-want +got):\n%s", diff)
	}
}
