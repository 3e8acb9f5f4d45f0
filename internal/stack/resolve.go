package stack

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Reference is another stack as a configuration names it: in the `stack`
// of a sponson_outputs data source or the `after` of sponson_scope.
type Reference struct {
	// Name is the stack's name (issue 13's rule, or its declared name).
	Name string
	// Dir is the stack's directory when the reference named one of the
	// repository, "" when it was a full stack name.
	Dir string
}

// Resolve decides the stack a reference names, from the configuration in
// fromDir (absolute). A reference is the stack's directory relative to the
// repository root ("stacks/network"), named the way that directory's own
// runs name it (its declared stack attribute, else the repository and the
// directory); or, when it contains "//" or no such directory exists, a full
// stack name ("github.com/acme/infra//stacks/network"). SPONSON_STACK
// names the run's own stack only, so it is not consulted for another.
func Resolve(fromDir, ref string, src Sources) (Reference, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Reference{}, errcode.New(errcode.Usage, "an empty stack reference").
			WithHint("Name the stack by its directory in the repository (stacks/network) or by its full name.")
	}
	if !strings.Contains(ref, "//") && src.Git != nil {
		if top, err := src.Git("rev-parse", "--show-toplevel"); err == nil && top != "" {
			dir := filepath.Join(top, filepath.FromSlash(strings.Trim(ref, "/")))
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() && inside(top, dir) {
				read := src.Declared
				if read == nil {
					read = Declared
				}
				declared, err := read(dir)
				if err != nil {
					return Reference{}, err
				}
				getenv := src.Getenv
				own := Sources{Git: src.Git, EvalSymlinks: src.EvalSymlinks, Getenv: func(k string) string {
					if k == EnvVar || getenv == nil {
						return ""
					}
					return getenv(k)
				}}
				r, err := Detect(dir, "", declared, own)
				if err != nil {
					return Reference{}, err
				}
				return Reference{Name: r.Name, Dir: dir}, nil
			}
		}
	}
	if err := store.CheckStack(ref); err != nil {
		return Reference{}, err
	}
	return Reference{Name: ref}, nil
}

// inside reports whether dir is top or below it.
func inside(top, dir string) bool {
	rel, err := filepath.Rel(top, dir)
	return err == nil && filepath.IsLocal(rel)
}
