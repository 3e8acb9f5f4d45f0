// Package driftcmd is `sponson drift`: a refresh-only plan of every live
// scope, read-only (docs/design.md §4.4).
package driftcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/stackrun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/manystacks"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// DriftOptions are the options of `sponson drift` (docs/design.md §4.4).
type DriftOptions struct {
	*cmdutil.IO
	Env, Chdir, Store, Engine string
	Vars, VarFiles            []string
	Summary                   string
	// AllowEmpty lets an environment without a scope to check pass: by
	// default that is DRIFT_CHECK_FAILED, since it most often means the
	// wrong store, environment or directory.
	AllowEmpty bool
	// Scopes are the scopes named on the command line; every scope of the
	// environment with something to check when empty.
	Scopes []string
	// Every is --all: drift in every stack of the repository.
	Every manystacks.EveryStack

	// What prepare resolves the flags to: the plan every check of one
	// stack runs (in), or the run of every stack (every, with the command
	// line of each stack's drift); err and warnings stop the command
	// before either starts.
	in        *runner.RunInput
	every     *manystacks.EveryStackRun
	everyArgs []string
	warnings  []string
	err       error
}

// DriftResult is the result of `sponson drift` in the --json envelope.
type DriftResult struct {
	Environment string               `json:"environment"`
	Store       string               `json:"store"`
	Scopes      []summary.DriftScope `json:"scopes"`
	InSync      int                  `json:"inSync"`
	Drifted     int                  `json:"drifted"`
	Failed      int                  `json:"failed"`
}

// NewCmdDrift builds `sponson drift`.
func NewCmdDrift(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *DriftOptions) cmdutil.Outcome) *cobra.Command {
	opts := &DriftOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "drift [SCOPE...] [flags]",
		Short: "Report what changed outside the engine in the scopes of an environment",
		Long: `Drift runs a refresh-only plan in every scope of the environment that has
something to check (or in the scopes named), one after the other, and reports
each scope as in-sync, drifted (with what changed or was deleted outside the
engine) or failed. It changes nothing: it takes no lease, never writes a
state or a receipt, and reads each scope's state the way plan does.

Exit codes, for a nightly job to alert on: 0 when every scope is in sync;
1 with DRIFT_CHECK_FAILED when the environment has no scope to check (the
wrong store, environment or directory, most often; --allow-empty passes it);
1 with DRIFT_DETECTED when a scope drifted; 1 with DRIFT_CHECK_FAILED when
none drifted but a scope could not be checked; 2 when refused before
running (usage, environment). --json prints every scope's finding either
way, and the Markdown summary goes to --summary FILE and to
$GITHUB_STEP_SUMMARY when that is set.

The configuration in --chdir is the one every scope is planned with: run
drift from the checkout those scopes were applied from (the default branch
for main, a nightly job per environment).

--all checks every stack of the repository (or under --chdir) in one run:
each stack's drift is its own sponson process with --chdir set to the stack
and the same flags, up to --parallelism (default 4) at once, in no order
(drift changes nothing). A stack without a scope to check is no failure; the
run is DRIFT_CHECK_FAILED when no stack had one (unless --allow-empty). One
line per stack, one --json document with each stack's result and the totals,
DRIFT_DETECTED when any scope of any stack drifted; the summary has a section
per stack. There is no --changed: drift is what changed outside the engine,
which no diff of the repository shows.`,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, args []string) error {
			opts.Scopes = args
			return opts.prepare(cmd, f)
		}, runF, runDrift),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Env, "env", "", "environment to check (env SPONSON_CTX_ENV; default \"preview\")")
	fs.StringVar(&opts.Chdir, "chdir", "", "configuration directory (env SPONSON_CHDIR; default: the working directory)")
	fs.StringVar(&opts.Store, "store", "", "store URL, as for plan (env SPONSON_STORE)")
	fs.StringVar(&opts.Engine, "engine", "", "`PATH` of the tofu or terraform binary (env SPONSON_ENGINE)")
	fs.StringArrayVar(&opts.Vars, "var", nil, "set a variable, `NAME=VALUE`, passed to the engine as -var (repeatable)")
	fs.StringArrayVar(&opts.VarFiles, "var-file", nil, "load variables from a `FILE`, passed to the engine as -var-file (repeatable)")
	fs.StringVar(&opts.Summary, "summary", "", "write the Markdown drift summary to `FILE` (env SPONSON_SUMMARY)")
	opts.Every.Bind(cmd, "check every stack of the repository (or under --chdir), each with its own configuration, several at once")
	fs.BoolVar(&opts.AllowEmpty, "allow-empty", false, "report success for an environment with no scope to check (env SPONSON_DRIFT_ALLOW_EMPTY; without it: DRIFT_CHECK_FAILED, as that usually means the wrong store, environment or directory)")
	return cmd
}

// driftFlagEnv names the SPONSON_* variable of each flag of drift.
var driftFlagEnv = map[string]string{
	"env":         "SPONSON_CTX_ENV",
	"chdir":       "SPONSON_CHDIR",
	"store":       storeurl.EnvVar,
	"engine":      "SPONSON_ENGINE",
	"summary":     "SPONSON_SUMMARY",
	"allow-empty": "SPONSON_DRIFT_ALLOW_EMPTY",
	"parallelism": "SPONSON_PARALLELISM",
}

// prepare reads drift's variables and checks its arguments, then resolves
// the plan of the configuration's stack, or with --all finds every stack.
func (opts *DriftOptions) prepare(cmd *cobra.Command, f *cmdutil.Factory) error {
	// Every flag its SPONSON_* variable, before the plan's flags are made
	// from them.
	if err := cmdutil.BindEnv(cmd.Flags(), driftFlagEnv, opts.Getenv); err != nil {
		return err
	}
	if err := opts.Every.CheckOne(cmd); err != nil {
		return err
	}
	for _, s := range opts.Scopes {
		if err := runctx.ValidName("scope", s); err != nil {
			return errcode.Wrap(errcode.Usage, err, "drift %s", s)
		}
	}
	if opts.Every.All {
		opts.every, opts.warnings, opts.err = manystacks.StartEveryStack(cmd, f, "drift", opts.Chdir, opts.Every.Parallelism)
		opts.everyArgs = manystacks.EveryStackArgs(cmd, "drift", opts.Scopes)
		return nil
	}
	opts.in, opts.err = driftInput(cmd, f, opts)
	return nil
}

// runDrift runs drift in the configuration's stack, or with --all in every
// stack.
func runDrift(ctx context.Context, opts *DriftOptions) cmdutil.Outcome {
	if opts.err != nil {
		return cmdutil.Outcome{Command: "drift", Warnings: opts.warnings, Err: opts.err}
	}
	if opts.Every.All {
		return runDriftAll(ctx, opts)
	}
	return runDriftOne(ctx, opts)
}

// runDriftOne checks the scopes of the configuration's stack.
func runDriftOne(ctx context.Context, opts *DriftOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "drift"}
	in := opts.in
	defer in.Opts.Store.Close()
	env := in.Opts.Context.Environment
	targets, err := driftTargets(ctx, in.Opts.Store, in.Opts.Context.Stack, env, opts.Scopes)
	if err != nil {
		o.Err = err
		return o
	}
	p := cmdutil.Printer{W: opts.Human()}
	warnOut := cmdutil.Printer{W: opts.ErrOut}
	p.Line("sponson drift · %s · %d scopes", env, len(targets))

	d := summary.Drift{Environment: env}
	wantText := opts.Summary != "" || opts.Getenv("GITHUB_STEP_SUMMARY") != ""
	for _, t := range targets {
		ds := driftScope(ctx, in.Opts, t, wantText, io.Discard)
		if d.Engine == "" && ds.engine != "" {
			d.Engine = ds.engine
		}
		for _, w := range ds.warnings {
			warnOut.Warn(t.Key.Scope + ": " + w)
			o.Warnings = append(o.Warnings, t.Key.Scope+": "+w)
		}
		d.Scopes = append(d.Scopes, ds.DriftScope)
		p.Line("%s: %s", t.Key.Scope, driftLine(ds.DriftScope))
	}
	in2, dr, fa := d.Counts()
	o.Result = DriftResult{Environment: env, Store: in.StoreURL, Scopes: d.Scopes, InSync: in2, Drifted: dr, Failed: fa}
	if d.Scopes == nil {
		o.Result = DriftResult{Environment: env, Store: in.StoreURL, Scopes: []summary.DriftScope{}}
	}
	for _, w := range runner.WriteSummaries(opts.Getenv, opts.Summary, summary.Options{Limit: runner.StepSummaryLimit}, d.Markdown) {
		warnOut.Warn(w)
	}
	p.Line("sponson drift %s: %d in sync, %d drifted, %d failed", env, in2, dr, fa)
	if len(targets) == 0 && !opts.AllowEmpty {
		o.Err = errcode.New(errcode.DriftCheckFailed, "no scope of stack %s in environment %s of store %s has anything to check: nothing was checked", in.Opts.Context.Stack, env, in.StoreURL).
			WithHint("Check --store (SPONSON_STORE), --env (SPONSON_CTX_ENV) and --chdir (SPONSON_CHDIR): `sponson status` with the same settings lists the scopes. Pass --allow-empty when an environment without scopes is expected.")
		return o
	}
	o.Err = driftFound(d)
	return o
}

// driftInput resolves the plan every check runs: the run flags of a plan
// resolve everything but the scope, which each check sets; "main" only lets
// detection succeed outside CI.
func driftInput(cmd *cobra.Command, f *cmdutil.Factory, opts *DriftOptions) (*runner.RunInput, error) {
	rf := cmdutil.RunFlags{ContextFlags: cmdutil.ContextFlags{Scope: "main"}, Env: opts.Env, Chdir: opts.Chdir, Store: opts.Store, Engine: opts.Engine}
	in, err := runner.ResolveRun(&rf, cmd, f, scoperun.Plan, nil)
	if err != nil {
		return nil, err
	}
	if in.Opts.Vars, err = cmdutil.VarArgs(opts.VarFiles, opts.Vars); err != nil {
		in.Opts.Store.Close()
		return nil, err
	}
	return in, nil
}

// driftFound is the error of checks that found drift (DRIFT_DETECTED), or
// else could not check a scope (DRIFT_CHECK_FAILED).
func driftFound(d summary.Drift) error {
	_, dr, fa := d.Counts()
	switch {
	case dr > 0:
		return errcode.New(errcode.DriftDetected, "%d of %d scopes of %s drifted: %s", dr, len(d.Scopes), d.Environment, scopesWith(d, summary.Drifted))
	case fa > 0:
		return errcode.New(errcode.DriftCheckFailed, "%d of %d scopes of %s could not be checked: %s", fa, len(d.Scopes), d.Environment, scopesWith(d, summary.Failed))
	}
	return nil
}

// driftTargets lists the scopes of the configuration's stack to check:
// those named, or every scope of the environment that may own something
// (parent-object leases, destroyed and superseded scopes left out). Other
// stacks are other root modules, checked by a drift in their directories.
func driftTargets(ctx context.Context, st store.Lister, stack, env string, named []string) ([]store.ScopeSummary, error) {
	all, err := store.ListScopes(ctx, st, env, stack)
	if err != nil {
		return nil, err
	}
	byName := map[string]store.ScopeSummary{}
	for _, s := range all {
		byName[s.Key.Scope] = s
	}
	var out []store.ScopeSummary
	if len(named) > 0 {
		for _, n := range named {
			s, ok := byName[n]
			if !ok {
				s = store.ScopeSummary{Key: store.Key{Stack: stack, Environment: env, Scope: n}}
			}
			out = append(out, s)
		}
		return out, nil
	}
	for _, s := range all {
		if s.Latest == nil {
			continue
		}
		if r := s.Latest; len(r.Ledger) == 0 && (r.Status == receipt.StatusDestroyed || r.SupersededBy != "") {
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.Scope < out[j].Key.Scope })
	return out, nil
}

type driftFinding struct {
	summary.DriftScope
	engine   string
	warnings []string
}

// driftScope checks one scope: a refresh-only plan with the context the
// scope was last applied with, read-only.
func driftScope(ctx context.Context, base scoperun.Options, s store.ScopeSummary, wantText bool, engineOut io.Writer) driftFinding {
	if s.Latest == nil {
		msg := fmt.Sprintf("scope %s has no receipt in environment %s: it was never applied, so there is nothing to check", s.Key.Scope, s.Key.Environment)
		return driftFinding{DriftScope: summary.DriftScope{Scope: s.Key.Scope, Status: summary.Failed, Changes: []summary.Change{},
			Failure: &summary.Failure{Code: string(errcode.Usage), Message: msg, Hint: "Name a scope that `sponson status` lists."}}}
	}
	o := base
	c := runctx.Context{Stack: s.Key.Stack, Environment: s.Key.Environment, Scope: s.Key.Scope, Source: "drift"}
	if r := s.Latest; r != nil {
		c.Branch, c.PullRequest, c.Commit = r.Branch, r.PullRequest, r.Commit
	}
	o.Context = c
	o.EngineFlags.RefreshOnly = true
	o.PlanText = wantText
	o.Report.EngineOut = engineOut
	o.RunID = scoperun.NewRunID()
	// The engine session sets its variables in the process environment
	// (TF_CLI_CONFIG_FILE, TF_DATA_DIR, the state server's): each check
	// starts from the environment sponson was started with.
	saved := os.Environ()
	res, err := scoperun.Run(ctx, o)
	restoreEnv(saved)
	f := driftFinding{DriftScope: summary.DriftScope{Scope: s.Key.Scope, RunID: o.RunID, Changes: []summary.Change{}}}
	if res != nil {
		f.warnings = res.Warnings
		if res.Engine.Name != "" {
			f.engine = res.Engine.Name + " " + res.Engine.Version
		}
	}
	if err != nil {
		e := errcode.As(err)
		f.Status, f.Failure = summary.Failed, &summary.Failure{Code: string(e.Code), Message: e.Message, Hint: e.Hint}
		return f
	}
	if cs := summary.DriftFromPlan(res.Plan); len(cs) > 0 {
		f.Status, f.Changes, f.PlanText = summary.Drifted, cs, res.PlanText
		return f
	}
	f.Status = summary.InSync
	return f
}

// restoreEnv makes the process environment exactly env again.
func restoreEnv(env []string) {
	os.Clearenv()
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			_ = os.Setenv(k, v)
		}
	}
}

func driftLine(s summary.DriftScope) string {
	switch s.Status {
	case summary.Drifted:
		var names []string
		for _, c := range s.Changes {
			names = append(names, c.Address+" ("+string(c.Action)+")")
		}
		return fmt.Sprintf("drifted: %v", names)
	case summary.Failed:
		return fmt.Sprintf("failed: %s %s", s.Failure.Code, s.Failure.Message)
	}
	return "in sync"
}

func scopesWith(d summary.Drift, status string) string {
	var out []string
	for _, s := range d.Scopes {
		if s.Status == status {
			out = append(out, s.Scope)
		}
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// StacksDriftResult is the result part of the envelope of `sponson drift
// --all`: each stack's drift, and the totals of its scopes.
type StacksDriftResult struct {
	Environment string                      `json:"environment"`
	Stacks      []manystacks.StackRunResult `json:"stacks"`
	InSync      int                         `json:"inSync"`
	Drifted     int                         `json:"drifted"`
	Failed      int                         `json:"failed"`
}

// runDriftAll is `sponson drift --all`: drift in every stack at once (up
// to the parallelism), each allowed to find nothing; the run fails with
// DRIFT_CHECK_FAILED when no stack found a scope, unless --allow-empty.
func runDriftAll(ctx context.Context, opts *DriftOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "drift", Warnings: opts.warnings}
	m := opts.every
	tmp, err := os.MkdirTemp("", "sponson-drift-")
	if err != nil {
		o.Err = errcode.Wrap(errcode.Internal, err, "creating the run's temporary directory")
		return o
	}
	defer os.RemoveAll(tmp)
	base := slices.DeleteFunc(slices.Clone(opts.everyArgs), func(a string) bool { return strings.HasPrefix(a, "--allow-empty=") })
	m.ArgsFor = func(s *stackgraph.Stack) []string {
		return append(slices.Clone(base), "--allow-empty", "--summary="+manystacks.StackSummaryFile(tmp, s.Directory))
	}
	m.Quiet = func(r *manystacks.StackRunResult) bool {
		return r.Error != nil && r.Error.Code == errcode.DriftDetected
	}
	m.Line = driftStackLine
	res := StacksDriftResult{Stacks: m.Run(ctx, false, opts.Every.Parallelism)}
	var md, drifted []string
	for _, r := range res.Stacks {
		drifted = append(drifted, res.add(r)...)
		for _, w := range r.Warnings {
			o.Warnings = append(o.Warnings, r.Directory+": "+w)
		}
		if b, err := os.ReadFile(manystacks.StackSummaryFile(tmp, r.Directory)); err == nil && len(b) > 0 {
			md = append(md, fmt.Sprintf("#### `%s`\n\n%s", r.Directory, b))
		}
	}
	o.Result = res
	m.Lines.Line("sponson drift --all %s: %d in sync, %d drifted, %d failed in %d stacks", res.Environment, res.InSync, res.Drifted, res.Failed, len(res.Stacks))
	text := fmt.Sprintf("### sponson drift --all · %s: %d in sync, %d drifted, %d failed in %d stacks\n\n%s", res.Environment, res.InSync, res.Drifted, res.Failed, len(res.Stacks), strings.Join(md, "\n"))
	warnOut := cmdutil.Printer{W: opts.ErrOut}
	for _, w := range runner.WriteSummaries(opts.Getenv, opts.Summary, summary.Options{}, func(summary.Options) string { return text }) {
		warnOut.Warn(w)
	}
	scopes := res.InSync + res.Drifted + res.Failed
	switch {
	case res.Drifted > 0:
		o.Err = errcode.New(errcode.DriftDetected, "%d of %d scopes drifted: %s", res.Drifted, scopes, strings.Join(drifted, ", ")).With("drifted", drifted)
	case slices.ContainsFunc(res.Stacks, func(r manystacks.StackRunResult) bool { return r.Status != stackrun.Succeeded }):
		o.Err = manystacks.WorstOf(res.Stacks)
	case scopes == 0 && !opts.AllowEmpty:
		o.Err = errcode.New(errcode.DriftCheckFailed, "no scope of any of the %d stacks under %s has anything to check in environment %s: nothing was checked", len(res.Stacks), m.Set.Root, res.Environment).
			WithHint("Check --store (SPONSON_STORE), --env (SPONSON_CTX_ENV) and --chdir (SPONSON_CHDIR). Pass --allow-empty when an environment without scopes is expected.")
	}
	return o
}

// add counts the scopes of one stack's drift into the totals, and returns
// its drifted scopes as "DIRECTORY SCOPE".
func (res *StacksDriftResult) add(r manystacks.StackRunResult) []string {
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
func driftStackLine(r *manystacks.StackRunResult) string {
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
