package manystacks

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// StacksOptions are the options of `sponson stacks`, and the stack
// selection of plan, apply and destroy with --all or --changed.
type StacksOptions struct {
	Chdir string
	// Changed keeps the stacks that changed files between Base and HEAD
	// touch, and their dependents.
	Changed bool
	Base    string
	// GitLabPipeline is the file the GitLab child pipeline of the stacks
	// is written to, from GitLabTemplate (internal/stackpipeline).
	GitLabPipeline, GitLabTemplate string
	// varFiles are the run's -var-file paths, which --changed counts as
	// files of every stack (plan and apply only).
	varFiles []string
	// store and context are the run's --store and context flags, with
	// which a removed stack's scopes are listed (plan and apply only).
	store   string
	context runctx.Flags
	// out is plan's -out: the directory of every stack's saved plan.
	out string
}

// StacksResult is the result part of the envelope of `sponson stacks`.
type StacksResult struct {
	// Root is the directory searched; Base the revision compared with
	// (--changed only).
	Root string `json:"root"`
	// Top is the repository's root, Root outside a repository.
	Top  string `json:"-"`
	Base string `json:"base,omitempty"`
	// Uncommitted are the changed files (--changed) that only the working
	// tree changed: modified, staged, or not tracked and not ignored.
	Uncommitted []string            `json:"uncommitted,omitempty"`
	Stacks      []*stackgraph.Stack `json:"stacks"`
	// Removed are the stacks of the base that HEAD no longer has
	// (--changed), in their order: a run destroys them, in reverse, from
	// a checkout of the base (base, removed by Close).
	Removed []*RemovedStack `json:"removed,omitempty"`
	// NotStacks are the root modules under Root that declare no
	// sponson_scope (stackgraph.Set.NotStacks): no run includes them.
	NotStacks []string `json:"notStacks,omitempty"`
	base      *baseCheckout
	// changed: the selection is --changed; discovered: how many stacks the
	// repository has, changed or not (NoStacks).
	changed    bool
	discovered int
	// Layers are Stacks by depth: Layers[d] holds the stacks of depth d,
	// what one layer of a CI matrix takes (GitHub Actions:
	// fromJSON(...).result.layers[d]).
	Layers [][]*stackgraph.Stack `json:"layers"`
}

// Close removes the checkout of the base the removed stacks run in.
func (r *StacksResult) Close() {
	if r != nil {
		r.base.close()
		r.base = nil
	}
}

// BaseCommit is the merge base whose checkout the removed stacks run in,
// "" without removed stacks.
func (r *StacksResult) BaseCommit() string {
	if r == nil || r.base == nil {
		return ""
	}
	return r.base.commit
}

// layered fills Layers from Stacks.
func (r *StacksResult) layered() {
	r.Layers = [][]*stackgraph.Stack{}
	for _, s := range r.Stacks {
		for len(r.Layers) <= s.Depth {
			r.Layers = append(r.Layers, []*stackgraph.Stack{})
		}
		r.Layers[s.Depth] = append(r.Layers[s.Depth], s)
	}
}

func (o *StacksOptions) Bind(cmd *cobra.Command, verb string) {
	fs := cmd.Flags()
	fs.BoolVar(&o.Changed, "changed", false, verb+" only the stacks that changed between --base and HEAD, and the stacks that depend on them")
	fs.StringVar(&o.Base, "base", "", "the revision --changed compares HEAD with (env SPONSON_BASE; default: the pull request's target branch, else origin/HEAD, else main)")
}

// SelectStacks discovers the stacks of opts.Chdir's repository and, with
// --changed, keeps the changed ones.
func SelectStacks(ctx context.Context, getenv func(string) string, opts *StacksOptions) (*StacksResult, []string, error) {
	dir := opts.Chdir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Usage, err, "--chdir %q", opts.Chdir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, nil, errcode.New(errcode.Usage, "--chdir %s: there is no such directory", opts.Chdir).
			WithHint("Give the directory to look for stacks in: the repository root, or a directory under it.")
	}
	git := runctx.ProcessSources(dir).Git
	top := dir
	if t, err := git("rev-parse", "--show-toplevel"); err == nil && t != "" {
		top = t
		if opts.Chdir == "" {
			dir = t
		}
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if t, err := filepath.EvalSymlinks(top); err == nil {
		top = t
	}
	// --changed lists the changes while the stacks are discovered: git
	// walks the working tree while the files are parsed (issue 50).
	listed := make(chan changes, 1)
	if opts.Changed {
		go func() {
			c := changes{base: opts.Base}
			if c.base == "" {
				c.base = defaultBase(getenv, git)
			}
			c.files, c.uncommitted, c.err = changedFiles(ctx, top, c.base)
			listed <- c
		}()
	}
	set, err := stackgraph.Discover(stackgraph.Options{Root: dir, Top: top, Getenv: getenv})
	if err != nil {
		return nil, nil, err
	}
	res := &StacksResult{Root: dir, Top: top, Stacks: set.Stacks, NotStacks: set.NotStacks(), changed: opts.Changed, discovered: len(set.Stacks)}
	warnings := set.Warnings
	if opts.Changed {
		var err error
		if warnings, err = selectChanged(ctx, getenv, opts, res, set, <-listed); err != nil {
			return nil, warnings, err
		}
	}
	if res.Stacks == nil {
		res.Stacks = []*stackgraph.Stack{}
	}
	res.layered()
	return res, warnings, nil
}

// selectChanged keeps, of res's stacks, those the changes c touch and their
// dependents, and finds the stacks c removed; the warnings are set's and
// that of a change to a root module that is no stack.
func selectChanged(ctx context.Context, getenv func(string) string, opts *StacksOptions, res *StacksResult, set *stackgraph.Set, c changes) ([]string, error) {
	warnings := set.Warnings
	if c.err != nil {
		return warnings, c.err
	}
	if w := notStacksChangedWarning(res.NotStacks, append(append([]string(nil), c.files...), c.uncommitted...)); w != "" {
		warnings = append(append([]string(nil), set.Warnings...), w)
	}
	res.Base, res.Uncommitted = c.base, c.uncommitted
	res.Stacks = set.ChangedBy(stackgraph.Changes{Files: c.files, Uncommitted: c.uncommitted, VarFiles: opts.varFiles}).Stacks
	removed, b, err := removedStacks(ctx, getenv, res.Top, res.Root, c.base, c.files, set)
	if err != nil {
		return warnings, err
	}
	res.base = b
	if removed != nil {
		for _, s := range removed.Stacks {
			r := &RemovedStack{Stack: s}
			r.Environment, r.Scopes, err = scopesWithState(ctx, getenv, opts.store, res.Top, s.Dir, s.Name, opts.context)
			if err != nil {
				r.ScopesError = errcode.As(err).Message
			}
			res.Removed = append(res.Removed, r)
		}
	}
	return warnings, nil
}

// notStacksChangedWarning names the root modules without sponson_scope
// (notStacks, relative to the repository root) that a changed file (files,
// relative to it too) is in: --changed lists no stack for them, and a
// change there would otherwise pass as "no stack changed" (issue 49). ""
// when the change touches none.
func notStacksChangedWarning(notStacks, files []string) string {
	var touched []string
	for _, d := range notStacks {
		for _, f := range files {
			if d == "." || strings.HasPrefix(f, d+"/") {
				touched = append(touched, d)
				break
			}
		}
	}
	if len(touched) == 0 {
		return ""
	}
	return fmt.Sprintf("the change touches %d root %s that declare no sponson_scope, so are no stacks and no --changed run includes them: %s; declare `resource \"sponson_scope\" \"this\" {}` in each to include it",
		len(touched), cmdutil.Plural(len(touched), "module", "modules"), strings.Join(touched, ", "))
}

// NotStacksWarning names the root modules a run of every stack leaves out
// because they declare no sponson_scope, "" when there are none.
func NotStacksWarning(command string, res *StacksResult) string {
	if len(res.NotStacks) == 0 {
		return ""
	}
	shown := res.NotStacks
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(res.NotStacks)-10))
	}
	return fmt.Sprintf("%s --all skipped %d root %s that declare no sponson_scope, so are no stacks: %s; declare `resource \"sponson_scope\" \"this\" {}` in each to include it",
		command, len(res.NotStacks), cmdutil.Plural(len(res.NotStacks), "module", "modules"), strings.Join(shown, ", "))
}

// NoStacks refuses a run of every stack (--all) that found none, or a run of
// the changed ones (--changed) in a repository that has none: a repository
// whose root modules do not declare sponson_scope yet (one being migrated)
// would otherwise pass green having run nothing. It names the directories
// that hold configuration files without being stacks.
func NoStacks(command string, res *StacksResult) error {
	selector := "--all"
	if res.changed {
		selector = "--changed"
	}
	var dirs []string
	_ = filepath.WalkDir(res.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fs.SkipDir // what cannot be read names nothing
		}
		if d.IsDir() {
			if p != res.Root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".tf") || strings.HasSuffix(p, ".tf.json") || strings.HasSuffix(p, ".tofu") {
			rel, _ := filepath.Rel(res.Root, filepath.Dir(p))
			if rel = "`" + filepath.ToSlash(rel) + "`"; len(dirs) == 0 || dirs[len(dirs)-1] != rel {
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	e := errcode.New(errcode.Usage, "%s %s found no stack under %s: a stack is a directory whose root module declares a sponson_scope resource", command, selector, res.Root)
	if len(dirs) == 0 {
		return e.WithHint("Run it where the configurations are (--chdir DIR), or declare sponson_scope in each root module.")
	}
	shown := dirs
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(dirs)-5))
	}
	return e.With("directories", dirs).WithHint(fmt.Sprintf("These directories hold configuration files but no sponson_scope: %s. Declare `resource \"sponson_scope\" \"this\" {}` in each root module to make it a stack, or run one with --chdir DIR.", strings.Join(shown, ", ")))
}

// changes are what --changed compares: the base and the files changed
// since it (changedFiles).
type changes struct {
	base               string
	files, uncommitted []string
	err                error
}

// defaultBase is the revision --changed compares with when --base is not
// given: the pull request's target branch, else the remote's default branch.
func defaultBase(getenv func(string) string, git func(...string) (string, error)) string {
	if b := getenv("GITHUB_BASE_REF"); b != "" {
		return "origin/" + b
	}
	if sha := getenv("CI_MERGE_REQUEST_DIFF_BASE_SHA"); sha != "" {
		return sha
	}
	if b := getenv("CI_MERGE_REQUEST_TARGET_BRANCH_NAME"); b != "" {
		return "origin/" + b
	}
	if ref, err := git("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"); err == nil && ref != "" {
		return strings.TrimPrefix(ref, "refs/remotes/")
	}
	return "main"
}

// changedFiles lists the files changed between base and HEAD, relative to
// the repository root: `git diff --name-only base...HEAD`, what the branch
// changed since it left base; and those the working tree changed beside
// them (uncommitted): modified or staged (`git diff --name-only HEAD`) and
// not tracked (`git ls-files --others --exclude-standard`), as a user
// running --changed before committing expects. What the engine and sponson
// write into a stack's directory themselves (.terraform/, .sponson/, a new
// .terraform.lock.hcl) is not a change of the working tree.
func changedFiles(ctx context.Context, top, base string) (files, uncommitted []string, err error) {
	committed, stderr, err := gitFiles(ctx, top, "diff", "--name-only", "--no-renames", "-z", base+"...HEAD", "--")
	if err != nil {
		return nil, nil, errcode.New(errcode.Usage, "cannot list the files changed between %s and HEAD: %s", base, stderr).
			WithHint("Pass --base REF naming a revision this checkout has (fetch it first: a shallow CI checkout may lack it, e.g. actions/checkout with fetch-depth: 0).")
	}
	modified, stderr, err := gitFiles(ctx, top, "diff", "--name-only", "--no-renames", "-z", "HEAD", "--")
	if err != nil {
		return nil, nil, errcode.New(errcode.Usage, "cannot list the files the working tree changed: %s", stderr)
	}
	untracked, stderr, err := gitFiles(ctx, top, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, nil, errcode.New(errcode.Usage, "cannot list the files the working tree does not track: %s", stderr)
	}
	seen := map[string]bool{}
	for _, f := range committed {
		seen[f] = true
	}
	files = committed
	for i, list := range [][]string{modified, untracked} {
		for _, f := range list {
			if seen[f] || written(f, i == 1) {
				continue
			}
			seen[f] = true
			files = append(files, f)
			uncommitted = append(uncommitted, f)
		}
	}
	return files, uncommitted, nil
}

// written reports whether a file of the working tree is one the engine or
// sponson writes: under .terraform/ or .sponson/, or a lock file that is
// not tracked yet (init writes it).
func written(f string, untracked bool) bool {
	for _, e := range strings.Split(f, "/") {
		if e == ".terraform" || e == ".sponson" {
			return true
		}
	}
	return untracked && path.Base(f) == ".terraform.lock.hcl"
}

// gitFiles runs a git command that prints NUL-separated paths.
func gitFiles(ctx context.Context, top string, args ...string) ([]string, string, error) {
	out, stderr, err := gitcli.Cmd{Dir: top, Args: args, Timeout: time.Minute}.Run(ctx)
	if err != nil {
		return nil, strings.TrimSpace(stderr), err
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, "", nil
}
