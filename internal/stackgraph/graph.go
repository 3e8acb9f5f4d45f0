// Package stackgraph is the set of stacks of a repository (docs/design.md
// §2.16 "Stacks", §4.7 "Many stacks"): which directories are stacks, which
// stacks each depends on, their order, and which of them a change touches.
//
// A stack is a directory whose root module declares a sponson_scope
// resource; hidden directories (.git, .terraform, .sponson) are not looked
// into, and a directory without sponson_scope (a module) is no stack. A
// stack depends on every stack named in the `after` of its sponson_scope
// and in the `stack` of its sponson_outputs data sources, read from the
// files before any engine starts (so they must be literals). Its depth is
// 0 without dependencies in the set, else one more than its deepest
// dependency: the stacks of one depth can run at the same time. The order
// is by depth, then directory (`stacks --json`; `--gitlab-pipeline` through
// internal/stackpipeline). Two stacks of one name, and a cycle
// (STACK_CYCLE), are refused before anything runs.
//
// Changed stacks (docs/design.md §4.7 "Many stacks"): the changed files are
// `git diff --name-only BASE...HEAD` plus uncommitted and untracked files. A
// stack is listed when one of them is under its directory, in a local
// module it uses, a sponson.hcl at or above it, or a file it reads
// (reads.go: the literal paths of file() and its kin, symbolic links'
// targets, -var-files, the watch globs of sponson.hcl); a stack that reads
// a path not known before the engine runs is listed whenever anything
// changed. Then every stack that depends on a listed one is listed. The
// cost is bounded by the repository: git runs a constant number of times
// (naming.go), each directory is read and each file parsed once, and only
// what is needed after the parse is kept. Removed stacks (Set.Removed) are
// those of the merge base whose names HEAD no longer has.
package stackgraph

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
)

// Stack is one stack of the set.
type Stack struct {
	// Name is the stack's name (internal/stack).
	Name string `json:"stack"`
	// Directory is the stack's directory relative to the repository root,
	// slash-separated, "." for the root: what --chdir takes there.
	Directory string `json:"directory"`
	// Depth is the stack's layer in the order of the set.
	Depth int `json:"depth"`
	// Needs are the directories of the stacks of the set it depends on.
	Needs []string `json:"needs"`
	// Reasons say why a stack is in a set of changed stacks.
	Reasons []string `json:"reasons,omitempty"`
	// RenamedTo and RenamedDirectory name the stack of HEAD a removed
	// stack's configuration moved to (Set.Removed).
	RenamedTo        string `json:"renamedTo,omitempty"`
	RenamedDirectory string `json:"renamedDirectory,omitempty"`
	// Dir is the absolute directory (a removed stack's is in a checkout
	// of the base revision).
	Dir string `json:"-"`

	decl declared
}

// Set is stacks in dependency order: by depth, then by directory.
type Set struct {
	Stacks []*Stack
	// Warnings are references that name no stack of the set: another
	// repository's stack, or a mistake the run will report.
	Warnings []string
	top      string
	// decls are the root modules read, by directory relative to top;
	// reals the paths with their links followed (links.go).
	decls   map[string]declared
	reals   map[string]string
	watches map[string]*watchDecl
}

// Options say where to look and how to name.
type Options struct {
	// Root is the directory searched (absolute), Top the repository root
	// (absolute), Root itself outside a repository.
	Root, Top string
	// Getenv is the process's environment and Git runs git in a
	// directory (nil: the git CLI, runctx.ProcessSources): with them the
	// stacks are named by internal/stack's rule, asking git once per
	// repository, not once per stack (naming.go).
	Getenv func(string) string
	Git    func(dir string) func(args ...string) (string, error)
	// Name and Resolve, when set, name the stack of a directory and decide
	// the stack a reference of the configuration in fromDir names instead
	// (a test's own naming).
	Name    func(dir string) (string, error)
	Resolve func(fromDir, ref string) (stack.Reference, error)
}

// namers are o's Name and Resolve, or those of the stacks' own naming
// (naming.go) over the modules Discover reads into decls.
func (o Options) namers(decls map[string]declared) (name func(dir string, d declared) (string, error), resolve func(fromDir, ref string) (stack.Reference, error)) {
	var n *naming
	if o.Name == nil || o.Resolve == nil {
		n = newNaming(o, decls)
	}
	if o.Name != nil {
		name = func(dir string, _ declared) (string, error) { return o.Name(dir) }
	} else {
		name = n.name
	}
	if resolve = o.Resolve; resolve == nil {
		resolve = n.resolve
	}
	return name, resolve
}

// find walks root (absolute, in the repository whose root is top) for the
// stacks, reading each directory's module into decls (by its path relative
// to top). Each directory is read once: its entries give its configuration
// files and the directories walked next, in name order; hidden directories
// and node_modules are not entered.
func find(root, top string, decls map[string]declared, name func(dir string, d declared) (string, error)) ([]*Stack, error) {
	var stacks []*Stack
	var walk func(p string) error
	walk = func(p string) error {
		entries, err := os.ReadDir(p)
		if err != nil {
			return errcode.Wrap(errcode.Usage, err, "reading the configuration in %s", p)
		}
		decl, err := declaredIn(p, entries)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(top, p)
		if err != nil {
			return err
		}
		decls[filepath.ToSlash(rel)] = decl
		if decl.isStack {
			sn, err := name(p, decl)
			if err != nil {
				return err
			}
			stacks = append(stacks, &Stack{Name: sn, Directory: filepath.ToSlash(rel), Dir: p, decl: decl})
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules" {
				continue
			}
			if err := walk(filepath.Join(p, e.Name())); err != nil {
				return err
			}
		}
		return nil
	}
	fi, err := os.Lstat(root)
	if err == nil && fi.IsDir() {
		err = walk(root)
	}
	return stacks, err
}

// Discover finds the stacks under o.Root and orders them, refusing a cycle
// (STACK_CYCLE) and two directories of one stack name (USAGE).
func Discover(o Options) (*Set, error) {
	decls := map[string]declared{}
	name, resolve := o.namers(decls)
	stacks, err := find(o.Root, o.Top, decls, name)
	if err != nil {
		return nil, errcode.As(err)
	}
	set := &Set{top: o.Top, decls: decls, reals: map[string]string{}, watches: map[string]*watchDecl{}}
	byName := map[string]*Stack{}
	for _, s := range stacks {
		if other, ok := byName[s.Name]; ok {
			return nil, errcode.New(errcode.Usage, "the stacks in %s and %s have one name, %s", other.Directory, s.Directory, s.Name).
				WithHint("Give one of them another stack attribute in its sponson_scope: two root modules sharing a name would share state.")
		}
		byName[s.Name] = s
	}
	for _, s := range stacks {
		seen := map[string]bool{}
		s.Needs = []string{}
		for _, ref := range append(append([]string{}, s.decl.after...), s.decl.reads...) {
			r, err := resolve(s.Dir, ref)
			if err != nil {
				return nil, errcode.As(err).WithHint(fmt.Sprintf("Fix the stack reference %q in %s.", ref, s.Directory))
			}
			dep, ok := byName[r.Name]
			if !ok {
				set.Warnings = append(set.Warnings, fmt.Sprintf("%s names stack %q, which is not a stack under %s: it is not ordered before %s", s.Directory, ref, o.Root, s.Directory))
				continue
			}
			if !seen[dep.Directory] {
				seen[dep.Directory] = true
				s.Needs = append(s.Needs, dep.Directory)
			}
		}
		sort.Strings(s.Needs)
	}
	set.Stacks = stacks
	if err := set.order(); err != nil {
		return nil, err
	}
	return set, nil
}

// order computes the depths (refusing a cycle, naming it) and sorts.
func (s *Set) order() error {
	byDir := map[string]*Stack{}
	for _, st := range s.Stacks {
		byDir[st.Directory] = st
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(st *Stack) error
	visit = func(st *Stack) error {
		switch state[st.Directory] {
		case done:
			return nil
		case visiting:
			i := slices.Index(path, st.Directory)
			cycle := append(append([]string{}, path[i:]...), st.Directory)
			return errcode.New(errcode.StackCycle, "the stacks depend on each other in a cycle: %s", strings.Join(cycle, " → ")).
				With("cycle", cycle)
		}
		state[st.Directory] = visiting
		path = append(path, st.Directory)
		depth := 0
		for _, n := range st.Needs {
			dep, ok := byDir[n]
			if !ok {
				continue // not in this set (a subset of changed stacks)
			}
			if err := visit(dep); err != nil {
				return err
			}
			depth = max(depth, dep.Depth+1)
		}
		st.Depth = depth
		path = path[:len(path)-1]
		state[st.Directory] = done
		return nil
	}
	dirs := make([]string, 0, len(s.Stacks))
	for _, st := range s.Stacks {
		dirs = append(dirs, st.Directory)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := visit(byDir[d]); err != nil {
			return err
		}
	}
	sort.SliceStable(s.Stacks, func(i, j int) bool {
		a, b := s.Stacks[i], s.Stacks[j]
		if a.Depth != b.Depth {
			return a.Depth < b.Depth
		}
		return a.Directory < b.Directory
	})
	return nil
}

// Dependents returns the directories of the stacks of the set that depend
// on dir, directly.
func (s *Set) Dependents(dir string) []string {
	var out []string
	for _, st := range s.Stacks {
		if slices.Contains(st.Needs, dir) {
			out = append(out, st.Directory)
		}
	}
	return out
}
