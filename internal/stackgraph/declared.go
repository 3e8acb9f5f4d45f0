package stackgraph

import (
	"os"
	"path"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/rootmodule"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
)

// declared is what a root module says about stacks, read before any engine
// starts: whether it is a stack at all, the stacks it names in `after` and
// in sponson_outputs, and its local module sources (for --changed).
type declared struct {
	isStack bool
	// hasFiles says the directory holds configuration files.
	hasFiles bool
	// after are the references of sponson_scope's `after`, reads those of
	// every sponson_outputs `stack`, as written.
	after, reads []string
	// modules are the local module sources ("./x", "../y"), as written.
	modules []string
	// stack is the stack attribute its sponson_scope declares ("" when
	// none), stackErr why it cannot be read (stack.DeclaredIn): the name
	// its stack takes, and a reference to it resolves to, from this one
	// parse (naming.go).
	stack    string
	stackErr error
	// calls are the calls of functions that read files (fileFuncs), and
	// locals the module's locals, to resolve their paths (--changed). They
	// are collected from the parse as it is read, and the parsed files are
	// not kept: what --changed needs of them is these expressions, and
	// 10,000 stacks' syntax trees would be most of the memory of a listing.
	calls  []readCall
	locals map[string]hcl.Expression
}

var topSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "resource", LabelNames: []string{"type", "name"}},
	{Type: "data", LabelNames: []string{"type", "name"}},
	{Type: "module", LabelNames: []string{"name"}},
}}

// readDeclared reads the root module in dir. A reference must be a literal,
// as the stack attribute must (internal/stack): it decides the order of a
// run before the engine evaluates anything. Files that do not parse are left
// for the engine to report.
func readDeclared(dir string) (declared, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return declared{}, errcode.Wrap(errcode.Usage, err, "reading the configuration in %s", dir)
	}
	return declaredIn(dir, entries)
}

// declaredIn is readDeclared of a directory whose entries were read.
func declaredIn(dir string, entries []os.DirEntry) (declared, error) {
	var d declared
	files := rootmodule.FilesOf(dir, entries)
	d.hasFiles = len(files) > 0
	for _, f := range files {
		top, _, _ := f.Body.PartialContent(topSchema)
		if top == nil {
			continue
		}
		for _, b := range top.Blocks {
			attrs, _ := b.Body.JustAttributes()
			switch {
			case b.Type == "resource" && b.Labels[0] == "sponson_scope":
				d.isStack = true
				if a, ok := attrs["after"]; ok {
					refs, err := literalStrings(a)
					if err != nil {
						return d, errcode.New(errcode.Usage, "the after attribute of sponson_scope.%s (%s) is not a literal list of strings", b.Labels[1], a.Range).
							WithHint("Write it as a literal, after = [\"stacks/network\"]: sponson reads it before the engine runs to order the stacks.")
					}
					d.after = append(d.after, refs...)
				}
			case b.Type == "data" && b.Labels[0] == "sponson_outputs":
				a, ok := attrs["stack"]
				if !ok {
					continue // the engine reports the missing attribute
				}
				v, err := literalString(a)
				if err != nil {
					return d, errcode.New(errcode.Usage, "the stack attribute of data.sponson_outputs.%s (%s) is not a literal string", b.Labels[1], a.Range).
						WithHint("Write the stack as a literal, stack = \"stacks/network\": sponson reads it before the engine runs to order the stacks.")
				}
				d.reads = append(d.reads, v)
			case b.Type == "module":
				if a, ok := attrs["source"]; ok {
					if src, err := literalString(a); err == nil && isLocalSource(src) {
						d.modules = append(d.modules, src)
					}
				}
			}
		}
	}
	d.stack, d.stackErr = stack.DeclaredIn(files)
	d.locals = map[string]hcl.Expression{}
	for _, f := range files {
		d.collectReads(f)
	}
	d.sortCalls()
	return d, nil
}

// isLocalSource reports a module source in the same repository: the engines
// treat only "./" and "../" prefixes as local paths.
func isLocalSource(s string) bool {
	return strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../")
}

func literalString(a *hcl.Attribute) (string, error) {
	v, diags := a.Expr.Value(nil)
	if len(a.Expr.Variables()) > 0 || diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type() != cty.String {
		return "", errNotLiteral
	}
	return v.AsString(), nil
}

func literalStrings(a *hcl.Attribute) ([]string, error) {
	v, diags := a.Expr.Value(nil)
	if len(a.Expr.Variables()) > 0 || diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return nil, errNotLiteral
	}
	t := v.Type()
	if !t.IsTupleType() && !t.IsListType() && !t.IsSetType() {
		return nil, errNotLiteral
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return nil, errNotLiteral
		}
		out = append(out, e.AsString())
	}
	return out, nil
}

var errNotLiteral = errcode.New(errcode.Usage, "not a literal")

// moduleDir is a local module source's directory, relative to the
// repository, from the directory (relative, slash-separated) that uses it.
func moduleDir(from, source string) string {
	return path.Clean(path.Join(from, source))
}
