// Package manystacks is one command over many stacks, shared by the families
// that take --all or --changed: the selection of stacks, each stack's run as
// its own sponson process, the composed review (docs/design.md §4.7).
//
// Order: plan, apply and gc --all go in dependency order (gc and destroy in
// reverse); drift --all changes nothing, so it has no order. apply FILE of a
// stack refuses a saved plan (PLAN_STALE) when an upstream it read has
// another serial in that scope, or a state where its read fell back to main.
// The run's one review (summary.Many) is one sticky comment per pull
// request and environment.
//
// Removed stacks (stackremoved.go): when a change deleted a configuration
// file, the merge base of --base and HEAD is checked out into a temporary
// directory (`git worktree add --detach`, removed after the run) and
// discovered there; its stacks whose names HEAD no longer has run with the
// scopes their state holds in the run's environment. plan --changed runs
// each as `plan -destroy` from that checkout, under its old name, in scope
// main (where the merge will destroy it; --scope names another); apply
// --changed runs destroy in the run's own scope (after the merge, on the
// default branch: main). They run before the others, dependents first (a
// removed stack goes before the upstreams it read). A stack whose files
// moved byte for byte to a new directory is listed as renamed: plan shows
// the move and apply makes it (stackmoved.go, internal/stackmove); any
// other command over it is refused (USAGE, checkRenamed). A stack named
// by a literal stack attribute keeps its name wherever its directory goes,
// so it is neither removed nor renamed and nothing moves. Every --all run
// warns of each stack named after the repository that holds state in the
// environment and has no configuration in the checkout (AllWarnings).
//
// Under a --chdir that leaves out a dependent, destroy --all (when the
// dependent still holds state in the scope) and gc --all --yes (which
// cannot tell what the dependent still reads) are refused first
// (STACK_HAS_DEPENDENTS).
package manystacks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/secrets"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/stackoutputs"
	"github.com/sponson/terraform-provider-sponson/internal/stackrun"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// StackSelection is how plan, apply and destroy run many stacks: --all, or
// --changed [--base REF], with --parallelism.
type StackSelection struct {
	All bool
	StacksOptions
	Parallelism int
}

// ManyStacksHelp is the part of the help of plan, apply and destroy about
// --all and --changed.
func ManyStacksHelp(command scoperun.Command) string {
	order := "in dependency order (the order of `sponson stacks`): a stack starts once\nthe stacks it depends on succeeded"
	which := "--all runs every stack of the repository (or under --chdir)"
	extra, saved := "", ""
	switch command {
	case scoperun.Plan:
		saved = "; -out DIR\nsaves every stack's plan in DIR (see -out above)"
	case scoperun.Apply:
		saved = "; apply DIR\napplies the plans of plan -out DIR (see above)"
	}
	if command == scoperun.Destroy {
		order = "in reverse dependency order: a stack is destroyed once the stacks that\ndepend on it were (and none is when a stack left out of the run depends on it\nand holds state in the scope: STACK_HAS_DEPENDENTS)"
	} else {
		which += ", --changed [--base REF]\nthe stacks a change touches and their dependents (see `sponson stacks --changed`;\na -var-file of the command that changed touches every stack)"
		removed := "plan --changed plans its destroy (plan -destroy, in scope main unless --scope\nnames one: where the merge destroys it)"
		if command == scoperun.Apply {
			removed = "apply --changed destroys it in the run's scope, with the approvals the\nenvironment needs"
		}
		extra = "\nA stack the change removed (its directory deleted) runs first, dependents first,\nfrom a checkout of the merge base: " + removed + ". A stack whose directory\nmoved keeps its state: plan --changed shows the move in the review, and apply\n--changed moves each of its scopes to the new stack (with the approvals the\nenvironment needs) right before the new stack runs; nothing is destroyed."
	}
	return which + ",\n" + order + ", stacks without a dependency between them at the same time\n" +
		"(--parallelism N, default 4). Each stack runs as its own sponson process with\n" +
		"the same flags, under its own lease; a failure skips the stacks that wait for\n" +
		"it, never the others. One line per stack event (on a terminal, a table of the\n" +
		"stacks updated in place); a failed stack's output is shown after its line,\n" +
		"each line prefixed with its directory. The exit code is\n" +
		"the worst of the stacks'; --json prints one document with a result per stack.\n" +
		"--stack and a saved plan FILE name one stack and are refused" + saved + ". --summary,\n" +
		"--comment, --gitlab-report and $GITHUB_STEP_SUMMARY get one review of all the\n" +
		"stacks: a diagram of the stacks with what each changes, a table, and each\n" +
		"stack's own summary (changes and failures first); the comment is one per pull\n" +
		"request and environment, beside those of single-stack runs." + extra + "\n" +
		"--all warns of every stack of the repository that holds state in the\n" +
		"environment and whose directory is gone: nothing else would destroy it."
}

// defaultStackParallelism is how many stacks run at once by default.
const defaultStackParallelism = 4

// SelectionFlags are the flags of StackSelection, which a stack's own run
// does not take.
var SelectionFlags = []string{"all", "changed", "base", "parallelism"}

func (s *StackSelection) Bind(cmd *cobra.Command, command scoperun.Command) {
	fs := cmd.Flags()
	verb := string(command)
	all := verb + " every stack of the repository (or under --chdir), in dependency order (the order sponson stacks lists)"
	many := "with --all or --changed"
	if command == scoperun.Destroy {
		all = "destroy every stack of the repository (or under --chdir), in reverse dependency order: dependents first"
		many = "with --all"
	} else {
		s.StacksOptions.Bind(cmd, verb)
	}
	fs.BoolVar(&s.All, "all", false, all)
	fs.IntVar(&s.Parallelism, "parallelism", defaultStackParallelism, many+": how many stacks run at once (env SPONSON_PARALLELISM; the engine's own -parallelism, one dash, is passed to each stack)")
}

var selectionFlagEnv = map[string]string{"base": "SPONSON_BASE", "parallelism": "SPONSON_PARALLELISM"}

// Wanted reports whether the command runs many stacks.
func (s *StackSelection) Wanted() bool { return s.All || s.Changed }

// StacksRunResult is the result part of the envelope of plan, apply and
// destroy with --all or --changed.
type StacksRunResult struct {
	// Base is the revision --changed compared with.
	Base   string           `json:"base,omitempty"`
	Stacks []StackRunResult `json:"stacks"`
}

// StackRunResult is one stack's part of a run of many.
type StackRunResult struct {
	Stack     string   `json:"stack"`
	Directory string   `json:"directory"`
	Depth     int      `json:"depth"`
	Needs     []string `json:"needs"`
	Reasons   []string `json:"reasons,omitempty"`
	// Removed marks a stack of the base that HEAD no longer has: its run
	// was a destroy (apply) or the plan of one (plan), in a checkout of the
	// base (docs/design.md §4.7 "Many stacks", removed stacks).
	Removed bool `json:"removed,omitempty"`
	// Moved is set on a removed stack whose directory the change moved:
	// its state moves to the new stack instead of being destroyed.
	Moved *StackMove `json:"moved,omitempty"`
	// Status is succeeded, failed or skipped; Because says why a stack was
	// skipped.
	Status   stackrun.Status `json:"status"`
	Because  string          `json:"because,omitempty"`
	ExitCode int             `json:"exitCode"`
	// Result and Error are those of the stack's own run (the envelope of
	// a single plan, apply or destroy).
	Result   json.RawMessage    `json:"result,omitempty"`
	Error    *cmdutil.ErrorBody `json:"error,omitempty"`
	Warnings []string           `json:"warnings,omitempty"`
}

// Prepared is a run of command over the selected stacks, read from the
// command line and ready to start, or the refusal that stopped it (with
// the warnings so far): what a command's prepare builds, so that its run
// sees neither cobra nor the Factory.
type Prepared struct {
	outcome cmdutil.Outcome
	m       *manyRun
}

// PrepareStacks reads the flags, refuses what cannot run before anything
// does (the flags, the engine flags, a cycle, a destroy that would strand a
// dependent), and finds the stacks.
func PrepareStacks(cmd *cobra.Command, f *cmdutil.Factory, flags *cmdutil.RunFlags, review *cmdutil.ReviewFlags, sel *StackSelection, command scoperun.Command, args []string) *Prepared {
	o := cmdutil.Outcome{Command: string(command), DetailedExitcode: runner.DetailedRequested(cmd)}
	m, warnings, err := prepareMany(cmd, f, flags, review, sel, command, args)
	o.Warnings, o.Err = warnings, err
	return &Prepared{outcome: o, m: m}
}

// Run runs the command over the stacks, each as its own sponson process
// (each with its own engine environment, provider and lease: a sponson
// process runs one engine session, internal/engine), in the order of
// internal/stackrun, then reports.
func (p *Prepared) Run(ctx context.Context) cmdutil.Outcome {
	o := p.outcome
	if o.Err != nil {
		return o
	}
	defer os.RemoveAll(p.m.tmp)
	defer p.m.res.Close()
	status := p.m.run(ctx)
	p.m.report(ctx, &o, status)
	return o
}

// manyRun is one run of many stacks.
type manyRun struct {
	io      *cmdutil.IO
	http    *http.Client
	command scoperun.Command
	review  *cmdutil.ReviewFlags
	res     *StacksResult
	// which names the selection for people: --all, or --changed since.
	which       string
	parallelism int
	lines       *lockedPrinter
	// self is the sponson binary; args and env the command line and
	// environment of every stack's run; tmp the run's own directory (the
	// stacks' summaries and planned outputs).
	self, tmp  string
	args, env  []string
	wantReview bool

	// removed are the stacks HEAD no longer has, run first (in reverse
	// order) with removedArgs: the plan of their destroy, or their destroy.
	removed     []*stackgraph.Stack
	removedArgs []string
	// renamed are the removed stacks whose directory moved: their state
	// moves to the new stack (stackmoved.go), before its run.
	renamed []*RemovedStack
	mover   *mover

	// out is the directory of a plan's saved plans (-out); set the plans
	// an apply applies (apply DIR). See planset.go.
	out string
	set *savedSet

	mu      sync.Mutex
	results map[string]*StackRunResult
	because map[string]string // why each skipped stack was skipped
}

// prepareMany refuses what cannot run before anything does (the flags, the
// engine flags, a cycle, a destroy that would strand a dependent), finds the
// stacks, and makes the run's directory.
func prepareMany(cmd *cobra.Command, f *cmdutil.Factory, flags *cmdutil.RunFlags, review *cmdutil.ReviewFlags, sel *StackSelection, command scoperun.Command, args []string) (*manyRun, []string, error) {
	res, warnings, err := selectMany(cmd, f, flags, sel, command, args)
	if err != nil {
		return nil, warnings, err
	}
	m, err := newManyRun(cmd, f, review, sel, command, args, res)
	if err != nil {
		res.Close()
		return nil, warnings, err
	}
	m.mover = &mover{getenv: f.Getenv, storeFlag: flags.Store, approvedBy: flags.ApprovedBy, wait: flags.Wait, waitTimeout: flags.WaitTimeout, leaseTTL: flags.LeaseTTL}
	m.startLines(cmd, warnings)
	return m, warnings, nil
}

// selectMany reads the flags and finds the stacks, refusing a destroy that
// would strand a dependent.
func selectMany(cmd *cobra.Command, f *cmdutil.Factory, flags *cmdutil.RunFlags, sel *StackSelection, command scoperun.Command, args []string) (*StacksResult, []string, error) {
	if err := bindSelectionEnv(cmd, f); err != nil {
		return nil, nil, err
	}
	if err := sel.check(f, flags, command, args); err != nil {
		return nil, nil, err
	}
	sel.Chdir = flags.Chdir
	ef, err := runner.EngineFlags(cmd, string(command), f.Getenv)
	if err != nil {
		return nil, nil, err
	}
	// The engine's -out is read here, after the selection's own check:
	// with many stacks it names a directory of their plans (planset).
	sel.out = ef.Out
	for _, v := range ef.Vars {
		if v.File {
			sel.varFiles = append(sel.varFiles, v.Value)
		}
	}
	if command == scoperun.Destroy {
		if err := cmdutil.BindEnv(cmd.Flags(), cmdutil.RunFlagEnv, f.Getenv); err != nil {
			return nil, nil, err
		}
	}
	// The store and the context flags, for the removed stacks' scopes;
	// SPONSON_STORE and SPONSON_CTX_* are read where they are used.
	sel.store = flags.Store
	sel.context = runctx.Flags{Environment: flags.Env, Scope: flags.Scope, Branch: flags.Branch, PullRequest: flags.PR, Commit: flags.Commit}
	res, warnings, err := SelectStacks(cmd.Context(), f.Getenv, &sel.StacksOptions)
	if err != nil {
		return nil, warnings, err
	}
	if sel.All && len(res.Stacks) == 0 {
		return nil, warnings, NoStacks(string(command), res)
	}
	// --changed in a repository of root modules none of which is a stack
	// (and none removed) would pass green having run nothing, whatever the
	// change (issue 49, item 4).
	if sel.Changed && res.discovered == 0 && len(res.Removed) == 0 && len(res.NotStacks) > 0 {
		res.Close()
		return nil, warnings, NoStacks(string(command), res)
	}
	if err := checkSelected(cmd, f, flags, sel, command, res); err != nil {
		res.Close()
		return nil, warnings, err
	}
	if sel.All {
		warnings = append(warnings, AllWarnings(cmd.Context(), f.Getenv, string(command), flags.Store, sel.context, res)...)
	}
	if w := storePerStackWarning(f, flags, res); w != "" {
		warnings = append(warnings, w)
	}
	return res, warnings, nil
}

// bindSelectionEnv reads the variables of the selection's, --chdir's and
// the review's flags the command line left unset.
func bindSelectionEnv(cmd *cobra.Command, f *cmdutil.Factory) error {
	for _, env := range []map[string]string{selectionFlagEnv, {"chdir": "SPONSON_CHDIR"}, cmdutil.ReviewFlagEnv} {
		if err := cmdutil.BindEnv(cmd.Flags(), env, f.Getenv); err != nil {
			return err
		}
	}
	return nil
}

// checkSelected refuses what cannot run on the stacks found: a renamed
// stack outside plan and apply, an -out that cannot hold their plans, a
// destroy that would strand a dependent.
func checkSelected(cmd *cobra.Command, f *cmdutil.Factory, flags *cmdutil.RunFlags, sel *StackSelection, command scoperun.Command, res *StacksResult) error {
	if command != scoperun.Plan && command != scoperun.Apply {
		if err := checkRenamed(res); err != nil {
			return err
		}
	}
	if sel.out != "" {
		if err := prepareOut(sel, res); err != nil {
			return err
		}
	}
	if command == scoperun.Destroy {
		return checkDestroyDependents(cmd.Context(), f, flags, res)
	}
	return nil
}

// storePerStackWarning warns when stacks that read each other's outputs
// have no store in common.
func storePerStackWarning(f *cmdutil.Factory, flags *cmdutil.RunFlags, res *StacksResult) string {
	if flags.Store != "" || strings.TrimSpace(f.Getenv(storeurl.EnvVar)) != "" {
		return ""
	}
	for _, s := range res.Stacks {
		if len(s.Needs) > 0 {
			return "no --store (or " + storeurl.EnvVar + "): each stack keeps its own .sponson/ in its directory, so a stack's sponson_outputs cannot read another's outputs; give every stack one store"
		}
	}
	return ""
}

// newManyRun makes the run of the stacks res found: its directory, and the
// command line and environment of every stack's process.
func newManyRun(cmd *cobra.Command, f *cmdutil.Factory, review *cmdutil.ReviewFlags, sel *StackSelection, command scoperun.Command, args []string, res *StacksResult) (*manyRun, error) {
	self, err := f.Executable()
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "cannot find the sponson executable to run each stack")
	}
	m := &manyRun{io: f.IO(), http: f.HTTP, command: command, review: review, res: res, which: "--all", parallelism: max(sel.Parallelism, 1),
		self: self, args: childArgs(cmd, command, args), wantReview: review.Wanted(f.Getenv),
		results: map[string]*StackRunResult{}, because: map[string]string{}}
	if sel.Changed {
		m.which = "--changed (since " + res.Base + ")"
	}
	m.out = sel.out
	if len(res.Removed) > 0 && command != scoperun.Destroy {
		m.removedArgs, err = removedArgs(f.Getenv, command, m.args, res.Top, sel.context)
		if err != nil {
			return nil, err
		}
		for _, r := range res.Removed {
			if r.RenamedTo != "" {
				m.renamed = append(m.renamed, r)
				continue
			}
			m.removed = append(m.removed, r.Stack)
		}
	}
	if m.tmp, err = os.MkdirTemp("", "sponson-stacks-"); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "creating the run's temporary directory")
	}
	// A stack's process has no progress descriptor of its own: the one the
	// variable names, if any, is this process's.
	m.env = append(append(os.Environ(), stack.EnvVar+"=", stackoutputs.EnvVar+"=", cmdutil.ProgressFDVar+"="), reviewEnv...)
	// What git says of the repository, asked once for every stack's run
	// (docs/design.md §8).
	m.env = append(m.env, runctx.GitAnswersVar+"="+runctx.GitAnswers(res.Top))
	if command == scoperun.Plan {
		// A stack's plan reads the planned outputs of the stacks it
		// depends on (docs/design.md §6.4): they planned before it.
		planned := filepath.Join(m.tmp, "planned")
		if err := os.Mkdir(planned, 0o700); err != nil {
			os.RemoveAll(m.tmp)
			return nil, errcode.Wrap(errcode.Internal, err, "creating the directory of the planned outputs")
		}
		m.env = append(m.env, stackoutputs.EnvVar+"="+planned)
	}
	return m, nil
}

// startLines opens the run's lines (stdout, or stderr with --json): the
// warnings so far, the opening line, and the live table on a terminal.
func (m *manyRun) startLines(cmd *cobra.Command, warnings []string) {
	m.io.JSON = cmdutil.JSONWanted(cmd, m.io.Getenv)
	p := cmdutil.Printer{W: m.io.Human()}
	m.lines = &lockedPrinter{p: p}
	for _, w := range warnings {
		m.lines.Line("warning: %s", w)
	}
	removed := ""
	if len(m.removed) > 0 {
		// A removed stack runs too (its destroy); the count says so.
		removed = fmt.Sprintf(" (and %d removed)", len(m.removed))
	}
	m.lines.Line("sponson %s %s · %d stacks%s · parallelism %d", m.command, m.which, len(m.res.Stacks), removed, m.parallelism)
	for _, s := range m.removed {
		what := "its destroy is planned"
		if m.command == scoperun.Apply {
			what = "it is destroyed"
		}
		m.lines.Line("%s: removed since %s (%s): %s from the base's configuration (%s), before the other stacks", s.Directory, m.res.Base, strings.Join(s.Reasons, "; "), what, m.res.BaseCommit())
	}
	for _, r := range m.renamed {
		what := "its state moves to the new stack when the merge is applied"
		if m.command == scoperun.Apply {
			what = "its state is moved to the new stack before that stack runs"
		}
		m.lines.Line("%s: renamed to %s since %s: %s; nothing is destroyed or created", r.Directory, r.RenamedDirectory, m.res.Base, what)
	}
	if m.io.IsTerminal != nil && m.io.IsTerminal(p.W) {
		m.lines.live(append(append([]*stackgraph.Stack{}, m.removed...), m.res.Stacks...))
	}
}

// run runs every stack in order and says how each ended: first the
// removed stacks, dependents first, then the others.
func (m *manyRun) run(ctx context.Context) map[string]stackrun.Status {
	status := map[string]stackrun.Status{}
	if m.command == scoperun.Plan {
		m.previewMoves(ctx, status)
	}
	if len(m.removed) > 0 {
		status = stackrun.Run(ctx, m.removed, stackrun.Options{
			Reverse:     true,
			Parallelism: m.parallelism,
			Run:         m.runRemoved,
			Event:       m.event,
		})
		if ctx.Err() != nil {
			m.lines.still()
			return status
		}
	}
	rest := stackrun.Run(ctx, m.res.Stacks, stackrun.Options{
		Reverse:     m.command == scoperun.Destroy,
		Parallelism: m.parallelism,
		Run:         m.runStack,
		Event:       m.event,
	})
	for d, st := range rest {
		status[d] = st
	}
	m.lines.still()
	return status
}

// runRemoved runs one removed stack's process in the checkout of the base,
// under its own name.
func (m *manyRun) runRemoved(ctx context.Context, s *stackgraph.Stack) bool {
	args := m.removedArgs
	if m.wantReview {
		args = append(append([]string{}, m.removedArgs...), "--summary="+StackSummaryFile(m.tmp, s.Directory))
	}
	// The checkout of the base is another worktree: its git answers for
	// itself.
	env := append(append([]string{}, m.env...), stack.EnvVar+"="+s.Name, runctx.GitAnswersVar+"=")
	r, output := runStackProcess(ctx, m.self, s, args, env)
	r.Removed = true
	m.mu.Lock()
	m.results[s.Directory] = r
	m.mu.Unlock()
	if r.Status == stackrun.Failed {
		m.lines.block(s.Directory, r, output)
	}
	return r.Status == stackrun.Succeeded
}

// runStack runs one stack's sponson process; in an apply, the move of the
// state of a stack renamed to it first.
func (m *manyRun) runStack(ctx context.Context, s *stackgraph.Stack) bool {
	if m.command == scoperun.Apply && !m.applyMoves(ctx, s) {
		return false
	}
	args := append(append([]string{}, m.args...), m.stackArgs(s)...)
	if m.wantReview {
		args = append(args, "--summary="+StackSummaryFile(m.tmp, s.Directory))
	}
	r, output := runStackProcess(ctx, m.self, s, args, m.env)
	m.mu.Lock()
	m.results[s.Directory] = r
	m.mu.Unlock()
	if r.Status == stackrun.Failed {
		m.lines.block(s.Directory, r, output)
	}
	return r.Status == stackrun.Succeeded
}

func (m *manyRun) result(dir string) *StackRunResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[dir]
}

// commandOf is the command a stack's process runs: a removed stack's
// apply is its destroy.
func (m *manyRun) commandOf(s *stackgraph.Stack) scoperun.Command {
	if m.command == scoperun.Apply && slices.Contains(m.removed, s) {
		return scoperun.Destroy
	}
	return m.command
}

// event prints one stack event.
func (m *manyRun) event(e stackrun.Event) {
	dir := e.Stack.Directory
	switch {
	case e.Started:
		what := string(m.commandOf(e.Stack))
		if m.command == scoperun.Plan && slices.Contains(m.removed, e.Stack) {
			what = "plan -destroy"
		}
		m.lines.event(dir, "running", "", fmt.Sprintf("%s: %s started", dir, what))
	case e.Status == stackrun.Skipped:
		m.mu.Lock()
		m.because[dir] = e.Because
		m.mu.Unlock()
		m.lines.event(dir, "skipped", e.Because, fmt.Sprintf("%s: skipped: %s", dir, e.Because))
	case e.Status == stackrun.Succeeded:
		closing := stackClosingLine(m.commandOf(e.Stack), m.result(dir))
		m.lines.event(dir, "succeeded", closing, fmt.Sprintf("%s: %s", dir, closing))
	case e.Status == stackrun.Failed:
		// Its line and output came with its block (in a log), or above
		// the table (on a terminal).
		note := ""
		if r := m.result(dir); r != nil && r.Error != nil {
			note = string(r.Error.Code)
		}
		m.lines.event(dir, "failed", note, "")
	}
}

// report fills o from the stacks' results: a result per stack, the
// review, the closing line, the worst error.
func (m *manyRun) report(ctx context.Context, o *cmdutil.Outcome, status map[string]stackrun.Status) {
	out := StacksRunResult{Base: m.res.Base, Stacks: []StackRunResult{}}
	counts := map[stackrun.Status]int{}
	var worst *StackRunResult
	var failed, skipped []string
	all := append(append([]*stackgraph.Stack{}, m.res.Stacks...), m.removed...)
	for _, r := range m.renamed {
		all = append(all, r.Stack)
	}
	for _, s := range all {
		r := m.stackResult(s, status)
		if r.Status == stackrun.Skipped && m.because[s.Directory] != "" {
			skipped = append(skipped, s.Directory)
		}
		counts[r.Status]++
		if r.Status == stackrun.Failed {
			failed = append(failed, s.Directory)
			if worst == nil || r.ExitCode > worst.ExitCode {
				worst = r
			}
		}
		if m.command == scoperun.Plan && planChanges(r) {
			o.Changes = true
		}
		for _, w := range r.Warnings {
			o.Warnings = append(o.Warnings, s.Directory+": "+w)
		}
		out.Stacks = append(out.Stacks, *r)
	}
	o.Result = out
	if m.out != "" {
		if err := m.saveSet(worst == nil && len(skipped) == 0); err != nil {
			o.Err = err
		}
	}
	o.Warnings = append(o.Warnings, publishMany(ctx, m.io, m.http, m.review, m.command, m.which, m.tmp, out.Stacks)...)
	m.lines.Line("sponson %s %s: %d succeeded, %d failed, %d skipped", m.command, m.which, counts[stackrun.Succeeded], counts[stackrun.Failed], counts[stackrun.Skipped])
	switch {
	case o.Err != nil:
	case worst != nil:
		o.Err = stacksError(worst, failed, skipped)
	case len(skipped) > 0:
		o.Err = errcode.New(errcode.Interrupted, "the run was interrupted before %s", strings.Join(skipped, ", ")).With("skipped", skipped)
	}
}

// stackResult is s's part of the run's result: how its run ended, or why
// it did not run.
func (m *manyRun) stackResult(s *stackgraph.Stack, status map[string]stackrun.Status) *StackRunResult {
	r := m.result(s.Directory)
	if r == nil {
		r = &StackRunResult{Status: status[s.Directory]}
		if m.isRenamed(s) {
			r.Status, r.Because = stackrun.Skipped, "the stack it was renamed to did not run"
		}
	}
	r.Stack, r.Directory, r.Depth, r.Needs, r.Reasons = s.Name, s.Directory, s.Depth, s.Needs, s.Reasons
	r.Removed = slices.Contains(m.removed, s) || m.isRenamed(s)
	if r.Status == stackrun.Skipped && m.because[s.Directory] != "" {
		r.Because = m.because[s.Directory]
	}
	return r
}

// planChanges reports whether a stack's plan found changes.
func planChanges(r *StackRunResult) bool {
	var rr runner.RunResult
	return r.Error == nil && r.Result != nil && json.Unmarshal(r.Result, &rr) == nil && rr.Status == "changes"
}

// CheckOne refuses the selection's flags on a run of one stack: before
// --all, the engine read --parallelism (two dashes) as its own.
func (s *StackSelection) CheckOne(cmd *cobra.Command) error {
	if cmd.Flags().Changed("parallelism") {
		return errcode.New(errcode.Usage, "--parallelism (two dashes) is how many stacks run at once with --all or --changed").
			WithHint("For the engine's parallelism of one stack write -parallelism=N, with one dash.")
	}
	if cmd.Flags().Changed("base") {
		return errcode.New(errcode.Usage, "--base is the revision --changed compares with; it needs --changed")
	}
	return nil
}

// check refuses what a run of many stacks cannot do.
func (s *StackSelection) check(f *cmdutil.Factory, flags *cmdutil.RunFlags, command scoperun.Command, args []string) error {
	switch {
	case s.All && s.Changed:
		return errcode.New(errcode.Usage, "--all and --changed cannot be combined").WithHint("--all runs every stack; --changed those a change touches and their dependents.")
	case s.Base != "" && !s.Changed:
		return errcode.New(errcode.Usage, "--base is the revision --changed compares with; it needs --changed")
	case flags.Stack != "" || strings.TrimSpace(f.Getenv(stack.EnvVar)) != "":
		return errcode.New(errcode.Usage, "--stack and %s name one stack; %s with --all or --changed names each stack itself", stack.EnvVar, command).
			WithHint("Unset SPONSON_STACK, or run the one stack without --all.")
	case len(args) > 0:
		return errcode.New(errcode.Usage, "a saved plan FILE applies one stack; it cannot be given with --all or --changed")
	}
	return nil
}

// childArgs is the command line of one stack's run: the user's flags and
// engine flags as given, without the selection, --chdir, --stack and
// --json, which runStackProcess sets.
func childArgs(cmd *cobra.Command, command scoperun.Command, args []string) []string {
	out := []string{string(command)}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "chdir", "json", "stack", "all", "changed", "base", "parallelism",
			// The run composes one review of all stacks.
			"summary", "comment", "gitlab-report":
			return
		case cmdutil.EngineArgFlag:
			vals, _ := cmd.Flags().GetStringArray(cmdutil.EngineArgFlag)
			for _, v := range vals {
				// -out names the directory of all the plans; each stack
				// gets its own file in it (stackArgs).
				if !strings.HasPrefix(v, "-out=") {
					out = append(out, v)
				}
			}
			return
		}
		out = append(out, "--"+fl.Name+"="+fl.Value.String())
	})
	return append(out, args...)
}

// runStackProcess runs one stack's command as a sponson process and reads
// its envelope; output is what it printed for people.
func runStackProcess(ctx context.Context, self string, s *stackgraph.Stack, args, environ []string) (*StackRunResult, []byte) {
	c := exec.CommandContext(ctx, self, append(append([]string{}, args...), "--chdir="+s.Dir, "--json")...)
	// An interrupt reaches the stack's run as one: it stops its engine,
	// releases its lease and writes its envelope.
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = 2 * time.Minute
	c.Env = environ
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	// The keys (the state keys, the plans' seal key) go to the stack's run
	// on a pipe, as to an MCP tool's run: this process holds them in
	// memory, never in its environment (docs/design.md §9).
	passed, err := secrets.Pass(c)
	if err == nil {
		err = c.Start()
		passed()
		if err == nil {
			err = c.Wait()
		}
	}
	r := &StackRunResult{Status: stackrun.Succeeded}
	switch {
	case c.ProcessState != nil:
		// It ran to its end (an interrupt that came as it finished makes
		// Run return the context's error): its envelope says how.
		r.ExitCode = c.ProcessState.ExitCode()
	case err != nil:
		r.Status, r.ExitCode = stackrun.Failed, int(errcode.ExitFailed)
		r.Error = &cmdutil.ErrorBody{Code: errcode.Internal, Message: "cannot run sponson for " + s.Directory + ": " + err.Error()}
		return r, stderr.Bytes()
	}
	var env struct {
		OK     bool               `json:"ok"`
		Result json.RawMessage    `json:"result"`
		Error  *cmdutil.ErrorBody `json:"error"`
		Warn   []string           `json:"warnings"`
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &env); jerr != nil {
		r.Status = stackrun.Failed
		r.ExitCode = max(r.ExitCode, int(errcode.ExitFailed))
		r.Error = &cmdutil.ErrorBody{Code: errcode.Internal, Message: fmt.Sprintf("the run of %s printed no JSON document (exit %d): %v", s.Directory, r.ExitCode, jerr)}
		return r, stderr.Bytes()
	}
	r.Result, r.Error, r.Warnings = env.Result, env.Error, env.Warn
	if !env.OK {
		r.Status = stackrun.Failed
	}
	return r, stderr.Bytes()
}

// stackClosingLine is the line of a stack that succeeded: its own run's
// closing line.
func stackClosingLine(command scoperun.Command, r *StackRunResult) string {
	var rr runner.RunResult
	if r == nil || json.Unmarshal(r.Result, &rr) != nil {
		return string(command) + " succeeded"
	}
	return runner.ClosingLine(command, rr)
}

// stacksError is the error of a run of many stacks: the code, hint and exit
// code of the worst failure (the highest exit code), naming every stack
// that failed or was skipped.
func stacksError(worst *StackRunResult, failed, skipped []string) error {
	code, msg, hint := errcode.Internal, "", ""
	if worst.Error != nil {
		code, msg, hint = worst.Error.Code, worst.Error.Message, worst.Error.Hint
	}
	text := fmt.Sprintf("%d stack(s) failed (%s); %s: %s", len(failed), strings.Join(failed, ", "), worst.Directory, msg)
	if len(skipped) > 0 {
		text += fmt.Sprintf("; skipped: %s", strings.Join(skipped, ", "))
	}
	e := errcode.New(code, "%s", text).With("failed", failed)
	if hint != "" {
		e.Hint = hint
	}
	if len(skipped) > 0 {
		e = e.With("skipped", skipped)
	}
	return e
}

// lockedPrinter prints the progress of a run of many stacks from several
// goroutines: one line per stack event in a CI log, or on a terminal a live
// table of the stacks, redrawn in place on every event, with what is printed
// meanwhile (a failed stack's output) above it.
type lockedPrinter struct {
	mu sync.Mutex
	p  cmdutil.Printer
	// rows is the live table; nil prints lines.
	rows  []tableRow
	width int
	drawn int // the table's lines on the screen
}

type tableRow struct{ dir, state, note string }

// live turns the table on for stacks.
func (l *lockedPrinter) live(stacks []*stackgraph.Stack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = []tableRow{}
	for _, s := range stacks {
		l.rows = append(l.rows, tableRow{dir: s.Directory, state: "waiting"})
		l.width = max(l.width, len(s.Directory))
	}
	l.redraw()
}

// still leaves the table as it is on the screen, and prints lines below it
// from now on.
func (l *lockedPrinter) still() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows, l.drawn = nil, 0
}

// event is one stack's event: its line in a log (none when line is ""),
// its row on a terminal.
func (l *lockedPrinter) event(dir, state, note, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rows == nil {
		if line != "" {
			l.p.Line("%s", line)
		}
		return
	}
	for i := range l.rows {
		if l.rows[i].dir == dir {
			l.rows[i].state, l.rows[i].note = state, note
		}
	}
	l.redraw()
}

// clear erases the table from the screen.
func (l *lockedPrinter) clear() {
	if l.drawn > 0 {
		fmt.Fprintf(l.p.W, "\x1b[%dA\x1b[J", l.drawn)
		l.drawn = 0
	}
}

func (l *lockedPrinter) redraw() {
	l.clear()
	for _, r := range l.rows {
		fmt.Fprintf(l.p.W, "  %-*s  %-9s  %s\n", l.width, r.dir, r.state, r.note)
	}
	l.drawn = len(l.rows)
}

func (l *lockedPrinter) Line(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	l.p.Line(format, args...)
	if l.rows != nil {
		l.redraw()
	}
}

// block prints a failed stack's error and what its run printed, each line
// prefixed with the stack's directory, in one piece.
func (l *lockedPrinter) block(dir string, r *StackRunResult, output []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	msg := fmt.Sprintf("exit %d", r.ExitCode)
	if r.Error != nil {
		first, _, _ := strings.Cut(r.Error.Message, "\n")
		msg = fmt.Sprintf("error %s: %s (exit %d)", r.Error.Code, first, r.ExitCode)
	}
	l.p.Line("%s: failed: %s", dir, msg)
	sc := bufio.NewScanner(bytes.NewReader(output))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		l.p.Line("%s | %s", dir, sc.Text())
	}
	if l.rows != nil {
		l.redraw()
	}
}
