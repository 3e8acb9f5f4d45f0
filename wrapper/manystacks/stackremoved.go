package manystacks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// RemovedStack is a stack of the base revision that HEAD no longer has
// (stackgraph.Set.Removed), with the scopes of its state the store still
// keeps in the environment of the run (docs/design.md
// §4.7 "Many stacks", removed stacks).
type RemovedStack struct {
	*stackgraph.Stack
	// Environment is the environment whose scopes are listed; Scopes those
	// of the stack that hold state there (their latest receipt is not a
	// destroy). ScopesError says why they could not be listed.
	Environment string   `json:"environment,omitempty"`
	Scopes      []string `json:"scopes"`
	ScopesError string   `json:"scopesError,omitempty"`
}

// baseCheckout is a checkout of the merge base (git worktree add
// --detach), where a removed stack's configuration still is.
type baseCheckout struct {
	top, dir, tmp, commit string
}

// close removes the checkout and its worktree record.
func (b *baseCheckout) close() {
	if b == nil {
		return
	}
	_, _, _ = gitcli.Cmd{Dir: b.top, Args: []string{"worktree", "remove", "--force", b.dir}, Timeout: time.Minute}.Run(context.Background())
	_ = os.RemoveAll(b.tmp)
	_, _, _ = gitcli.Cmd{Dir: b.top, Args: []string{"worktree", "prune"}, Timeout: time.Minute}.Run(context.Background())
}

// deletesConfiguration reports whether the change deleted a configuration
// file: only then can a stack of the base be gone from HEAD.
func deletesConfiguration(top string, files []string) bool {
	for _, f := range files {
		if !strings.HasSuffix(f, ".tf") && !strings.HasSuffix(f, ".tf.json") && !strings.HasSuffix(f, ".tofu") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(top, filepath.FromSlash(f))); os.IsNotExist(err) {
			return true
		}
	}
	return false
}

// removedStacks finds the stacks of the merge base of base and HEAD that
// current no longer has, when the change deleted a configuration file. It
// checks the merge base out into a temporary directory (closed by the
// caller): the removed stacks run there, from the configuration they were
// applied with.
func removedStacks(ctx context.Context, getenv func(string) string, top, root, base string, files []string, current *stackgraph.Set) (*stackgraph.Set, *baseCheckout, error) {
	if !deletesConfiguration(top, files) {
		return nil, nil, nil
	}
	mb, stderr, err := gitcli.Cmd{Dir: top, Args: []string{"merge-base", base, "HEAD"}, Timeout: time.Minute}.Run(ctx)
	if err != nil {
		return nil, nil, errcode.New(errcode.Usage, "cannot find the merge base of %s and HEAD, whose configuration a removed stack is destroyed from: %s", base, strings.TrimSpace(stderr)).
			WithHint("Fetch the base with its history (actions/checkout with fetch-depth: 0).")
	}
	b := &baseCheckout{top: top, commit: strings.TrimSpace(string(mb))}
	if b.tmp, err = os.MkdirTemp("", "sponson-base-"); err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "creating the checkout of the base")
	}
	b.dir = filepath.Join(b.tmp, "checkout")
	if _, stderr, err := (gitcli.Cmd{Dir: top, Args: []string{"worktree", "add", "--detach", "--quiet", b.dir, b.commit}, Timeout: 10 * time.Minute}).Run(ctx); err != nil {
		_ = os.RemoveAll(b.tmp)
		return nil, nil, errcode.New(errcode.Usage, "cannot check out the base %s (%s), whose configuration a removed stack is destroyed from: %s", base, b.commit, strings.TrimSpace(stderr))
	}
	rel, err := filepath.Rel(top, root)
	if err != nil {
		b.close()
		return nil, nil, errcode.Wrap(errcode.Internal, err, "the directory %s under %s", root, top)
	}
	identity := repositoryIdentity(current.Stacks)
	o := stackgraph.Options{Root: filepath.Join(b.dir, rel), Top: b.dir, Getenv: getenv}
	if identity != "" {
		// The checkout is named as the repository is, also without an
		// origin (whose local/<path> name is the checkout's path).
		o.Name = func(dir string) (string, error) {
			if d, err := stack.Declared(dir); err != nil || d != "" {
				return d, err
			}
			r, err := filepath.Rel(b.dir, dir)
			if err != nil || r == "." {
				return identity, err
			}
			return identity + "//" + filepath.ToSlash(r), nil
		}
	}
	set, err := stackgraph.Discover(o)
	if err != nil {
		b.close()
		return nil, nil, err
	}
	removed := set.Removed(current)
	if len(removed.Stacks) == 0 {
		b.close()
		return removed, nil, nil
	}
	return removed, b, nil
}

// repositoryIdentity is the name of the repository the current stacks are
// named after (internal/stack: IDENTITY//DIR), "" when no stack says.
func repositoryIdentity(current []*stackgraph.Stack) string {
	for _, s := range current {
		if s.Directory == "." {
			if !strings.Contains(s.Name, "//") {
				return s.Name
			}
			continue
		}
		if id, ok := strings.CutSuffix(s.Name, "//"+s.Directory); ok {
			return id
		}
	}
	return ""
}

// runContext is the run's context (branch, commit, environment, scope)
// detected in dir, with the flags given.
func runContext(getenv func(string) string, dir string, f runctx.Flags) (runctx.Context, error) {
	src := runctx.ProcessSources(dir)
	src.Getenv = getenv
	return runctx.Detect(f, src)
}

// scopesWithState lists, in the store of the run (storeFlag, else
// SPONSON_STORE, else dir's own), the scopes of stack name that hold state
// in the environment the run is in (its context detected in the checkout
// top, the environment declared for dir): those whose latest receipt is
// not a destroy.
func scopesWithState(ctx context.Context, getenv func(string) string, storeFlag, top, dir, name string, f runctx.Flags) (env string, scopes []string, err error) {
	c, err := runContext(getenv, top, f)
	if err != nil {
		return "", nil, err
	}
	e, err := cmdutil.DeclaredEnvironment(ctx, getenv, dir, c)
	if err != nil {
		return "", nil, err
	}
	st, _, err := storeurl.OpenFor(storeOf(getenv, storeFlag), dir, e.Name)
	if err != nil {
		return e.Name, nil, err
	}
	defer st.Close()
	all, err := store.ListScopes(ctx, st, e.Name, name)
	if err != nil {
		return e.Name, nil, err
	}
	scopes = []string{}
	for _, s := range all {
		if s.Latest != nil && s.Latest.Status != receipt.StatusDestroyed && s.Latest.SupersededBy == "" && !movedAway(s.Latest) {
			scopes = append(scopes, s.Key.Scope)
		}
	}
	return e.Name, scopes, nil
}

// movedAway reports whether a scope's latest receipt says its state was
// moved to another stack, all of it (stackmove): the scope holds nothing.
func movedAway(r *receipt.Receipt) bool { return r.MovedTo != "" && len(r.Ledger) == 0 }

// orphanStacks lists the stacks of the repository that hold state in the
// run's environment and have no directory under top: named after the
// repository (IDENTITY//DIR) with no stack of that name discovered. Every
// --all run warns of them: never a silent orphan (docs/design.md §4.7).
func orphanStacks(ctx context.Context, getenv func(string) string, storeFlag string, f runctx.Flags, top string, current []*stackgraph.Stack) ([]string, error) {
	identity := repositoryIdentity(current)
	if identity == "" || len(current) == 0 {
		return nil, nil
	}
	dir := current[0].Dir
	c, err := runContext(getenv, top, f)
	if err != nil {
		// Only the environment matters here (gc and drift take no scope):
		// the flag's, else SPONSON_CTX_ENV's, else the default.
		c = runctx.Context{Environment: f.Environment}
		if c.Environment == "" {
			c.Environment = strings.TrimSpace(getenv("SPONSON_CTX_ENV"))
		}
		if c.Environment == "" {
			c.Environment = runctx.DefaultEnvironment
		}
	}
	e, err := cmdutil.DeclaredEnvironment(ctx, getenv, dir, c)
	if err != nil {
		return nil, err
	}
	st, _, err := storeurl.OpenFor(storeOf(getenv, storeFlag), dir, e.Name)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	all, err := store.ListScopes(ctx, st, e.Name, "")
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, s := range current {
		known[s.Name] = true
	}
	held := map[string][]string{}
	for _, s := range all {
		n := s.Key.Stack
		d, ok := strings.CutPrefix(n, identity+"//")
		if known[n] || !ok || s.Latest == nil || s.Latest.Status == receipt.StatusDestroyed || s.Latest.SupersededBy != "" || movedAway(s.Latest) {
			continue
		}
		if hasConfiguration(filepath.Join(top, filepath.FromSlash(d))) {
			continue // a stack outside the run's --chdir, or one no longer declared
		}
		held[d] = append(held[d], s.Key.Scope)
	}
	var out []string
	for d, scopes := range held {
		out = append(out, "stack "+identity+"//"+d+" holds state in "+e.Name+" (scopes "+strings.Join(scopes, ", ")+") and its directory "+d+" is gone: nothing will destroy it unless a run of the change that removed it does (plan|apply --changed), or `sponson destroy` in a checkout of a revision that still has it")
	}
	sort.Strings(out)
	return out, nil
}

// checkRenamed refuses a run other than plan and apply (which show and
// make the move of its state, stackmoved.go) whose change moved a stack's
// directory: its state is kept under the old name, so the run would
// destroy it there and create it again under the new one (docs/design.md
// §4.7 "Many stacks", removed stacks).
func checkRenamed(res *StacksResult) error {
	var moved []string
	var hint string
	for _, r := range res.Removed {
		if r.RenamedTo == "" {
			continue
		}
		moved = append(moved, r.Directory+" → "+r.RenamedDirectory)
		if hint == "" {
			hint = fmt.Sprintf("Keep the stack's name and its state: declare stack = %q in the sponson_scope of %s; the run then finds its state there and changes nothing.", r.Name, r.RenamedDirectory)
		}
	}
	if len(moved) == 0 {
		return nil
	}
	return errcode.New(errcode.Usage, "the change moved %d %s (%s): sponson does not move a stack's state to another name, and destroying the old stack to create the new one is not what a move means",
		len(moved), cmdutil.Plural(len(moved), "stack", "stacks"), strings.Join(moved, ", ")).With("renamed", moved).WithHint(hint)
}

// removedArgs is the command line of a removed stack's run: for plan, the
// plan of its destroy (plan -destroy) in the scope the default branch
// applies (main, unless --scope names one), since that is where the merge
// destroys it; for apply, its destroy in the run's own scope. The run's
// branch and commit are those of the checkout of HEAD, not of the base's.
func removedArgs(getenv func(string) string, command scoperun.Command, args []string, top string, f runctx.Flags) ([]string, error) {
	out := []string{string(scoperun.Destroy)}
	if command == scoperun.Plan {
		out = []string{string(scoperun.Plan), "-destroy"}
		if f.Scope == "" {
			out = append(out, "--scope=main")
		}
	}
	c, err := runContext(getenv, top, f)
	if err != nil {
		return nil, err
	}
	// The checkout of the base answers git's questions otherwise (a
	// detached HEAD at the base). The branch is passed only when git
	// decided the scope: a CI host's variables (or SPONSON_CTX_*) give
	// the stack's run the same scope as this one's.
	if f.Branch == "" && c.Branch != "" && c.Source == runctx.SourceGit {
		out = append(out, "--branch="+c.Branch)
	}
	if f.Commit == "" && c.Commit != "" {
		out = append(out, "--commit="+c.Commit)
	}
	return append(out, args[1:]...), nil
}

// GoneStacks names, of the stacks given, those of dir's repository
// (IDENTITY//DIR, the identity detected as for a run at the repository's
// root) whose directory holds no configuration in the checkout: by stack,
// the directory. Outside a repository it names none (docs/design.md
// §4.7 "Many stacks", removed stacks).
func GoneStacks(getenv func(string) string, dir string, names []string) map[string]string {
	gone := map[string]string{}
	git := runctx.ProcessSources(dir).Git
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil || top == "" {
		return gone
	}
	getenvNoStack := func(k string) string {
		if k == stack.EnvVar {
			return ""
		}
		return getenv(k)
	}
	r, err := stack.Detect(top, "", "", stack.Sources{Getenv: getenvNoStack, Git: runctx.ProcessSources(top).Git})
	if err != nil {
		return gone
	}
	// A directory that declares the name with its stack attribute (a
	// moved stack that kept its name) is the stack's.
	known := map[string]bool{}
	if set, _, err := SelectStacks(context.Background(), getenvNoStack, &StacksOptions{Chdir: top}); err == nil {
		for _, s := range set.Stacks {
			known[s.Name] = true
		}
	}
	for _, n := range names {
		d, ok := strings.CutPrefix(n, r.Name+"//")
		if !ok || d == "" || known[n] {
			continue
		}
		if !hasConfiguration(filepath.Join(top, filepath.FromSlash(d))) {
			gone[n] = d
		}
	}
	return gone
}

// hasConfiguration reports whether dir holds a configuration file.
func hasConfiguration(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json") || strings.HasSuffix(n, ".tofu")) {
			return true
		}
	}
	return false
}

// storeOf is the run's store: --store, else SPONSON_STORE.
func storeOf(getenv func(string) string, flag string) string {
	if flag != "" {
		return flag
	}
	return strings.TrimSpace(getenv(storeurl.EnvVar))
}

// AllWarnings are the warnings of a run of every stack beside the
// selection's: the root modules it leaves out (no sponson_scope) and the
// stacks with state and no directory (docs/design.md §4.7 "Many stacks",
// removed stacks).
func AllWarnings(ctx context.Context, getenv func(string) string, command, storeFlag string, f runctx.Flags, res *StacksResult) []string {
	var out []string
	if w := NotStacksWarning(command, res); w != "" {
		out = append(out, w)
	}
	orphans, err := orphanStacks(ctx, getenv, storeFlag, f, res.Top, res.Stacks)
	if err != nil {
		out = append(out, "cannot list the stacks of the store to find those whose directory is gone: "+errcode.As(err).Message)
	}
	return append(out, orphans...)
}
