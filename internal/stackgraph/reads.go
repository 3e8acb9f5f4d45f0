package stackgraph

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// fileFuncs are the engines' functions that read files while the
// configuration is evaluated, by the position of their path arguments:
// what a stack reads besides its .tf files (docs/design.md §4.7 "Many stacks").
var fileFuncs = map[string]bool{
	"file": true, "fileexists": true, "fileset": true, "templatefile": true,
	"filebase64": true, "filemd5": true, "filesha1": true, "filesha256": true, "filesha512": true,
	"filebase64sha256": true, "filebase64sha512": true,
}

// readCall is one call of a fileFuncs function in a module, as written.
type readCall struct {
	fn   string
	args []hcl.Expression
	// text is the call's source, at its file and line (absolute file name).
	text      string
	file      string
	line, col int
}

// collectReads adds the file-reading calls and the locals of one parsed
// file to d, walking every expression of the file once: the parse
// readDeclared already made, so --changed parses no file twice.
func (d *declared) collectReads(f *hcl.File) {
	if body, ok := f.Body.(*hclsyntax.Body); ok {
		_ = hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
			switch n := n.(type) {
			case *hclsyntax.FunctionCallExpr:
				d.addCall(n, f.Bytes, true)
			case *hclsyntax.Block:
				if n.Type == "locals" {
					for name, a := range n.Body.Attributes {
						d.locals[name] = a.Expr
					}
				}
			}
			return nil
		})
		return
	}
	d.collectJSONReads(f)
}

// collectJSONReads is collectReads for JSON syntax: every string is a
// template (internal/rootmodule parses .tf.json files as JSON), whose
// expressions are parsed from the string.
func (d *declared) collectJSONReads(f *hcl.File) {
	var doc any
	if json.Unmarshal(f.Bytes, &doc) != nil {
		return
	}
	name := ""
	if r := f.Body.MissingItemRange(); r.Filename != "" {
		name = r.Filename
	}
	var walk func(v any, local string)
	walk = func(v any, local string) {
		switch v := v.(type) {
		case string:
			if !strings.Contains(v, "${") && local == "" {
				return
			}
			src := []byte(v)
			e, diags := hclsyntax.ParseTemplate(src, name, hcl.InitialPos)
			if diags.HasErrors() {
				return
			}
			if local != "" {
				d.locals[local] = e
			}
			_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
				if c, ok := n.(*hclsyntax.FunctionCallExpr); ok {
					d.addCall(c, src, false)
				}
				return nil
			})
		case map[string]any:
			for _, x := range v {
				walk(x, "")
			}
		case []any:
			for _, x := range v {
				walk(x, "")
			}
		}
	}
	if top, ok := doc.(map[string]any); ok {
		if locals, ok := top["locals"].(map[string]any); ok {
			for k, v := range locals {
				walk(v, k)
			}
			delete(top, "locals")
		}
	}
	walk(doc, "")
}

// sortCalls orders the calls by their place, then their text: the walk of
// a body visits its attributes in no fixed order, and reasons must not
// change from one run to the next.
func (d *declared) sortCalls() {
	sort.SliceStable(d.calls, func(i, j int) bool {
		a, b := d.calls[i], d.calls[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.line != b.line {
			return a.line < b.line
		}
		if a.col != b.col {
			return a.col < b.col
		}
		return a.text < b.text
	})
}

// addCall records c when it reads a file; withLine says c's line is its
// line in the file (not in a JSON string).
func (d *declared) addCall(c *hclsyntax.FunctionCallExpr, src []byte, withLine bool) {
	name := strings.TrimPrefix(c.Name, "core::")
	if !fileFuncs[name] {
		return
	}
	call := readCall{fn: name, file: c.Range().Filename}
	if withLine {
		call.line, call.col = c.Range().Start.Line, c.Range().Start.Column
	}
	if r := c.Range(); r.End.Byte <= len(src) && r.Start.Byte < r.End.Byte {
		call.text = string(src[r.Start.Byte:r.End.Byte])
	} else {
		call.text = name + "(…)"
	}
	call.text = strings.Join(strings.Fields(call.text), " ")
	if len(call.text) > 80 {
		call.text = call.text[:77] + "..."
	}
	for _, a := range c.Args {
		call.args = append(call.args, hcl.Expression(a))
	}
	d.calls = append(d.calls, call)
}

// moduleEval evaluates the path expressions of one module of one stack
// before the engine runs: path.module is the module's directory, path.root
// and path.cwd the stack's (where the engine runs), and a local is known
// when its own expression is (followed through other locals). Anything
// else (a variable, a resource, a data source, each and count, a function
// outside pathFuncs) makes the expression unresolvable.
type moduleEval struct {
	module, root string // absolute directories
	locals       map[string]hcl.Expression
	known        map[string]cty.Value
	resolving    map[string]bool
}

func newModuleEval(module, root string, locals map[string]hcl.Expression) *moduleEval {
	return &moduleEval{module: module, root: root, locals: locals, known: map[string]cty.Value{}, resolving: map[string]bool{}}
}

// value is e's value, false when it is not known before the engine runs.
func (m *moduleEval) value(e hcl.Expression) (cty.Value, bool) {
	locals := map[string]cty.Value{}
	for _, tr := range e.Variables() {
		switch tr.RootName() {
		case "path":
		case "local":
			if len(tr) < 2 {
				return cty.NilVal, false
			}
			a, ok := tr[1].(hcl.TraverseAttr)
			if !ok {
				return cty.NilVal, false
			}
			v, ok := m.local(a.Name)
			if !ok {
				return cty.NilVal, false
			}
			locals[a.Name] = v
		default:
			return cty.NilVal, false
		}
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"path": cty.ObjectVal(map[string]cty.Value{
				"module": cty.StringVal(m.module), "root": cty.StringVal(m.root), "cwd": cty.StringVal(m.root),
			}),
			"local": cty.ObjectVal(locals),
		},
		Functions: pathFuncs(m.root),
	}
	v, diags := e.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return cty.NilVal, false
	}
	return v, true
}

func (m *moduleEval) local(name string) (cty.Value, bool) {
	if v, ok := m.known[name]; ok {
		return v, v != cty.NilVal
	}
	e, ok := m.locals[name]
	if !ok || m.resolving[name] {
		return cty.NilVal, false
	}
	m.resolving[name] = true
	v, ok := m.value(e)
	delete(m.resolving, name)
	if !ok {
		v = cty.NilVal
	}
	m.known[name] = v
	return v, ok
}

// str is e's value as a string.
func (m *moduleEval) str(e hcl.Expression) (string, bool) {
	v, ok := m.value(e)
	if !ok || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// pathFuncs are the functions a path expression may call and sponson
// evaluates: the string and path functions with no input but their
// arguments. abspath resolves against root, the engine's working directory;
// pathexpand leaves a path in the home directory to readGlobs, which knows
// it is outside the repository.
func pathFuncs(root string) map[string]function.Function {
	str := func(f func(string) string) function.Function {
		return function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}},
			Type:   function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				return cty.StringVal(f(args[0].AsString())), nil
			},
		})
	}
	return map[string]function.Function{
		"format": stdlib.FormatFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc, "upper": stdlib.UpperFunc,
		"trimprefix": stdlib.TrimPrefixFunc, "trimsuffix": stdlib.TrimSuffixFunc, "trimspace": stdlib.TrimSpaceFunc,
		"replace": stdlib.ReplaceFunc,
		"dirname": str(filepath.Dir), "basename": str(filepath.Base),
		"pathexpand": str(func(p string) string {
			if p == "~" || strings.HasPrefix(p, "~/") {
				return "~" // readGlobs knows it is the home directory's
			}
			return p
		}),
		"abspath": str(func(p string) string {
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			return filepath.Clean(p)
		}),
	}
}

// readGlobs are the globs (relative to the repository, slash-separated) of
// the files a call reads, or ok false when its path is not known before
// the engine runs. A relative path is relative to root, as the engines
// read it. A path outside the repository gives no glob: no change of the
// repository touches it.
func (m *moduleEval) readGlobs(c readCall, top string) (globs []string, ok bool) {
	if len(c.args) == 0 {
		return nil, true // the engine reports the missing argument
	}
	p, ok := m.str(c.args[0])
	if !ok {
		return nil, false
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		return nil, true // the engines read it from the home directory
	}
	base, inside := repoRel(top, m.root, p)
	if !inside {
		return nil, true
	}
	if c.fn != "fileset" {
		return []string{escapeGlob(base)}, true
	}
	if len(c.args) < 2 {
		return nil, true
	}
	pattern, ok := m.str(c.args[1])
	if !ok {
		return nil, false
	}
	// fileset's patterns know {a,b}, which path.Match does not: all of the
	// directory is then read, which is more than fileset reads, never less.
	if strings.ContainsAny(pattern, "{}") {
		return []string{escapeGlob(base)}, true
	}
	return []string{path.Join(escapeGlob(base), pattern)}, true
}

// repoRel is the path p (absolute, or relative to dir) relative to the
// repository's root top, slash-separated; false when it is outside.
func repoRel(top, dir, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	rel, err := filepath.Rel(top, filepath.Clean(p))
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// where names a call's place for a reason: its file relative to the
// repository's root, and its line.
func (c readCall) where(top string) string {
	name := c.file
	if rel, err := filepath.Rel(top, c.file); err == nil {
		name = filepath.ToSlash(rel)
	}
	if c.line > 0 {
		return fmt.Sprintf("%s:%d", name, c.line)
	}
	return name
}
