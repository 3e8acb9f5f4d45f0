package mcpcmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// An MCP server decides its rules once, at start (docs/design.md §4.6): its
// root (the repository of its working directory, or --root), the
// environments that root declares and their protection. A tool call can
// narrow what a run does, never widen it: every path it names resolves
// inside the root, symlinks resolved, and a directory that declares
// environments of its own is refused, so an agent cannot write a
// sponson.hcl that unprotects an environment.

// mcpPathParams are the parameters that name files or directories.
var mcpPathParams = []string{"directory", "var_files", "summary", "out", "plan_file", "gitlab_report"}

// mcpRoot returns the root of a server started in dir with --root flag:
// flag when given, else the repository holding dir, else dir; absolute and
// with symlinks resolved.
func mcpRoot(dir, flag string) (string, error) {
	root := flag
	if root == "" {
		root = repositoryRoot(dir)
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", errcode.Wrap(errcode.Usage, err, "--root %q", root)
	}
	return abs, nil
}

// repositoryRoot is the nearest directory from dir up that holds .git, or
// dir when there is none.
func repositoryRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return abs
		}
	}
}

// confine refuses a call whose path parameters resolve outside the
// server's root, or whose directory declares its own environments.
func (s *mcpServer) confine(tool string, args ToolArgs) error {
	for _, name := range mcpPathParams {
		raw, ok := args[name]
		if !ok || string(raw) == "null" {
			continue
		}
		p := toolParam{Name: name, kind: kindString}
		if name == "var_files" {
			p.kind = kindStrings
		}
		vals, err := p.values(raw)
		if err != nil {
			return errcode.Wrap(errcode.Usage, err, "%s: parameter %s", tool, name)
		}
		for _, v := range vals {
			if err := s.inside(v); err != nil {
				return errcode.New(errcode.Usage, "%s: %s %q is refused: %v", tool, name, v, err).
					WithHint(fmt.Sprintf("Name paths inside %s, the root this MCP server was started with (--root).", s.root)).
					With("parameter", name)
			}
		}
	}
	dir := s.abs(orDefault(contextFlags(args)["directory"], "."))
	decl, err := environments.Load(dir)
	if err != nil {
		return err
	}
	if decl.Source != s.decl.Source {
		return errcode.New(errcode.Usage, "%s: directory %s declares its own environments (%s); this MCP server runs under %s", tool, dir, orDefault(decl.Source, "the defaults"), orDefault(s.decl.Source, "the defaults, no sponson.hcl")).
			WithHint("The environments and their protection are the server's, read at its start: remove that sponson.hcl, or start a server in that repository.")
	}
	return nil
}

// abs is p from the server's working directory.
func (s *mcpServer) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(s.cwd, p)
}

// inside reports why p is not inside the root: the longest part of it
// that exists is resolved (symlinks included) and the rest appended.
func (s *mcpServer) inside(p string) error {
	path := s.abs(p)
	rest := ""
	for {
		resolved, err := filepath.EvalSymlinks(path)
		if err == nil {
			path = filepath.Join(resolved, rest)
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		parent := filepath.Dir(path)
		if parent == path {
			break
		}
		rest = filepath.Join(filepath.Base(path), rest)
		path = parent
	}
	rel, err := filepath.Rel(s.root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("it is outside the server's root %s", s.root)
	}
	return nil
}

// protected reports whether the call's environment is protected under the
// server's declaration.
func (s *mcpServer) protected(args ToolArgs) (environments.Environment, bool) {
	name := orDefault(contextFlags(args)["environment"], orDefault(s.io.Getenv("SPONSON_CTX_ENV"), "preview"))
	env, err := s.decl.Lookup(name)
	if err != nil {
		// Undeclared: the run refuses it; production is protected even so.
		env = environments.Environment{Name: environments.Normalize(name), Protected: environments.Normalize(name) == environments.Production}
	}
	return env, env.Protected
}
