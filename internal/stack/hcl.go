package stack

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/rootmodule"
)

// Declared returns the `stack` attribute of the sponson_scope resources of
// the configuration in dir, "" when none declares one. The wrapper needs
// the stack before it takes the lease, long before the engine evaluates
// anything, so the attribute is read from the .tf and .tf.json files
// directly and must be a literal string: an expression with a variable, a
// function call or an interpolation is refused with USAGE, and so are two
// sponson_scope resources naming different stacks. Files that do not parse
// are left for the engine to report.
func Declared(dir string) (string, error) {
	files, err := rootmodule.Files(dir)
	if err != nil {
		return "", errcode.Wrap(errcode.Usage, err, "reading the configuration in %s", dir)
	}
	return DeclaredIn(files)
}

// DeclaredIn is Declared over files already read (rootmodule.Files), for a
// caller that reads them for more than the stack.
func DeclaredIn(files []*hcl.File) (string, error) {
	found, where := "", ""
	for _, f := range files {
		top, _, _ := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "resource", LabelNames: []string{"type", "name"}}}})
		if top == nil {
			continue
		}
		for _, b := range top.Blocks {
			if b.Labels[0] != "sponson_scope" {
				continue
			}
			attrs, _ := b.Body.JustAttributes()
			a, ok := attrs["stack"]
			if !ok {
				continue
			}
			at := a.Range.String()
			v, diags := a.Expr.Value(nil)
			if len(a.Expr.Variables()) > 0 || diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type() != cty.String {
				return "", errcode.New(errcode.Usage, "the stack attribute of sponson_scope.%s (%s) is not a literal string", b.Labels[1], at).
					WithHint("Write the stack as a literal, stack = \"acme/infra//app\": sponson reads it before the engine runs, so it cannot depend on variables or functions. Or pass --stack / SPONSON_STACK.")
			}
			name := v.AsString()
			if found != "" && name != found {
				return "", errcode.New(errcode.Usage, "sponson_scope resources name two stacks, %q (%s) and %q (%s)", found, where, name, at).
					WithHint("A configuration is one stack: declare it once.")
			}
			found, where = name, at
		}
	}
	return found, nil
}
