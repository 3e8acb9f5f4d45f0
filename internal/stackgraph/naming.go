package stackgraph

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
)

// naming names the stacks Discover finds, and the stacks their references
// name, by internal/stack's rule (stack.Detect, stack.Resolve), in a
// constant number of git processes: the two questions the rule asks git
// (the repository's root, its origin) have one answer per repository, so
// each is asked once per repository and not once per stack; and a
// directory's declared stack attribute is read from the files Discover
// parsed, not parsed again (docs/design.md §4.7 "Many stacks").
type naming struct {
	getenv func(string) string
	git    func(dir string) func(args ...string) (string, error)
	// top is the repository's root Discover was given; decls its parsed
	// directories, by their path relative to top.
	top   string
	decls map[string]declared
	// repos holds each directory looked at: the nearest directory at or
	// above it that holds .git, "" when none does.
	repos map[string]string
	// answers are git's answers, by repository and question.
	answers map[string]answer
	// tops are the repository roots git printed, each with whether it is
	// top (symbolic links followed); names the declared stack attributes
	// read, by directory.
	tops  map[string]bool
	names map[string]declaredName
	// reals are the paths evalSymlinks followed.
	reals map[string]answer
}

type answer struct {
	out string
	err error
}

type declaredName struct {
	name string
	err  error
}

func newNaming(o Options, decls map[string]declared) *naming {
	git := o.Git
	if git == nil {
		git = func(dir string) func(args ...string) (string, error) { return runctx.ProcessSources(dir).Git }
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return &naming{
		getenv: func(k string) string {
			if k == stack.EnvVar {
				return "" // it names one run's stack, not each of a repository's
			}
			return getenv(k)
		},
		git: git, top: o.Top, decls: decls,
		repos: map[string]string{}, answers: map[string]answer{},
		tops: map[string]bool{}, names: map[string]declaredName{}, reals: map[string]answer{},
	}
}

// name is the name of the stack in dir (absolute), whose module Discover
// read as d.
func (n *naming) name(dir string, d declared) (string, error) {
	if d.stackErr != nil {
		return "", d.stackErr
	}
	r, err := stack.Detect(dir, "", d.stack, n.sources(dir))
	return r.Name, err
}

// resolve is stack.Resolve of a reference of the configuration in from.
func (n *naming) resolve(from, ref string) (stack.Reference, error) {
	return stack.Resolve(from, ref, n.sources(from))
}

func (n *naming) sources(dir string) stack.Sources {
	return stack.Sources{Getenv: n.getenv, Git: n.gitIn(dir), Declared: n.declared, EvalSymlinks: n.evalSymlinks}
}

// evalSymlinks is filepath.EvalSymlinks of a clean absolute path, each
// directory looked at once for the set: a path whose last element is not
// a symbolic link is its parent's real path and that element, so the
// directories of 10,000 stacks cost one lstat each, not one per element
// of each, twice per name.
func (n *naming) evalSymlinks(p string) (string, error) {
	if r, ok := n.reals[p]; ok {
		return r.out, r.err
	}
	parent := filepath.Dir(p)
	var r answer
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink != 0 || parent == p || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		r.out, r.err = filepath.EvalSymlinks(p)
	} else if rp, err := n.evalSymlinks(parent); err != nil {
		r.err = err
	} else {
		r.out = filepath.Join(rp, filepath.Base(p))
	}
	n.reals[p] = r
	return r.out, r.err
}

const showToplevel = "rev-parse\x00--show-toplevel"

// shared are the git questions whose answer is the repository's, the same
// in every directory of it.
var shared = map[string]bool{
	showToplevel:                  true,
	"remote\x00get-url\x00origin": true,
}

// gitIn runs git in dir, answering a shared question from the first
// directory of the same repository that asked it. Two directories are of
// one repository when the nearest .git at or above each is the same one:
// git finds a directory's repository by that walk, so no directory between
// them starts another (a nested repository, a submodule).
func (n *naming) gitIn(dir string) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		q := strings.Join(args, "\x00")
		if !shared[q] {
			return n.git(dir)(args...)
		}
		key := n.repo(dir) + "\x00" + q
		if a, ok := n.answers[key]; ok {
			return a.out, a.err
		}
		out, err := n.git(dir)(args...)
		n.answers[key] = answer{out, err}
		if q == showToplevel && err == nil && out != "" {
			if _, ok := n.tops[out]; !ok {
				resolved, rerr := filepath.EvalSymlinks(out)
				n.tops[out] = rerr == nil && resolved == n.top
			}
		}
		return out, err
	}
}

// repo is the nearest directory at or above dir (absolute, clean) that
// holds .git, "" when none does; each directory is looked at once.
func (n *naming) repo(dir string) string {
	var seen []string
	r := ""
	for d := dir; ; {
		if known, ok := n.repos[d]; ok {
			r = known
			break
		}
		seen = append(seen, d)
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			r = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	for _, d := range seen {
		n.repos[d] = r
	}
	return r
}

// declared is the stack attribute declared in dir (absolute): from the
// module Discover parsed when dir is one of its directories, else read
// (stack.Declared) once.
func (n *naming) declared(dir string) (string, error) {
	rel, ok := n.rel(dir)
	key := dir
	if ok {
		key = rel
	}
	if d, ok := n.names[key]; ok {
		return d.name, d.err
	}
	var d declaredName
	if m, found := n.decls[rel]; ok && found {
		d.name, d.err = m.stack, m.stackErr
	} else {
		d.name, d.err = stack.Declared(dir)
	}
	n.names[key] = d
	return d.name, d.err
}

// rel is dir's path relative to the repository's root Discover was given,
// slash-separated, false when dir is not under it. dir is one git's root
// joined with a path (stack.Resolve): git prints its root with symbolic
// links followed as it found them, which may differ from top's.
func (n *naming) rel(dir string) (string, bool) {
	if r, ok := relUnder(n.top, dir); ok {
		return r, true
	}
	for t, same := range n.tops {
		if r, ok := relUnder(t, dir); ok && same {
			return r, true
		}
	}
	return "", false
}

// relUnder is p relative to dir, slash-separated, false when p is not dir
// or below it.
func relUnder(dir, p string) (string, bool) {
	r, err := filepath.Rel(dir, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return filepath.ToSlash(r), true
}
