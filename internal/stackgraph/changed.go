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
// them, or absolute), or is a file the stack reads (reads: file functions,
// symbolic links, watch lists). A stack that reads a path not known before
// the engine runs is touched by any file (docs/design.md §4.7 "Many
// stacks").
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
	if len(c.Files) > 0 {
		modules := map[string][]string{}
		var dirs []string
		for _, st := range s.Stacks {
			modules[st.Directory] = s.modules(st)
			dirs = append(append(dirs, st.Directory), modules[st.Directory]...)
		}
		links := s.links(dirs)
		w := &work{owners: map[string]*Stack{}}
		for _, f := range c.Files {
			w.owners[f] = s.owner(f)
			w.elems = append(w.elems, strings.Split(f, "/"))
		}
		for _, l := range links {
			w.owners[l] = s.owner(l)
		}
		for _, st := range s.Stacks {
			reasons[st.Directory] = s.touched(st, c, modules[st.Directory], links, w, name)
		}
	}
	// Dependents, in order: a stack's dependencies come before it.
	for _, st := range s.Stacks {
		for _, n := range st.Needs {
			if len(reasons[n]) > 0 {
				reasons[st.Directory] = append(reasons[st.Directory], "depends on "+n+", which is listed")
			}
		}
	}
	out := &Set{top: s.top, Warnings: s.Warnings, decls: s.decls, reals: s.reals, watches: s.watches}
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

// touched says why the changes touch st, nil when they do not: its own
// files, its modules' files, its environments, its -var-files, and what it
// reads (reads), a change of a file already named giving no second reason.
// When nothing else touches it, a read whose path is not known before the
// engine runs touches it (any change may be what it reads), unless the
// stack declares its own watch list: that list is then what it reads.
func (s *Set) touched(st *Stack, c Changes, modules, links []string, w *work, name func([]string) string) []string {
	var reasons, own, envs []string
	named := map[string]bool{}
	mods := map[string][]string{}
	for _, f := range c.Files {
		if path.Base(f) == "sponson.hcl" && under(st.Directory, path.Dir(f)) {
			envs = append(envs, f)
			named[f] = true
			continue
		}
		if w.owners[f] == st {
			own = append(own, f)
			named[f] = true
			continue
		}
		for _, m := range modules {
			if under(f, m) {
				mods[m] = append(mods[m], f)
				named[f] = true
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
	rs := make([]read, 0, len(c.VarFiles))
	for _, vf := range c.VarFiles {
		rs = append(rs, read{label: "its -var-file " + vf + " changed", globs: []string{escapeGlob(s.repoPath(st.Directory, vf))}})
	}
	more, unresolved := s.reads(st, modules, links, w)
	for _, r := range append(rs, more...) {
		var hit []string
		var globs []glob
		for _, g := range s.withReal(r.globs) {
			globs = append(globs, compileGlob(g))
		}
		for i, f := range c.Files {
			if !named[f] && slices.ContainsFunc(globs, func(g glob) bool { return g.match(w.elems[i]) }) {
				hit = append(hit, f)
			}
		}
		if len(hit) > 0 {
			reasons = append(reasons, r.label+": "+name(hit))
		}
	}
	if len(reasons) == 0 {
		for _, u := range unresolved {
			reasons = append(reasons, fmt.Sprintf("reads a file through %s at %s, which sponson cannot resolve before the engine runs; declare it in watch", u.text, u.where(s.top)))
		}
	}
	return reasons
}

// work is what ChangedBy computes once for every stack: the stack each
// changed file and link belongs to, and the elements of each changed file.
type work struct {
	owners map[string]*Stack
	elems  [][]string
}

// read is a set of files a stack reads besides its own and its modules',
// with the label of the reason a change of one gives.
type read struct {
	label string
	globs []string
}

// reads are what st reads outside its own files, known before the engine
// runs: the paths of the file functions (fileFuncs) in its root module and
// its local modules, the targets of the symbolic links among links that
// are its own or its modules', and the globs of its watch lists; and the
// calls whose paths are not known (their reads unresolved). A declaration
// that cannot be read is a read of every file: it may watch any.
func (s *Set) reads(st *Stack, modules, links []string, w *work) (out []read, unresolved []readCall) {
	rootAbs := filepath.Join(s.top, filepath.FromSlash(st.Directory))
	for _, dir := range append([]string{st.Directory}, modules...) {
		d, ok := s.declared(dir)
		if !ok {
			continue
		}
		ev := newModuleEval(filepath.Join(s.top, filepath.FromSlash(dir)), rootAbs, d.locals)
		for _, call := range d.calls {
			globs, ok := ev.readGlobs(call, s.top)
			if !ok {
				unresolved = append(unresolved, call)
				continue
			}
			if len(globs) > 0 {
				out = append(out, read{label: fmt.Sprintf("%s() at %s reads %s, which changed", call.fn, call.where(s.top), strings.Join(globs, ", ")), globs: globs})
			}
		}
	}
	for _, l := range links {
		if w.owners[l] != st && !slices.ContainsFunc(modules, func(m string) bool { return under(l, m) }) {
			continue
		}
		if t := s.real(l); t != l && t != ".." && !strings.HasPrefix(t, "../") {
			out = append(out, read{label: fmt.Sprintf("its symbolic link %s points to %s, which changed", l, t), globs: []string{escapeGlob(t)}})
		}
	}
	if w := s.watchOf(st.Directory); w != nil {
		if w.err != nil {
			out = append(out, read{label: fmt.Sprintf("its watch list in %s cannot be read (%v), so every change may be one it watches", w.file, w.err), globs: []string{"**"}})
		} else {
			globs, own := w.globs(st.Directory)
			for _, g := range globs {
				out = append(out, read{label: fmt.Sprintf("%s watches %s, which changed", w.file, g), globs: []string{g}})
			}
			if own {
				unresolved = nil
			}
		}
	}
	return out, unresolved
}

// withReal is globs and, for each whose directory holds a symbolic link,
// the glob with the link followed: a change of the target is a change of
// what the glob reads.
func (s *Set) withReal(globs []string) []string {
	out := slices.Clone(globs)
	for _, g := range globs {
		dir, rest := globDir(g)
		if dir == "" {
			dir = "."
		}
		if r := s.real(dir); r != dir && r != ".." && !strings.HasPrefix(r, "../") {
			out = append(out, path.Join(escapeGlob(r), rest))
		}
	}
	return out
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
			if d, ok := s.declared(m); ok {
				walk(m, d.modules)
			}
		}
	}
	walk(st.Directory, st.decl.modules)
	sort.Strings(out)
	return out
}

// declared is the module in dir (relative to the repository's root), read
// once for the set: Discover read the directories under its root.
func (s *Set) declared(dir string) (declared, bool) {
	if d, ok := s.decls[dir]; ok {
		return d, true
	}
	d, err := readDeclared(filepath.Join(s.top, filepath.FromSlash(dir)))
	if err != nil {
		return d, false
	}
	s.decls[dir] = d
	return d, true
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
	return dir == "." || f == dir || (len(f) > len(dir) && f[len(dir)] == '/' && strings.HasPrefix(f, dir))
}

// list names up to three files, then how many more.
func list(files []string) string {
	if len(files) <= 3 {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:3], ", "), len(files)-3)
}
