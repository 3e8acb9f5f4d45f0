package wrapper

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/stackoutputs"
	"github.com/sponson/terraform-provider-sponson/internal/stackrun"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// EveryStack is --all of gc and drift: the command in every stack of the
// repository (or under --chdir), each as its own sponson process
// (docs/design.md §4.7).
type EveryStack struct {
	All         bool
	Parallelism int
}

func (e *EveryStack) bind(cmd *cobra.Command, all string) {
	cmd.Flags().BoolVar(&e.All, "all", false, all)
	cmd.Flags().IntVar(&e.Parallelism, "parallelism", defaultStackParallelism, "with --all: how many stacks run at once (env SPONSON_PARALLELISM)")
}

// checkOne refuses --parallelism without --all.
func (e *EveryStack) checkOne(cmd *cobra.Command) error {
	if !e.All && cmd.Flags().Changed("parallelism") {
		return errcode.New(errcode.Usage, "--parallelism is how many stacks run at once with --all; it needs --all")
	}
	return nil
}

// StacksGCResult is the result part of the envelope of `sponson gc --all`:
// each stack's gc, and the totals of its scopes.
type StacksGCResult struct {
	DryRun    bool             `json:"dryRun"`
	Stacks    []StackRunResult `json:"stacks"`
	Selected  int              `json:"selected"`
	Destroyed int              `json:"destroyed"`
	Failed    int              `json:"failed"`
	Skipped   int              `json:"skipped"`
}

// StacksDriftResult is the result part of the envelope of `sponson drift
// --all`: each stack's drift, and the totals of its scopes.
type StacksDriftResult struct {
	Environment string           `json:"environment"`
	Stacks      []StackRunResult `json:"stacks"`
	InSync      int              `json:"inSync"`
	Drifted     int              `json:"drifted"`
	Failed      int              `json:"failed"`
}

// everyStackRun is gc or drift over every stack.
type everyStackRun struct {
	f       *cmdutil.Factory
	command string
	set     *StacksResult
	lines   *lockedPrinter
	// argsFor is the command line of one stack's run.
	argsFor func(s *stackgraph.Stack) []string
	self    string
	env     []string
	// line is a succeeded stack's closing line, from its result.
	line func(r *StackRunResult) string
	// quiet says whether a failed stack's output is left out of the log
	// (a drifted stack: its line says what drifted).
	quiet func(r *StackRunResult) bool

	mu      sync.Mutex
	results map[string]*StackRunResult
	because map[string]string
}

// everyStackArgs is the command line of one stack's gc or drift: the
// user's flags as given (every value of a repeatable one), without those
// that choose the stacks or the output, which the parent sets.
func everyStackArgs(cmd *cobra.Command, command string, positional []string) []string {
	out := []string{command}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "chdir", "json", "stack", "all", "parallelism", "summary":
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+fl.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+fl.Name+"="+fl.Value.String())
	})
	return append(out, positional...)
}

// startEveryStack finds the stacks under chdir and prepares their runs.
func startEveryStack(cmd *cobra.Command, f *cmdutil.Factory, command, chdir string, parallelism int) (*everyStackRun, []string, error) {
	if strings.TrimSpace(f.Getenv(stack.EnvVar)) != "" {
		return nil, nil, errcode.New(errcode.Usage, "%s names one stack; %s --all names each stack itself", stack.EnvVar, command).
			WithHint("Unset SPONSON_STACK, or run the one stack without --all.")
	}
	set, warnings, err := selectStacks(cmd.Context(), f, &StacksOptions{Chdir: chdir})
	if err != nil {
		return nil, warnings, err
	}
	self, err := f.Executable()
	if err != nil {
		return nil, warnings, errcode.Wrap(errcode.Internal, err, "cannot find the sponson executable to run each stack")
	}
	m := &everyStackRun{f: f, command: command, set: set, self: self,
		env:     append(append(os.Environ(), stack.EnvVar+"=", stackoutputs.EnvVar+"="), reviewEnv...),
		results: map[string]*StackRunResult{}, because: map[string]string{}}
	jsonMode, _ := cmd.Flags().GetBool("json")
	p := cmdutil.Printer{W: f.Out}
	if jsonMode || cmdutil.WantsJSON(nil, f.Getenv) {
		p.W = f.ErrOut
	}
	m.lines = &lockedPrinter{p: p}
	for _, w := range warnings {
		m.lines.line("warning: %s", w)
	}
	m.lines.line("sponson %s --all · %d stacks · parallelism %d", command, len(set.Stacks), max(parallelism, 1))
	return m, warnings, nil
}

// run runs the command in every stack: in reverse dependency order for gc
// (a dependent's scopes are destroyed before those of the stacks it reads,
// as destroy --all does), all at once up to the parallelism for drift,
// which changes nothing.
func (m *everyStackRun) run(ctx context.Context, reverse bool, parallelism int) []StackRunResult {
	stacks := m.set.Stacks
	if !reverse {
		stacks = make([]*stackgraph.Stack, len(m.set.Stacks))
		for i, s := range m.set.Stacks {
			c := *s
			c.Needs = nil
			stacks[i] = &c
		}
	}
	status := stackrun.Run(ctx, stacks, stackrun.Options{
		Reverse:     reverse,
		Parallelism: max(parallelism, 1),
		Run: func(ctx context.Context, s *stackgraph.Stack) bool {
			r, output := runStackProcess(ctx, m.self, s, m.argsFor(s), m.env)
			m.mu.Lock()
			m.results[s.Directory] = r
			m.mu.Unlock()
			if r.Status == stackrun.Failed && !m.quiet(r) {
				m.lines.block(s.Directory, r, output)
			}
			return r.Status == stackrun.Succeeded
		},
		Event: m.event,
	})
	var out []StackRunResult
	for _, s := range m.set.Stacks {
		m.mu.Lock()
		r := m.results[s.Directory]
		m.mu.Unlock()
		if r == nil {
			r = &StackRunResult{Status: status[s.Directory], Because: m.because[s.Directory]}
		}
		r.Stack, r.Directory, r.Depth, r.Needs = s.Name, s.Directory, s.Depth, s.Needs
		out = append(out, *r)
	}
	if out == nil {
		out = []StackRunResult{}
	}
	return out
}

func (m *everyStackRun) event(e stackrun.Event) {
	dir := e.Stack.Directory
	m.mu.Lock()
	r := m.results[dir]
	m.mu.Unlock()
	switch {
	case e.Started:
		m.lines.event(dir, "running", "", fmt.Sprintf("%s: %s started", dir, m.command))
	case e.Status == stackrun.Skipped:
		m.mu.Lock()
		m.because[dir] = e.Because
		m.mu.Unlock()
		m.lines.event(dir, "skipped", e.Because, fmt.Sprintf("%s: skipped: %s", dir, e.Because))
	case e.Status == stackrun.Succeeded || (r != nil && m.quiet(r)):
		m.lines.event(dir, string(e.Status), "", fmt.Sprintf("%s: %s", dir, m.line(r)))
	}
}

// worst is the error of the stack that failed worst (the highest exit
// code), naming every stack that failed or was skipped; nil when none did.
func worstOf(results []StackRunResult) error {
	var worst *StackRunResult
	var failed, skipped []string
	for i := range results {
		r := &results[i]
		switch r.Status {
		case stackrun.Failed:
			failed = append(failed, r.Directory)
			if worst == nil || r.ExitCode > worst.ExitCode {
				worst = r
			}
		case stackrun.Skipped:
			skipped = append(skipped, r.Directory)
		}
	}
	switch {
	case worst != nil:
		return stacksError(worst, failed, skipped)
	case len(skipped) > 0:
		return errcode.New(errcode.Interrupted, "the run was interrupted before %s", strings.Join(skipped, ", ")).With("skipped", skipped)
	}
	return nil
}

// runGCAll is `sponson gc --all`: gc in every stack with --stack set to
// it, dependents before the stacks they read.
func runGCAll(cmd *cobra.Command, f *cmdutil.Factory, opts *GCOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "gc"}
	if opts.Stack != "" {
		o.Err = errcode.New(errcode.Usage, "--stack names one stack; gc --all collects each stack's scopes itself").
			WithHint("Run gc --stack NAME without --all for one stack.")
		return o
	}
	m, warnings, err := startEveryStack(cmd, f, "gc", opts.Chdir, opts.Every.Parallelism)
	o.Warnings = warnings
	if err != nil {
		o.Err = err
		return o
	}
	if opts.Yes {
		if err := checkGCDependents(cmd.Context(), f, m.set); err != nil {
			o.Err = err
			return o
		}
	}
	base := everyStackArgs(cmd, "gc", nil)
	m.argsFor = func(s *stackgraph.Stack) []string { return append(slices.Clone(base), "--stack="+s.Name) }
	m.quiet = func(*StackRunResult) bool { return false }
	m.line = gcStackLine
	res := StacksGCResult{DryRun: !opts.Yes, Stacks: m.run(cmd.Context(), true, opts.Every.Parallelism)}
	for _, r := range res.Stacks {
		var g GCResult
		if r.Result != nil && json.Unmarshal(r.Result, &g) == nil {
			res.Selected += len(g.Scopes)
			res.Destroyed += g.Destroyed
			res.Failed += g.Failed
			res.Skipped += g.Skipped
		}
		for _, w := range r.Warnings {
			o.Warnings = append(o.Warnings, r.Directory+": "+w)
		}
	}
	o.Result = res
	verb := "destroyed"
	n := res.Destroyed
	if res.DryRun {
		verb, n = "would be destroyed", res.Selected-res.Skipped
	}
	m.lines.line("sponson gc --all: %d %s %s in %d stacks, %d failed, %d skipped", n, cmdutil.Plural(n, "scope", "scopes"), verb, len(res.Stacks), res.Failed, res.Skipped)
	o.Err = worstOf(res.Stacks)
	return o
}

// checkGCDependents refuses gc --all --yes under a --chdir that leaves out
// stacks of the repository depending on stacks of the run: their scopes
// would lose the outputs they read, and gc, which selects scopes by rules,
// cannot tell which they still need. Under the repository root every
// dependent is in the run, collected first.
func checkGCDependents(ctx context.Context, f *cmdutil.Factory, set *StacksResult) error {
	if set.Top == set.Root {
		return nil
	}
	full, _, err := selectStacks(ctx, f, &StacksOptions{Chdir: set.Top})
	if err != nil {
		return err
	}
	inRun := map[string]bool{}
	for _, s := range set.Stacks {
		inRun[s.Directory] = true
	}
	var outside []string
	for _, s := range full.Stacks {
		if inRun[s.Directory] {
			continue
		}
		for _, n := range s.Needs {
			if inRun[n] {
				outside = append(outside, s.Directory+" (it needs "+n+")")
			}
		}
	}
	if len(outside) > 0 {
		return errcode.New(errcode.StackHasDependents, "gc --all --yes under %s would collect scopes of stacks that stacks outside it depend on: %s", set.Root, strings.Join(outside, "; ")).
			With("dependents", outside).WithHint("Run gc --all from the repository root, which collects the dependents first.")
	}
	return nil
}

// gcStackLine is the line of a stack whose gc succeeded.
func gcStackLine(r *StackRunResult) string {
	var g GCResult
	if r == nil || json.Unmarshal(r.Result, &g) != nil {
		return "gc succeeded"
	}
	var would, destroyed, skipped []string
	for _, s := range g.Scopes {
		switch s.Outcome {
		case gc.WouldDestroy:
			would = append(would, s.Scope)
		case gc.Destroyed:
			destroyed = append(destroyed, s.Scope)
		case gc.Skipped:
			skipped = append(skipped, s.Scope+" ("+s.SkipReason+")")
		}
	}
	var parts []string
	if len(would) > 0 {
		parts = append(parts, "would destroy "+strings.Join(would, ", "))
	}
	if len(destroyed) > 0 {
		parts = append(parts, "destroyed "+strings.Join(destroyed, ", "))
	}
	if len(skipped) > 0 {
		parts = append(parts, "skipped "+strings.Join(skipped, ", "))
	}
	if len(parts) == 0 {
		return "gc: nothing to collect"
	}
	return "gc: " + strings.Join(parts, "; ")
}

// runDriftAll is `sponson drift --all`: drift in every stack at once (up
// to the parallelism), each allowed to find nothing; the run fails with
// DRIFT_CHECK_FAILED when no stack found a scope, unless --allow-empty.
func runDriftAll(cmd *cobra.Command, f *cmdutil.Factory, opts *DriftOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "drift"}
	m, warnings, err := startEveryStack(cmd, f, "drift", opts.Chdir, opts.Every.Parallelism)
	o.Warnings = warnings
	if err != nil {
		o.Err = err
		return o
	}
	tmp, err := os.MkdirTemp("", "sponson-drift-")
	if err != nil {
		o.Err = errcode.Wrap(errcode.Internal, err, "creating the run's temporary directory")
		return o
	}
	defer os.RemoveAll(tmp)
	base := everyStackArgs(cmd, "drift", opts.Scopes)
	base = slices.DeleteFunc(base, func(a string) bool { return strings.HasPrefix(a, "--allow-empty=") })
	m.argsFor = func(s *stackgraph.Stack) []string {
		return append(slices.Clone(base), "--allow-empty", "--summary="+stackSummaryFile(tmp, s.Directory))
	}
	m.quiet = func(r *StackRunResult) bool { return r.Error != nil && r.Error.Code == errcode.DriftDetected }
	m.line = driftStackLine
	res := StacksDriftResult{Stacks: m.run(cmd.Context(), false, opts.Every.Parallelism)}
	var md, drifted []string
	for _, r := range res.Stacks {
		drifted = append(drifted, res.add(r)...)
		for _, w := range r.Warnings {
			o.Warnings = append(o.Warnings, r.Directory+": "+w)
		}
		if b, err := os.ReadFile(stackSummaryFile(tmp, r.Directory)); err == nil && len(b) > 0 {
			md = append(md, fmt.Sprintf("#### `%s`\n\n%s", r.Directory, b))
		}
	}
	o.Result = res
	m.lines.line("sponson drift --all %s: %d in sync, %d drifted, %d failed in %d stacks", res.Environment, res.InSync, res.Drifted, res.Failed, len(res.Stacks))
	text := fmt.Sprintf("### sponson drift --all · %s: %d in sync, %d drifted, %d failed in %d stacks\n\n%s", res.Environment, res.InSync, res.Drifted, res.Failed, len(res.Stacks), strings.Join(md, "\n"))
	warnOut := cmdutil.Printer{W: f.ErrOut}
	for _, w := range runner.WriteSummaries(f.Getenv, opts.Summary, summary.Options{}, func(summary.Options) string { return text }) {
		warnOut.Warn(w)
	}
	scopes := res.InSync + res.Drifted + res.Failed
	switch {
	case res.Drifted > 0:
		o.Err = errcode.New(errcode.DriftDetected, "%d of %d scopes drifted: %s", res.Drifted, scopes, strings.Join(drifted, ", ")).With("drifted", drifted)
	case slices.ContainsFunc(res.Stacks, func(r StackRunResult) bool { return r.Status != stackrun.Succeeded }):
		o.Err = worstOf(res.Stacks)
	case scopes == 0 && !opts.AllowEmpty:
		o.Err = errcode.New(errcode.DriftCheckFailed, "no scope of any of the %d stacks under %s has anything to check in environment %s: nothing was checked", len(res.Stacks), m.set.Root, res.Environment).
			WithHint("Check --store (SPONSON_STORE), --env (SPONSON_CTX_ENV) and --chdir (SPONSON_CHDIR). Pass --allow-empty when an environment without scopes is expected.")
	}
	return o
}

// add counts the scopes of one stack's drift into the totals, and returns
// its drifted scopes as "DIRECTORY SCOPE".
func (res *StacksDriftResult) add(r StackRunResult) []string {
	var d DriftResult
	if r.Result == nil || json.Unmarshal(r.Result, &d) != nil {
		return nil
	}
	res.InSync += d.InSync
	res.Drifted += d.Drifted
	res.Failed += d.Failed
	if res.Environment == "" {
		res.Environment = d.Environment
	}
	var drifted []string
	for _, s := range d.Scopes {
		if s.Status == summary.Drifted {
			drifted = append(drifted, r.Directory+" "+s.Scope)
		}
	}
	return drifted
}

// driftStackLine is the line of a stack whose drift ended (in sync, or
// drifted).
func driftStackLine(r *StackRunResult) string {
	var d DriftResult
	if r == nil || json.Unmarshal(r.Result, &d) != nil {
		return "drift succeeded"
	}
	var drifted []string
	for _, s := range d.Scopes {
		if s.Status == summary.Drifted {
			drifted = append(drifted, s.Scope+" "+strings.TrimPrefix(driftLine(s), "drifted: "))
		}
	}
	line := fmt.Sprintf("drift: %d in sync, %d drifted, %d failed", d.InSync, d.Drifted, d.Failed)
	if len(drifted) > 0 {
		line += ": " + strings.Join(drifted, "; ")
	}
	return line
}
