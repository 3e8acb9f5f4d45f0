package stackgraph

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Changed is the subset of the set that changed files touch, and every
// stack that depends on one of those, each with its reasons, in the order
// of the subset (depths recomputed within it: a changed stack whose
// dependency did not change waits for nothing). files are paths relative
// to the repository root, slash-separated, as `git diff --name-only` gives
// them. A file touches a stack when it is under the stack's directory (and
// under no deeper stack's), under a local module the stack uses (followed
// through modules of modules), or is a sponson.hcl in the stack's directory
// or one above it (its environments), or is one of varFiles (the run's
// -var-file paths, relative to each stack's directory as the engine reads
// them, or absolute).
func (s *Set) Changed(files []string, varFiles ...string) *Set {
	return s.ChangedBy(Changes{Files: files, VarFiles: varFiles})
}

// Changes are what a selection of changed stacks compares.
type Changes struct {
	// Files are the changed files, relative to the repository root and
	// slash-separated.
	Files []string
	// Uncommitted are those of Files that only the working tree changed
	// (modified, staged or not tracked): the reasons say "not committed"
	// after their names.
	Uncommitted []string
	// VarFiles are the run's -var-file paths (see Changed).
	VarFiles []string
}

// ChangedBy is Changed with files marked as not committed.
func (s *Set) ChangedBy(c Changes) *Set {
	uncommitted := map[string]bool{}
	for _, f := range c.Uncommitted {
		uncommitted[f] = true
	}
	name := func(files []string) string {
		named := make([]string, len(files))
		for i, f := range files {
			named[i] = f
			if uncommitted[f] {
				named[i] += " (not committed)"
			}
		}
		return list(named)
	}
	reasons := map[string][]string{}
	for _, st := range s.Stacks {
		reasons[st.Directory] = s.touched(st, c.Files, c.VarFiles, name)
	}
	// Dependents, in order: a stack's dependencies come before it.
	for _, st := range s.Stacks {
		for _, n := range st.Needs {
			if len(reasons[n]) > 0 {
				reasons[st.Directory] = append(reasons[st.Directory], "depends on "+n+", which is listed")
			}
		}
	}
	out := &Set{top: s.top, Warnings: s.Warnings}
	for _, st := range s.Stacks {
		if r := reasons[st.Directory]; len(r) > 0 {
			c := *st
			c.Reasons = r
			out.Stacks = append(out.Stacks, &c)
		}
	}
	_ = out.order() // a subset of an acyclic set is acyclic
	return out
}

// touched says why files touch st, nil when they do not: its own files,
// its modules' files, its environments, its -var-files.
func (s *Set) touched(st *Stack, files, varFiles []string, name func([]string) string) []string {
	var reasons, own, envs []string
	mods := map[string][]string{}
	modules := s.modules(st)
	for _, f := range files {
		if path.Base(f) == "sponson.hcl" && under(st.Directory, path.Dir(f)) {
			envs = append(envs, f)
			continue
		}
		if s.owner(f) == st {
			own = append(own, f)
			continue
		}
		for _, m := range modules {
			if under(f, m) {
				mods[m] = append(mods[m], f)
			}
		}
	}
	if len(own) > 0 {
		reasons = append(reasons, "changed: "+name(own))
	}
	names := make([]string, 0, len(mods))
	for m := range mods {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		reasons = append(reasons, fmt.Sprintf("its module %s changed: %s", m, name(mods[m])))
	}
	if len(envs) > 0 {
		reasons = append(reasons, "the environments changed: "+name(envs))
	}
	for _, vf := range varFiles {
		p := s.repoPath(st.Directory, vf)
		if slices.Contains(files, p) && !slices.Contains(own, p) {
			reasons = append(reasons, "its -var-file "+vf+" changed: "+name([]string{p}))
		}
	}
	return reasons
}

// owner is the stack a file belongs to: the deepest whose directory holds
// it.
func (s *Set) owner(f string) *Stack {
	var best *Stack
	for _, st := range s.Stacks {
		if under(f, st.Directory) && (best == nil || len(st.Directory) > len(best.Directory)) {
			best = st
		}
	}
	return best
}

// modules returns the repository-relative directories of the local modules
// st uses, transitively.
func (s *Set) modules(st *Stack) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(from string, sources []string)
	walk = func(from string, sources []string) {
		for _, src := range sources {
			m := moduleDir(from, src)
			if seen[m] || strings.HasPrefix(m, "../") || m == ".." {
				continue
			}
			seen[m] = true
			out = append(out, m)
			d, err := readDeclared(filepath.Join(s.top, filepath.FromSlash(m)))
			if err == nil {
				walk(m, d.modules)
			}
		}
	}
	walk(st.Directory, st.decl.modules)
	sort.Strings(out)
	return out
}

// repoPath is a file the configuration in dir names (relative to dir, or
// absolute) as a path relative to the repository root.
func (s *Set) repoPath(dir, name string) string {
	if filepath.IsAbs(name) {
		if rel, err := filepath.Rel(s.top, name); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return path.Clean(path.Join(dir, filepath.ToSlash(name)))
}

// under reports whether the slash path f is dir or below it; everything is
// under ".".
func under(f, dir string) bool {
	return dir == "." || f == dir || strings.HasPrefix(f, dir+"/")
}

// list names up to three files, then how many more.
func list(files []string) string {
	if len(files) <= 3 {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:3], ", "), len(files)-3)
}
