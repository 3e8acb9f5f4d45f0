package cmdutil

import (
	"path/filepath"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
)

// StackOf is the configuration directory --chdir names (absolute; the
// working directory when empty) and its stack (DetectStack).
func StackOf(getenv func(string) string, chdir, flag string) (string, stack.Result, error) {
	dir, err := filepath.Abs(OrDot(chdir))
	if err != nil {
		return "", stack.Result{}, errcode.Wrap(errcode.Usage, err, "--chdir %q", chdir)
	}
	stk, err := DetectStack(getenv, dir, flag)
	return dir, stk, err
}

// DetectStack decides the stack of the configuration in dir (absolute):
// --stack, SPONSON_STACK, the sponson_scope attribute, then the derived
// name (internal/stack).
func DetectStack(getenv func(string) string, dir, flag string) (stack.Result, error) {
	declared, err := stack.Declared(dir)
	if err != nil {
		return stack.Result{}, err
	}
	return DetectDeclared(getenv, dir, flag, declared)
}

// DetectDeclared is detectStack with the sponson_scope attribute already
// read (stack.DeclaredIn).
func DetectDeclared(getenv func(string) string, dir, flag, declared string) (stack.Result, error) {
	src := runctx.ProcessSources(dir)
	return stack.Detect(dir, flag, declared, stack.Sources{Getenv: getenv, Git: src.Git})
}
