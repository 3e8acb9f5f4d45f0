// Package runner is the run of one scope from the command line, shared by the
// families that run the engine over a scope (plan, apply, destroy, import,
// gc, drift): flags resolved into the run's input, the engine session, the
// checkout and policy checks, the summary, the comment and the preview.
package runner

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/rootmodule"
	"github.com/sponson/terraform-provider-sponson/internal/rules"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackoutputs"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
	"github.com/sponson/terraform-provider-sponson/internal/version"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// RunInput is everything resolved from the flags before a run starts.
type RunInput struct {
	Opts     scoperun.Options
	StoreURL string
	// rules are the trusted rules the run enforces, with the change's
	// proposal when it makes one (docs/design.md §2.18).
	rules  rules.Rules
	Review cmdutil.ReviewFlags
	// stack names the run's stack in its summary.
	stack string
	// savedPlanOut is plan's -out FILE and appliesPlan apply's FILE, as
	// given, for the summary.
	savedPlanOut, appliesPlan string
	// detailedExitcode is plan -detailed-exitcode: exit 2 for changes.
	DetailedExitcode bool
	warnings         []string // decided before the run: shown with its own
	// IO is where the run writes and the environment it reads; HTTP the
	// client of the CI host's API (comments, deployments); Now the clock of
	// the log's section markers. Unpacked from the Factory once.
	IO   *cmdutil.IO
	HTTP *http.Client
	Now  func() time.Time
}

// resolve turns flags into run options, refusing early what can be refused
// without the engine and before the lease: bad flags (the engine's own
// included), an undecidable context, an apply or destroy of a plan-only
// context (the merge queue), rules that cannot be read from the trusted
// revision in CI, an environment the trusted rules do not declare
// (sponson.hcl of the default branch, docs/design.md §2.18), a protected
// environment without an allowed approver, a missing engine, a policy that
// does not compile. Each piece resolves one thing, in this order.
func ResolveRun(r *cmdutil.RunFlags, cmd *cobra.Command, f *cmdutil.Factory, command scoperun.Command, positional []string) (*RunInput, error) {
	dir, err := readRunFlags(r, cmd, f, command, positional)
	if err != nil {
		return nil, err
	}
	c, src, err := detectRunContext(r, f, dir, command)
	if err != nil {
		return nil, err
	}
	rs, err := cmdutil.TrustedRules(cmd.Context(), f.Getenv, dir, c)
	if err != nil {
		return nil, err
	}
	env, err := rs.Declared.Lookup(c.Environment)
	if err != nil {
		return nil, err
	}
	c.Environment = env.Name
	stk, warnings, err := placeRun(r, cmd, f, dir, src, &c)
	if err != nil {
		return nil, err
	}
	if w := WorkspaceWarning(f.Getenv, c); w != "" {
		warnings = append(warnings, w)
	}
	approver, err := runApprover(r, command, env)
	if err != nil {
		return nil, err
	}
	bin, self, err := locateEngine(r, f)
	if err != nil {
		return nil, err
	}
	pol, proposedPol, polWarning, err := runPolicies(cmd.Context(), rs, env.Name)
	if err != nil {
		return nil, err
	}
	hb, err := heartbeat(f.Getenv)
	if err != nil {
		return nil, err
	}
	st, url, err := storeurl.OpenFor(r.Store, dir, c.Environment)
	if err != nil {
		return nil, err
	}
	io := f.IO()
	io.JSON = cmdutil.JSONWanted(cmd, f.Getenv)
	in := &RunInput{
		IO:               io,
		HTTP:             f.HTTP,
		Now:              f.Now,
		rules:            rs,
		StoreURL:         url,
		DetailedExitcode: r.EngineArgs.DetailedExitcode,
		warnings:         warnings,
		stack:            stk.Name,
		Opts: scoperun.Options{
			Command:          command,
			Dir:              dir,
			Context:          c,
			Store:            st,
			StoreURL:         storeurl.HandoverURL(r.Store, url),
			Engine:           bin,
			ProviderBinary:   self,
			ProviderVersion:  version.Mirror(),
			Lease:            lease.Config{TTL: r.LeaseTTL, Wait: r.Wait, WaitTimeout: r.WaitTimeout},
			ApprovedBy:       approver,
			Protected:        env.Protected,
			Declared:         cmdutil.DeclarationOf(env, rs.Origin),
			AllowOlderCommit: r.AllowOlderCommit,
			Vars:             r.EngineArgs.Vars,
			EngineFlags:      r.EngineArgs.Flags,
			ServeProvider:    serveProvider,
			Report:           scoperun.Reporter{Heartbeat: hb},
			Policy:           pol,
			ProposedPolicy:   proposedPol,
		},
	}
	if polWarning != "" {
		in.warnings = append(in.warnings, polWarning)
	}
	if err := checkSavedPlan(r, f, in); err != nil {
		st.Close()
		return nil, err
	}
	return in, nil
}

// readFlags gives the flags their SPONSON_* variables, reads the engine's
// flags, and returns the configuration directory.
func readRunFlags(r *cmdutil.RunFlags, cmd *cobra.Command, f *cmdutil.Factory, command scoperun.Command, positional []string) (string, error) {
	if err := cmdutil.BindEnv(cmd.Flags(), cmdutil.RunFlagEnv, f.Getenv); err != nil {
		return "", err
	}
	name := string(command)
	if r.EngineCommand != "" {
		name = r.EngineCommand
	}
	ef, err := EngineFlags(cmd, name, f.Getenv)
	if err != nil {
		return "", err
	}
	if err := applyEngineFlags(r, cmd, name, ef, positional); err != nil {
		return "", err
	}
	dir, err := filepath.Abs(cmdutil.OrDot(r.Chdir))
	if err != nil {
		return "", errcode.Wrap(errcode.Usage, err, "--chdir %q", r.Chdir)
	}
	if command != scoperun.Plan && r.LeaseTTL < time.Second {
		return "", errcode.New(errcode.Usage, "--lease-ttl %s is too short; it must be at least 1s", r.LeaseTTL)
	}
	return dir, nil
}

// detectContext decides the run's context (runctx.Detect), refusing an
// apply or destroy in a plan-only one.
func detectRunContext(r *cmdutil.RunFlags, f *cmdutil.Factory, dir string, command scoperun.Command) (runctx.Context, runctx.Sources, error) {
	src := runctx.ProcessSources(dir)
	src.Getenv = f.Getenv
	c, err := runctx.Detect(runctx.Flags{Environment: r.Env, Scope: r.Scope, Branch: r.Branch, PullRequest: r.PR, Commit: r.Commit}, src)
	if err != nil {
		return c, src, err
	}
	if command != scoperun.Plan && c.PlanOnly != "" {
		return c, src, errcode.New(errcode.CtxNull, "%s refused in scope %s: %s", command, c.Scope, c.PlanOnly).
			WithHint("Run `sponson plan` in merge queue jobs and apply on the push to the target branch, or pass --scope NAME to choose a scope yourself.").
			With("planOnly", c.PlanOnly)
	}
	return c, src, nil
}

// placeRun decides the run's stack, into c, refuses a configuration that
// uses sponson's provider without requiring it, and checks the checkout; it
// returns the warnings of stack and checkout.
func placeRun(r *cmdutil.RunFlags, cmd *cobra.Command, f *cmdutil.Factory, dir string, src runctx.Sources, c *runctx.Context) (stack.Result, []string, error) {
	// The stack is decided before anything is read or leased: it is part
	// of every key of the store. The root module is read once for both
	// the stack and the provider requirement.
	files, err := rootmodule.Files(dir)
	if err != nil {
		return stack.Result{}, nil, errcode.Wrap(errcode.Usage, err, "reading the configuration in %s", dir)
	}
	declared, err := stack.DeclaredIn(files)
	if err != nil {
		return stack.Result{}, nil, err
	}
	stk, err := cmdutil.DetectDeclared(f.Getenv, dir, r.Stack, declared)
	if err != nil {
		return stk, nil, err
	}
	if err := requireSponson(dir, files); err != nil {
		return stk, nil, err
	}
	c.Stack = stk.Name
	var warnings []string
	if stk.Warning != "" {
		warnings = append(warnings, stk.Warning)
	}
	w, err := checkCheckout(cmd.Context(), f.Getenv, f.HTTP, src, *c, r.StrictCheckout)
	if err != nil {
		return stk, nil, err
	}
	if w != "" {
		warnings = append(warnings, w)
	}
	return stk, warnings, nil
}

// requireSponson refuses a configuration that uses sponson's resources or
// data sources without naming the provider in required_providers, before
// the engine fails on hashicorp/sponson without saying what to add
// (rootmodule.UnrequiredSponson, issue 52).
func requireSponson(dir string, files []*hcl.File) error {
	// OpenTofu's .tofu files, which rootmodule does not read, may hold the
	// requirement: the engine judges those configurations itself.
	if tofu, _ := filepath.Glob(filepath.Join(dir, "*.tofu*")); len(tofu) > 0 {
		return nil
	}
	where := rootmodule.UnrequiredSponson(files)
	if where == "" {
		return nil
	}
	return errcode.New(errcode.Usage, "%s uses the sponson provider, but no required_providers block names it: the engine would look for hashicorp/sponson, which does not exist", where).
		WithHint("Add to a terraform block: required_providers { sponson = { source = \"sponson/sponson\" } }")
}

// WorkspaceWarning says that TF_WORKSPACE, which selects an engine
// workspace, is not what chooses this run's state: sponson keeps one state
// per environment and scope (issue 52: `TF_WORKSPACE=staging sponson plan`
// planned preview/main without a word).
func WorkspaceWarning(getenv func(string) string, c runctx.Context) string {
	ws := strings.TrimSpace(getenv("TF_WORKSPACE"))
	if ws == "" || ws == "default" {
		return ""
	}
	return fmt.Sprintf("TF_WORKSPACE=%s does not choose the state: sponson keeps one state per environment and scope, and this run is environment %s, scope %s; choose them with --env and --scope (%s, %s)",
		ws, c.Environment, c.Scope, runctx.EnvEnvironment, runctx.EnvScope)
}

// approver is the run's approver: --approved-by, which an apply or destroy
// in a protected environment must name one of its approvers.
func runApprover(r *cmdutil.RunFlags, command scoperun.Command, env environments.Environment) (string, error) {
	approver := strings.TrimSpace(r.ApprovedBy)
	if command == scoperun.Plan {
		return approver, nil
	}
	approver, err := env.Approve(approver)
	if err != nil {
		e := errcode.As(err)
		e.Message = string(command) + ": " + e.Message
		return "", e
	}
	return approver, nil
}

// locateEngine finds the engine binary, refusing an OpenTofu flag given to
// Terraform, and the sponson binary that serves the provider.
func locateEngine(r *cmdutil.RunFlags, f *cmdutil.Factory) (bin, self string, err error) {
	bin, err = engine.Locate(r.Engine, f.Lookup)
	if err != nil {
		return "", "", err
	}
	if len(r.EngineArgs.Flags.Excludes) > 0 && !strings.Contains(filepath.Base(bin), "tofu") {
		return "", "", errcode.New(errcode.Usage, "-exclude is an OpenTofu flag; the engine %s is HashiCorp Terraform, which has no such flag", bin).
			WithHint("Name the resources to keep with -target instead, or run OpenTofu (--engine).")
	}
	self, err = f.Executable()
	if err != nil {
		return "", "", errcode.Wrap(errcode.Internal, err, "cannot find the sponson executable to serve the provider")
	}
	return bin, self, nil
}

// savedPlan fills the run's options for `plan -out FILE` and `apply FILE`.
// The plan file is read and its seal checked before anything runs: a
// damaged file is refused (PLAN_CORRUPT) before the lease is taken.
func checkSavedPlan(r *cmdutil.RunFlags, f *cmdutil.Factory, in *RunInput) error {
	if r.JSONPlan != "" {
		p, err := filepath.Abs(r.JSONPlan)
		if err != nil {
			return errcode.Wrap(errcode.Usage, err, "--json-plan %q", r.JSONPlan)
		}
		in.Opts.JSONPlan = p
	}
	if r.SavePlan == "" && r.PlanFile == "" {
		return nil
	}
	key, err := savedplan.Key(f.Getenv)
	if err != nil {
		return err
	}
	in.Opts.PlanKey = key
	if r.SavePlan != "" {
		p, err := filepath.Abs(r.SavePlan)
		if err != nil {
			return errcode.Wrap(errcode.Usage, err, "-out %q", r.SavePlan)
		}
		in.Opts.SavePlan, in.savedPlanOut = p, r.SavePlan
	}
	if r.PlanFile != "" {
		sp, err := savedplan.Read(r.PlanFile, key)
		if err != nil {
			return err
		}
		in.Opts.Saved, in.appliesPlan = sp, r.PlanFile
	}
	return nil
}

// RunResult is the result part of the envelope of plan, apply and destroy.
type RunResult struct {
	RunID       string         `json:"runId"`
	Stack       string         `json:"stack"`
	Environment string         `json:"environment"`
	Scope       string         `json:"scope"`
	Status      string         `json:"status"`
	Summary     engine.Summary `json:"summary"`
	// Changes lists each planned change by address and action.
	Changes []summary.Change `json:"changes"`
	Engine  receipt.Engine   `json:"engine,omitzero"`
	Store   string           `json:"store"`
	Context runctx.Context   `json:"context"`
	Receipt *receipt.Receipt `json:"receipt,omitempty"`
	Running *store.LeaseInfo `json:"applyRunning,omitempty"`
	// Reads are the other stacks' outputs the plan read (sponson_outputs):
	// their state, or in a plan of many stacks their plan's outputs. Their
	// Provisional are those the configuration reads (shownReads); the
	// receipt and the saved plan keep every one the data source read.
	Reads []receipt.StackRead `json:"reads,omitempty"`
	// Rules says where the rules that judged the run came from;
	// ProposedRules how the change's own rules differ, effective when
	// merged (docs/design.md §2.18).
	Rules         rules.Origin `json:"rules"`
	ProposedRules []string     `json:"proposedRules,omitempty"`
	// Policies is the verdict of the environment's policies, and of the
	// change's proposed ones (docs/design.md §2.19).
	Policies *receipt.Policies `json:"policies,omitempty"`
}

// handPlannedOutputs writes a plan's outputs where the run of many stacks
// that started this one asked (stackoutputs.EnvVar), for the plans of the
// stacks that read them; it returns a warning when it cannot.
func handPlannedOutputs(getenv func(string) string, command scoperun.Command, res *scoperun.Result, err error) string {
	dir := getenv(stackoutputs.EnvVar)
	if dir == "" || command != scoperun.Plan || err != nil || res == nil || res.Plan == nil {
		return ""
	}
	p, perr := stackoutputs.FromPlan(res.Key, res.Plan)
	p.RunID = res.RunID
	if perr == nil {
		perr = stackoutputs.Write(dir, p)
	}
	if perr != nil {
		return fmt.Sprintf("the planned outputs of this stack could not be handed to the stacks that read them (they read its applied state instead): %v", perr)
	}
	return ""
}

// RunScope performs one run and renders its progress; the final outcome is
// returned for Run to print.
func RunScope(ctx context.Context, in *RunInput) cmdutil.Outcome {
	out, jsonMode := in.IO, in.IO.JSON
	o := in.Opts
	defer o.Store.Close()
	p := cmdutil.Printer{W: out.Out}
	engineOut := out.Out
	if jsonMode {
		p.W = out.ErrOut
		engineOut = out.ErrOut
	}
	warnOut := cmdutil.Printer{W: out.ErrOut}
	o.RunID = scoperun.NewRunID()
	wait := cmdutil.NewWaitLine(out.ErrOut, out.IsTerminal != nil && out.IsTerminal(out.ErrOut), nil)
	progress, closeProgress := cmdutil.ProgressPipe(out.Getenv)
	defer closeProgress()
	o.Report = scoperun.Reporter{
		EngineOut: engineOut,
		Heartbeat: o.Report.Heartbeat,
		OnWait:    wait.Event,
		Warn:      warnOut.Warn,
		Info:      func(s string) { warnOut.Line("%s", s) },
		Section:   cmdutil.LogSections(out.Getenv, in.Now, engineOut),
		Progress:  progress,
	}
	if out.Getenv("GITHUB_ACTIONS") == "true" {
		o.Report.Diagnostics = func(d []tfjson.Diagnostic) { cmdutil.AnnotateDiagnostics(out, o.Dir, d) }
	}
	o.Job = runctx.DetectJob(out.Getenv)
	if o.Host, _ = os.Hostname(); o.Host == "" {
		o.Host = "unknown"
	}
	name := string(o.Command)
	if o.Label != "" {
		name = o.Label
	}
	header := cmdutil.Header(name, o.Context.Environment, o.Context.Scope, o.RunID)
	p.Line("%s", header)
	if progress != nil {
		progress(scoperun.Progress{Step: scoperun.StepStart, Message: header})
	}
	o.PlanText = in.Review.Wanted(out.Getenv)
	for _, w := range in.warnings {
		warnOut.Warn(w)
	}
	if d := in.rules.Describe(); d != "" {
		warnOut.Line("%s", d)
	}
	if p := in.rules.Proposed; p != nil {
		for _, c := range p.Changes {
			warnOut.Line("  proposed rule change: %s", c)
		}
	}
	res, err := scoperun.Run(ctx, o)
	res.Warnings = append(append([]string{}, in.warnings...), res.Warnings...)
	if w := handPlannedOutputs(out.Getenv, o.Command, res, err); w != "" {
		res.Warnings = append(res.Warnings, w)
		warnOut.Warn(w)
	}
	rr := RunResult{
		RunID: res.RunID, Stack: res.Key.Stack, Environment: res.Key.Environment, Scope: res.Key.Scope, Status: res.Status,
		Summary: res.Summary, Changes: summary.ChangesFromPlan(res.Plan), Engine: res.Engine, Store: in.StoreURL,
		Context: o.Context, Receipt: res.Receipt, Running: res.Running, Reads: shownReads(res.Plan),
		Rules: in.rules.Origin, Policies: res.Policies,
	}
	if p := in.rules.Proposed; p != nil {
		rr.ProposedRules = p.Changes
	}
	warnings := res.Warnings
	for _, w := range publish(ctx, in, res, err) {
		warnOut.Warn(w)
		warnings = append(warnings, w)
	}
	if err == nil {
		p.Line("%s", ClosingLine(o.Command, rr))
	}
	return cmdutil.Outcome{Command: string(o.Command), Result: rr, Warnings: warnings, Err: err,
		DetailedExitcode: in.DetailedExitcode, Changes: o.Command == scoperun.Plan && res.Status == "changes"}
}

func ClosingLine(c scoperun.Command, r RunResult) string {
	where := r.Environment + "/" + r.Scope
	switch c {
	case scoperun.Plan:
		line := fmt.Sprintf("sponson plan %s: %s", where, r.Summary)
		if r.Summary.Empty() {
			line = fmt.Sprintf("sponson plan %s: no changes", where)
		}
		for _, read := range r.Reads {
			if len(read.Provisional) > 0 {
				line += fmt.Sprintf("; provisional: %s of %s known after its apply", strings.Join(read.Provisional, ", "), read.Stack)
			}
		}
		return line
	case scoperun.Destroy:
		if r.Status == "nothing" {
			return fmt.Sprintf("sponson destroy %s: nothing to destroy", where)
		}
		fallthrough
	default:
		owned := 0
		if r.Receipt != nil {
			owned = len(r.Receipt.Ledger)
		}
		return fmt.Sprintf("sponson %s %s: %s (%s); the scope owns %d resources; receipt %s", c, where, r.Status, r.Summary, owned, r.RunID)
	}
}
