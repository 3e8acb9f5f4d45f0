// Package stackoutputs hands the planned outputs of a stack's plan to the
// stacks that read them in the same run of many (docs/design.md §4.7, §6.4):
// `sponson plan --all` plans network, then app, whose sponson_outputs then
// gives the values network's plan will give rather than network's last
// applied ones, so app's plan shows the change network's brings.
//
// The parent run names a directory in EnvVar for every stack's plan; each
// plan writes its outputs there (Write, mode 0600: they hold sensitive
// values, as a saved plan does), and the provider of a later plan reads the
// file of the stack it names (Read). The parent removes the directory when
// the run ends.
//
// Provisional values (docs/design.md §6.4): an output known only after its
// stack's apply is handed on with its applied value and listed as
// provisional, and so is every output derived from a provisional read
// (derivedFromProvisional), so no stack down the line takes it as final.
// The review marks it at the value: each planned change whose configuration
// derives from a provisional read says so on its own line of the diff
// (ProvisionalObjects), the reads are named above it, and a change that
// derives from nothing provisional is not marked. Both follow one walk of
// the plan's configuration (derivedObjects).
package stackoutputs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// EnvVar names the directory of a run's planned outputs.
const EnvVar = "SPONSON_PLANNED_OUTPUTS"

// Planned is what a stack's plan says its outputs will be.
type Planned struct {
	Stack       string `json:"stack"`
	Environment string `json:"environment"`
	Scope       string `json:"scope"`
	// RunID is the plan's run: a saved plan of many stacks accepts the
	// upstream's apply of exactly this plan (docs/design.md §4.2).
	RunID string `json:"runId,omitempty"`
	// Outputs are the outputs known at plan time, in the state's notation.
	Outputs map[string]Output `json:"outputs"`
	// Unknown are the outputs known only after the apply, and those derived
	// from what another stack knows only after its apply (provisional
	// reads), sorted: a reader takes their applied values and marks them
	// provisional.
	Unknown []string `json:"unknown,omitempty"`
}

// Output is one output as a state records it: the value as JSON and its
// type in cty's JSON notation.
type Output struct {
	Value     json.RawMessage `json:"value"`
	Type      json.RawMessage `json:"type"`
	Sensitive bool            `json:"sensitive,omitempty"`
}

// FromPlan reads the planned outputs of key's plan: the planned values'
// outputs with their types (a type the engine leaves out is implied by the
// value), and those whose value is known only after the apply.
func FromPlan(key store.Key, p *tfjson.Plan) (Planned, error) {
	out := Planned{Stack: key.Stack, Environment: key.Environment, Scope: key.Scope, Outputs: map[string]Output{}}
	if p == nil {
		return out, nil
	}
	for name, ch := range p.OutputChanges {
		if ch != nil && unknown(ch.AfterUnknown) {
			out.Unknown = append(out.Unknown, name)
		}
	}
	sort.Strings(out.Unknown)
	if p.PlannedValues == nil {
		return out, nil
	}
	for name, o := range p.PlannedValues.Outputs {
		if o == nil || slices.Contains(out.Unknown, name) {
			continue
		}
		if ch := p.OutputChanges[name]; ch != nil && ch.Actions.Delete() {
			continue
		}
		v, err := json.Marshal(o.Value)
		if err != nil {
			return out, fmt.Errorf("output %q: %w", name, err)
		}
		ty := o.Type
		if ty == cty.NilType {
			if ty, err = ctyjson.ImpliedType(v); err != nil {
				return out, fmt.Errorf("output %q: %w", name, err)
			}
		}
		t, err := ty.MarshalJSON()
		if err != nil {
			return out, fmt.Errorf("output %q: %w", name, err)
		}
		out.Outputs[name] = Output{Value: v, Type: t, Sensitive: o.Sensitive}
	}
	for _, name := range derivedFromProvisional(p) {
		if _, ok := out.Outputs[name]; ok {
			delete(out.Outputs, name)
			out.Unknown = append(out.Unknown, name)
		}
	}
	sort.Strings(out.Unknown)
	return out, nil
}

// derivedFromProvisional names the root module outputs whose value comes,
// through the configuration's references, from a sponson_outputs data
// source that read another stack's provisional outputs: they are no more
// final than those, so the stacks that read this one must not take them as
// final either (issue 49). The walk follows the plan's configuration, which
// leaves locals out: an output that reads a local counts as derived
// whenever anything was provisional.
func derivedFromProvisional(p *tfjson.Plan) []string {
	tainted := derivedObjects(p)
	if tainted == nil {
		return nil
	}
	var out []string
	for name, o := range p.Config.RootModule.Outputs {
		if o != nil && slices.ContainsFunc(references(o.Expression), func(ref string) bool { return tainted[node(ref)] }) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// ProvisionalObjects reports, for a resource address of the plan (an
// instance's included), whether its configuration derives, through the
// configuration's references, from another stack's output known only after
// that stack's apply: the review marks its change provisional (issue 49).
// As for outputs, a reference to a local counts as derived whenever
// anything was provisional. It is nil when nothing was.
func ProvisionalObjects(p *tfjson.Plan) func(address string) bool {
	tainted := derivedObjects(p)
	if tainted == nil {
		return nil
	}
	return func(address string) bool { return tainted[node(address)] }
}

// ReadOutputs keeps, of names (outputs of another stack that the
// sponson_outputs data source at address read), those the root module's
// configuration reads: an output nobody reads is not marked provisional in
// the review (issue 49). A reference to values.N or sensitive_values.N
// reads N; a reference to the data source, its values or its
// sensitive_values as a whole reads them all, as does any reference to a
// local (the plan's configuration has no locals to follow). Without a
// configuration it keeps them all.
func ReadOutputs(p *tfjson.Plan, address string, names []string) []string {
	if len(names) == 0 {
		return names
	}
	if p == nil || p.Config == nil || p.Config.RootModule == nil {
		return names
	}
	target := node(address)
	read := map[string]bool{}
	for _, refs := range rootReferences(p.Config) {
		for i, ref := range refs {
			if strings.HasPrefix(ref, "local.") {
				return names
			}
			if node(ref) != target {
				continue
			}
			// A reference is followed by the shorter ones it is made of
			// (data.T.N.values.x, data.T.N.values, data.T.N): those only
			// repeat it.
			if i > 0 && (strings.HasPrefix(refs[i-1], ref+".") || strings.HasPrefix(refs[i-1], ref+"[")) {
				continue
			}
			rest := strings.TrimPrefix(ref, target)
			if strings.HasPrefix(rest, "[") { // an instance of the data source
				if end := strings.Index(rest, "]"); end >= 0 {
					rest = rest[end+1:]
				}
			}
			name, whole := outputOf(rest)
			if whole {
				return names
			}
			if name != "" {
				read[name] = true
			}
		}
	}
	out := []string{}
	for _, n := range names {
		if read[n] {
			out = append(out, n)
		}
	}
	return out
}

// outputOf is the output a reference's rest after the data source names:
// ".values.N..." or `.values["N"]...` (sensitive_values too) is N; the data
// source, its values or sensitive_values themselves are whole; any other
// attribute (read_scope, planned...) reads no output.
func outputOf(rest string) (name string, whole bool) {
	if rest == "" {
		return "", true
	}
	for _, attr := range []string{".values", ".sensitive_values"} {
		after, ok := strings.CutPrefix(rest, attr)
		if !ok {
			continue
		}
		switch {
		case after == "":
			return "", true
		case strings.HasPrefix(after, "."):
			n := after[1:]
			if i := strings.IndexAny(n, ".["); i >= 0 {
				n = n[:i]
			}
			return n, false
		case strings.HasPrefix(after, `["`):
			n := after[2:]
			if i := strings.Index(n, `"]`); i >= 0 {
				return n[:i], false
			}
			return "", true
		}
		return "", true
	}
	return "", false
}

// rootReferences are the reference lists of every expression of the root
// module: its resources', outputs', module calls' and provider
// configurations'.
func rootReferences(c *tfjson.Config) [][]string {
	var out [][]string
	add := func(e *tfjson.Expression) {
		if refs := references(e); len(refs) > 0 {
			out = append(out, refs)
		}
	}
	root := c.RootModule
	for _, r := range root.Resources {
		for _, e := range r.Expressions {
			add(e)
		}
		add(r.CountExpression)
		add(r.ForEachExpression)
	}
	for _, o := range root.Outputs {
		if o != nil {
			add(o.Expression)
		}
	}
	for _, m := range root.ModuleCalls {
		for _, e := range m.Expressions {
			add(e)
		}
		add(m.CountExpression)
		add(m.ForEachExpression)
	}
	for _, pc := range c.ProviderConfigs {
		if pc != nil && pc.ModuleAddress == "" {
			for _, e := range pc.Expressions {
				add(e)
			}
		}
	}
	return out
}

// derivedObjects are the configuration objects of the root module (and
// "local", for every local) that derive, through the configuration's
// references, from a provisional read; nil when the plan read nothing
// provisional or has no configuration.
func derivedObjects(p *tfjson.Plan) map[string]bool {
	if p == nil {
		return nil
	}
	tainted := provisionalReads(p)
	if len(tainted) == 0 || p.Config == nil || p.Config.RootModule == nil {
		return nil
	}
	tainted["local"] = true
	spread(tainted, dependencies(p.Config.RootModule))
	return tainted
}

// provisionalReads are the sponson_outputs data sources of the plan that
// read provisional outputs.
func provisionalReads(p *tfjson.Plan) map[string]bool {
	tainted := map[string]bool{}
	for _, m := range []*tfjson.StateModule{plannedRoot(p), priorRoot(p)} {
		if m == nil {
			continue
		}
		for _, r := range m.Resources {
			if list, _ := r.AttributeValues["provisional"].([]any); r.Mode == tfjson.DataResourceMode && r.Type == "sponson_outputs" && len(list) > 0 {
				tainted[node(r.Address)] = true
			}
		}
	}
	return tainted
}

// dependencies are what each resource and module call of the root module
// refers to.
func dependencies(root *tfjson.ConfigModule) map[string][]string {
	deps := map[string][]string{}
	for _, r := range root.Resources {
		var refs []string
		for _, e := range r.Expressions {
			refs = append(refs, references(e)...)
		}
		refs = append(append(refs, references(r.CountExpression)...), references(r.ForEachExpression)...)
		deps[node(r.Address)] = append(deps[node(r.Address)], refs...)
	}
	for name, c := range root.ModuleCalls {
		for _, e := range c.Expressions {
			deps["module."+name] = append(deps["module."+name], references(e)...)
		}
	}
	return deps
}

// spread marks tainted every object that refers, directly or through
// others, to a tainted one.
func spread(tainted map[string]bool, deps map[string][]string) {
	for changed := true; changed; {
		changed = false
		for n, refs := range deps {
			if !tainted[n] && slices.ContainsFunc(refs, func(ref string) bool { return tainted[node(ref)] }) {
				tainted[n], changed = true, true
			}
		}
	}
}

// node is the configuration object a reference names: data.T.N, T.N,
// module.M, or "local" for every local (the plan's configuration has no
// locals to follow).
func node(ref string) string {
	parts := strings.Split(ref, ".")
	switch {
	case parts[0] == "local":
		return "local"
	case parts[0] == "data" && len(parts) >= 3:
		return "data." + parts[1] + "." + strings.SplitN(parts[2], "[", 2)[0]
	case parts[0] == "module" && len(parts) >= 2:
		return "module." + strings.SplitN(parts[1], "[", 2)[0]
	case len(parts) >= 2:
		return parts[0] + "." + strings.SplitN(parts[1], "[", 2)[0]
	}
	return ref
}

// references are the references of an expression, its nested blocks'
// included.
func references(e *tfjson.Expression) []string {
	if e == nil || e.ExpressionData == nil {
		return nil
	}
	refs := append([]string{}, e.References...)
	for _, b := range e.NestedBlocks {
		for _, n := range b {
			refs = append(refs, references(n)...)
		}
	}
	return refs
}

func plannedRoot(p *tfjson.Plan) *tfjson.StateModule {
	if p.PlannedValues == nil {
		return nil
	}
	return p.PlannedValues.RootModule
}

func priorRoot(p *tfjson.Plan) *tfjson.StateModule {
	if p.PriorState == nil || p.PriorState.Values == nil {
		return nil
	}
	return p.PriorState.Values.RootModule
}

// unknown reports whether an after_unknown value says the whole output is
// unknown, or any part of it.
func unknown(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case []any:
		for _, e := range x {
			if unknown(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if unknown(e) {
				return true
			}
		}
	}
	return false
}

// file is the path of a stack's planned outputs in dir.
func file(dir, stack string) string {
	return filepath.Join(dir, store.StackSegment(stack)+".json")
}

// Write stores p in dir, readable by its owner only.
func Write(dir string, p Planned) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp := file(dir, p.Stack) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file(dir, p.Stack))
}

// Read returns the planned outputs of key's stack in dir; ok is false when
// the run planned no such stack, or planned it in another environment or
// scope.
func Read(dir string, key store.Key) (p Planned, ok bool, err error) {
	b, err := os.ReadFile(file(dir, key.Stack))
	if errors.Is(err, fs.ErrNotExist) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, false, fmt.Errorf("the planned outputs of %s: %w", key.Stack, err)
	}
	return p, p.Stack == key.Stack && p.Environment == key.Environment && p.Scope == key.Scope, nil
}
