// Package environments reads the environments a repository declares: which
// environments runs may use, which of them are protected (every apply and
// destroy needs a named approver), and who may approve each. The wrapper
// reads the declaration before it starts the engine or takes a lease, so an
// undeclared environment, or a protected one without an approver, is refused
// before anything runs (docs/design.md §2.14).
//
// The declaration is one file, sponson.hcl, found in the configuration
// directory or the nearest parent up to the repository's root:
//
//	environment "preview" {}
//
//	environment "staging" {}
//
//	environment "production" {
//	  protected = true
//	  approvers = ["alice", "bob"] # optional: who may approve
//	}
//
// An `identity` map, at the top or in an environment (which wins for the
// types it names), declares the identifying attributes of resource types:
// every scope of the environment identifies their objects by them instead
// of by id (docs/design.md §2.3 "Ledger and identity"):
//
//	identity = { local_file = ["filename"] }
//
// and `address_owned` lists the types whose objects are owned by their
// address within their scope, as Sponson owns the HashiCorp types whose ids
// are content hashes or timestamps:
//
//	address_owned = ["acme_rendered_file"]
//
// Without the file, preview and production are declared and production is
// protected with no list of approvers (any named approver), which is what
// Sponson did before environments were declared.
package environments

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

// FileName is the declaration's file name.
const FileName = "sponson.hcl"

// Production is the environment that is always protected: a declaration
// cannot make it unprotected, so that a typo in sponson.hcl never opens
// production to unapproved runs.
const Production = "production"

// Environment is one declared environment.
type Environment struct {
	Name string
	// Protected environments need a named approver for apply and destroy
	// (ENV_NOT_APPROVED, exit 2).
	Protected bool
	// Approvers, when not nil, are the only names a protected environment
	// accepts as approver; nil accepts any name.
	Approvers []string
	// Identity maps a resource type to the attributes that identify its
	// objects in this environment; nil when none is declared.
	Identity map[string][]string
	// AddressOwned are the resource types whose objects are owned by
	// their address within their scope (their ids name no single object),
	// beyond the ones Sponson knows.
	AddressOwned []string
	// Policies are the Rego policy files and directories that gate every
	// apply and destroy in this environment (the top-level list, then the
	// environment's own), as written: relative to the directory of the
	// declaration (docs/design.md §2.18).
	Policies []string
}

// Declared is the environments of a repository.
type Declared struct {
	Environments []Environment
	// Source is the file they were read from; "" for the defaults.
	Source string
	// Watch lists, per stack directory relative to the declaration's
	// directory ("" for every stack), the globs of files outside what the
	// engine's configuration names that a stack reads all the same: a
	// change to one marks the stack changed (stack "DIR" { watch = [...] },
	// and a top-level watch for every stack).
	Watch map[string][]string
}

// Default is the declaration of a repository without sponson.hcl.
func Default() Declared {
	return Declared{Environments: []Environment{
		{Name: runctx.DefaultEnvironment},
		{Name: Production, Protected: true},
	}}
}

// Normalize is how an environment name is matched: surrounding space
// removed and ASCII letters lowercased, so --env Production is production.
// Nothing else is folded: production-app and prod are other names, and are
// refused unless declared.
func Normalize(name string) string {
	return strings.ToLower(strings.TrimSpace(name))
}

// Load finds and reads the declaration for a configuration directory: the
// first sponson.hcl in dir or a parent, stopping at the repository's root
// (the first directory that holds .git) or the file system's root. A
// repository without the file gets Default.
func Load(dir string) (Declared, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Declared{}, errcode.Wrap(errcode.Usage, err, "cannot resolve the configuration directory %q", dir)
	}
	for {
		path := filepath.Join(dir, FileName)
		src, err := os.ReadFile(path)
		switch {
		case err == nil:
			return Parse(src, path)
		case !errors.Is(err, fs.ErrNotExist):
			return Declared{}, errcode.Wrap(errcode.Usage, err, "cannot read %s", path)
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return Default(), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Default(), nil
		}
		dir = parent
	}
}

// file is the HCL schema of sponson.hcl.
type file struct {
	Identity     map[string][]string `hcl:"identity,optional"`
	AddressOwned []string            `hcl:"address_owned,optional"`
	Policies     []string            `hcl:"policies,optional"`
	Watch        []string            `hcl:"watch,optional"`
	Environments []struct {
		Name         string              `hcl:"name,label"`
		Protected    *bool               `hcl:"protected,optional"`
		Approvers    *[]string           `hcl:"approvers,optional"`
		Identity     map[string][]string `hcl:"identity,optional"`
		AddressOwned []string            `hcl:"address_owned,optional"`
		Policies     []string            `hcl:"policies,optional"`
	} `hcl:"environment,block"`
	Stacks []struct {
		Dir   string   `hcl:"dir,label"`
		Watch []string `hcl:"watch,optional"`
	} `hcl:"stack,block"`
}

// Parse reads a declaration; filename names it in errors. It refuses
// (USAGE) a file that is not valid HCL, declares no environment, declares a
// name twice after Normalize, declares an invalid name, lists approvers of an
// unprotected environment or an empty list of approvers, or declares
// production unprotected.
func Parse(src []byte, filename string) (Declared, error) {
	const hint = `Declare each environment as environment "NAME" { protected = true, approvers = ["alice"] } (both settings optional); see the README, "Declared environments".`
	bad := func(format string, args ...any) error {
		return errcode.New(errcode.Usage, "%s: %s", filename, fmt.Sprintf(format, args...)).WithHint(hint)
	}
	// HCL's diagnostics already start with the file name and position.
	p := hclparse.NewParser()
	hf, diags := p.ParseHCL(src, filename)
	if diags.HasErrors() {
		return Declared{}, errcode.New(errcode.Usage, "%s", diags.Error()).WithHint(hint)
	}
	var f file
	if diags := gohcl.DecodeBody(hf.Body, nil, &f); diags.HasErrors() {
		return Declared{}, errcode.New(errcode.Usage, "%s", diags.Error()).WithHint(hint)
	}
	d := Declared{Source: filename}
	var err error
	for _, b := range f.Environments {
		name := Normalize(b.Name)
		if err := runctx.ValidName("environment", name); err != nil {
			return Declared{}, bad("%s", errcode.As(err).Message)
		}
		if slices.ContainsFunc(d.Environments, func(e Environment) bool { return e.Name == name }) {
			return Declared{}, bad("environment %q is declared twice (names are matched case-insensitively)", name)
		}
		e := Environment{Name: name, Protected: b.Protected != nil && *b.Protected}
		if name == Production {
			if b.Protected != nil && !*b.Protected {
				return Declared{}, bad("environment %q is always protected; remove protected = false", name)
			}
			e.Protected = true
		}
		if b.Approvers != nil {
			if !e.Protected {
				return Declared{}, bad("environment %q lists approvers but is not protected; add protected = true", name)
			}
			for _, a := range *b.Approvers {
				if a = strings.TrimSpace(a); a != "" {
					e.Approvers = append(e.Approvers, a)
				}
			}
			if len(e.Approvers) == 0 {
				return Declared{}, bad("environment %q lists no approvers, so no run could ever be approved; name at least one, or remove approvers to accept any name", name)
			}
		}
		if e.Identity, err = identity(f.Identity, b.Identity); err != nil {
			return Declared{}, bad("environment %q: %s", name, err)
		}
		e.AddressOwned = union(f.AddressOwned, b.AddressOwned)
		e.Policies = union(f.Policies, b.Policies)
		d.Environments = append(d.Environments, e)
	}
	if len(d.Environments) == 0 {
		return Declared{}, bad("no environment is declared")
	}
	if d.Watch, err = watch(f.Watch, f.Stacks); err != nil {
		return Declared{}, bad("%s", err)
	}
	return d, nil
}

// watch is the declared watch lists by stack directory ("" for every
// stack), each directory cleaned and relative, each list non-empty.
func watch(top []string, stacks []struct {
	Dir   string   `hcl:"dir,label"`
	Watch []string `hcl:"watch,optional"`
}) (map[string][]string, error) {
	out := map[string][]string{}
	if w := union(nil, top); len(w) > 0 {
		out[""] = w
	}
	for _, s := range stacks {
		dir := filepath.ToSlash(filepath.Clean(strings.TrimSpace(s.Dir)))
		if filepath.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
			return nil, fmt.Errorf("stack %q: the directory must be relative to %s's directory and inside it", s.Dir, FileName)
		}
		if dir == "." {
			dir = ""
		}
		if _, dup := out[dir]; dup && dir != "" {
			return nil, fmt.Errorf("stack %q is declared twice", s.Dir)
		}
		out[dir] = union(out[dir], s.Watch)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// identity merges the identity schemes declared for all environments
// (top) with one environment's (own, which wins per type), refusing an
// empty list or a blank attribute name: either would identify objects by
// nothing.
func identity(top, own map[string][]string) (map[string][]string, error) {
	if len(top) == 0 && len(own) == 0 {
		return nil, nil
	}
	out := map[string][]string{}
	for _, m := range []map[string][]string{top, own} {
		for typ, attrs := range m {
			if len(attrs) == 0 {
				return nil, fmt.Errorf("identity of %s lists no attribute; name at least one, or leave the type out to identify its objects by id", typ)
			}
			for _, a := range attrs {
				if strings.TrimSpace(a) == "" {
					return nil, fmt.Errorf("identity of %s names a blank attribute", typ)
				}
			}
			out[typ] = slices.Clone(attrs)
		}
	}
	return out, nil
}

// union is the types of top and own, each once, in order.
func union(top, own []string) []string {
	var out []string
	for _, typ := range append(slices.Clone(top), own...) {
		if typ = strings.TrimSpace(typ); typ != "" && !slices.Contains(out, typ) {
			out = append(out, typ)
		}
	}
	return out
}

// Names are the declared environments' names, in the order declared.
func (d Declared) Names() []string {
	out := make([]string, len(d.Environments))
	for i, e := range d.Environments {
		out[i] = e.Name
	}
	return out
}

// Lookup returns the declared environment that name matches after
// Normalize, or ENV_UNDECLARED naming the declared ones.
func (d Declared) Lookup(name string) (Environment, error) {
	n := Normalize(name)
	for _, e := range d.Environments {
		if e.Name == n {
			return e, nil
		}
	}
	where := "the defaults (no " + FileName + " found)"
	if d.Source != "" {
		where = d.Source
	}
	return Environment{}, errcode.New(errcode.EnvUndeclared, "environment %q is not declared; %s declares: %s", strings.TrimSpace(name), where, strings.Join(d.Names(), ", ")).
		WithHint(fmt.Sprintf("Use one of %s, or declare it with environment %q {} in %s at the repository root.", strings.Join(d.Names(), ", "), n, FileName)).
		With("environment", strings.TrimSpace(name)).With("declared", d.Names())
}

// Approve checks the approver of a run that writes a protected environment
// and returns the name to record: approver without surrounding space. An
// unprotected environment needs none and returns approver as given. Errors
// are ENV_NOT_APPROVED: no approver, or one the declaration does not list.
func (e Environment) Approve(approver string) (string, error) {
	name := strings.TrimSpace(approver)
	if !e.Protected {
		return name, nil
	}
	if name == "" {
		err := errcode.New(errcode.EnvNotApproved, "environment %s is protected and needs a named approver", e.Name)
		if e.Approvers != nil {
			err = err.WithHint(fmt.Sprintf("Pass --approved-by NAME or set SPONSON_APPROVED_BY, with one of the approvers %s declares for %s: %s.",
				FileName, e.Name, strings.Join(e.Approvers, ", ")))
		}
		return "", err.With("environment", e.Name)
	}
	if e.Approvers != nil && !slices.Contains(e.Approvers, name) {
		return "", errcode.New(errcode.EnvNotApproved, "%q may not approve runs in environment %s", name, e.Name).
			WithHint(fmt.Sprintf("Name one of the approvers %s declares for %s: %s.", FileName, e.Name, strings.Join(e.Approvers, ", "))).
			With("environment", e.Name).With("approver", name).With("approvers", slices.Clone(e.Approvers))
	}
	return name, nil
}
