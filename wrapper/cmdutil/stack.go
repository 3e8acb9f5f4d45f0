package cmdutil

import (
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
)

// DetectStack decides the stack of the configuration in dir (absolute):
// --stack, SPONSON_STACK, the sponson_scope attribute, then the derived
// name (internal/stack).
func DetectStack(f *Factory, dir, flag string) (stack.Result, error) {
	declared, err := stack.Declared(dir)
	if err != nil {
		return stack.Result{}, err
	}
	return DetectDeclared(f, dir, flag, declared)
}

// DetectDeclared is detectStack with the sponson_scope attribute already
// read (stack.DeclaredIn).
func DetectDeclared(f *Factory, dir, flag, declared string) (stack.Result, error) {
	src := runctx.ProcessSources(dir)
	return stack.Detect(dir, flag, declared, stack.Sources{Getenv: f.Getenv, Git: src.Git})
}
