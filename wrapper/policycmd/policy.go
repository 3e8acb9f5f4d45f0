// Package policycmd is the `sponson policy` command family: policies tried
// locally, before a run does (docs/design.md §2.19 Policies).
package policycmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/policy"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
)

// IO is what the commands need of the process: where they write, and its
// environment.
type IO struct {
	Out    io.Writer // the verdict
	ErrOut io.Writer
	Getenv func(string) string
}

// Report receives a command's outcome: its name, its result (the --json
// document's result) and its error. The frame prints it.
type Report func(command string, result any, err error)

// TestOptions are the options of `sponson policy test`.
type TestOptions struct {
	IO IO
	// Policies are the .rego files and directories to evaluate.
	Policies []string
	// Plan is the plan JSON file (`show -json`) or saved sponson plan.
	Plan string
	// Context is data.sponson; the fields the flags leave empty come from
	// a saved plan's record.
	Context policy.Context
	// JSON is set under --json: the frame prints the result.
	JSON bool
}

// TestResult is the result of `sponson policy test`.
type TestResult struct {
	Verdict policy.Verdict `json:"verdict"`
	Context policy.Context `json:"context"`
	Files   []string       `json:"files"`
	// TestsPassed and TestsFailed are the OPA tests (test_ rules of
	// *_test.rego files) among the policies.
	TestsPassed int      `json:"testsPassed"`
	TestsFailed []string `json:"testsFailed,omitempty"`
}

// NewCmdPolicy builds `sponson policy` and its subcommands. runF replaces
// the run function of `policy test` (nil: the real one), the seam of the
// command's tests.
func NewCmdPolicy(o IO, report Report, runF func(context.Context, *TestOptions) (*TestResult, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Try the environment's Rego policies on a plan",
		Long: `Policies (sponson.hcl: policies = ["policy"], at the top or per environment) are
Rego files in conftest's conventions that judge every plan, apply and destroy of
the environment, after the plan and before anything is written. Runs read them
from the trusted revision (the default branch), never from the change under
review; a change's own edits of them are evaluated for the review alone.`,
	}
	cmd.AddCommand(newCmdTest(o, report, runF))
	return cmd
}

func newCmdTest(o IO, report Report, runF func(context.Context, *TestOptions) (*TestResult, error)) *cobra.Command {
	opts := &TestOptions{IO: o}
	if runF == nil {
		runF = runTest
	}
	cmd := &cobra.Command{
		Use:   "test --policy PATH... [flags] PLAN",
		Short: "Evaluate policies on a plan JSON file or a saved plan",
		Long: `Evaluates the policies at --policy (.rego files, or directories read
recursively) on PLAN, as a run does, and prints the verdict; it exits 1 with
POLICY_DENIED when a deny or violation rule refuses the plan. It needs no
engine and no store.

PLAN is the engine's plan JSON (` + "`sponson show -json FILE > plan.json`" + `, or
` + "`terraform show -json`" + `), or a saved plan of ` + "`sponson plan -out FILE`" + `, which
holds its plan JSON (SPONSON_PLAN_KEY when it was sealed with a key).

The policies follow conftest's conventions: package main; rules deny, violation
(both refuse) and warn (shown), optionally with a suffix (deny_public); each a
set of strings or of objects with msg. input is the plan JSON; sponson's context
is data.sponson (environment, scope, stack, pull_request, actor, run_id, and
owners: the owning scope of each address the plan touches). The flags give the
context; a saved plan's record fills what they leave out (its owners included).
OPA tests (test_ rules in *_test.rego files beside the policies) run too: a
failing test exits 2 (USAGE).`,
		Example: `  sponson show -json plan.bin > plan.json
  sponson policy test --policy policy --env production --pr 12 plan.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Plan = args[0]
			j, _ := cmd.Flags().GetBool("json")
			v := strings.ToLower(strings.TrimSpace(o.Getenv("SPONSON_JSON")))
			opts.JSON = j || v == "1" || v == "true" || v == "yes"
			var err error
			var res *TestResult
			if len(opts.Policies) == 0 {
				err = errcode.New(errcode.Usage, "policy test needs --policy").WithHint("Name the policy files or directories: --policy policy.")
			} else {
				res, err = runF(cmd.Context(), opts)
			}
			if res == nil {
				// A nil *TestResult in the interface would print as null.
				report("policy", nil, err)
				return nil
			}
			report("policy", res, err)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Policies, "policy", nil, "a .rego file or a directory of them (repeatable)")
	f.StringVar(&opts.Context.Environment, "env", "", "data.sponson.environment (default: the saved plan's)")
	f.StringVar(&opts.Context.Scope, "scope", "", "data.sponson.scope (default: the saved plan's)")
	f.StringVar(&opts.Context.Stack, "stack", "", "data.sponson.stack (default: the saved plan's)")
	f.IntVar(&opts.Context.PullRequest, "pr", 0, "data.sponson.pull_request (default: the saved plan's)")
	f.StringVar(&opts.Context.Actor, "actor", "", "data.sponson.actor")
	return cmd
}

// runTest is `sponson policy test`.
func runTest(ctx context.Context, o *TestOptions) (*TestResult, error) {
	planJSON, sctx, err := readPlan(o.Plan, o.IO.Getenv, o.Context)
	if err != nil {
		return nil, err
	}
	fsys, paths, err := rooted(o.Policies)
	if err != nil {
		return nil, err
	}
	set, err := policy.Load(ctx, fsys, paths)
	if err != nil {
		return nil, err
	}
	v, err := set.Eval(ctx, planJSON, sctx)
	if err != nil {
		return nil, err
	}
	res := &TestResult{Verdict: v, Context: sctx, Files: set.Files}
	if res.TestsPassed, res.TestsFailed, err = set.Test(ctx); err != nil {
		return res, err
	}
	if !o.JSON {
		printVerdict(o.IO.Out, res)
	}
	if v.Denied() {
		lines := make([]string, len(v.Deny))
		for i, m := range v.Deny {
			lines[i] = fmt.Sprintf("%s (%s, %s)", m.Msg, m.Rule, m.Policy)
		}
		return res, errcode.New(errcode.PolicyDenied, "the policies refuse the plan %s: %s", o.Plan, strings.Join(lines, "; ")).With("deny", v.Deny)
	}
	if len(res.TestsFailed) > 0 {
		return res, errcode.New(errcode.Usage, "%d policy tests failed: %s", len(res.TestsFailed), strings.Join(res.TestsFailed, "; ")).
			WithHint("Fix the policies or their tests (`opa test` runs the same tests).")
	}
	return res, nil
}

// printVerdict writes the verdict for people.
func printVerdict(w io.Writer, r *TestResult) {
	for _, m := range r.Verdict.Deny {
		fmt.Fprintf(w, "FAIL - %s - %s - %s\n", m.Policy, m.Rule, m.Msg)
	}
	for _, m := range r.Verdict.Warn {
		fmt.Fprintf(w, "WARN - %s - %s - %s\n", m.Policy, m.Rule, m.Msg)
	}
	for _, t := range r.TestsFailed {
		fmt.Fprintf(w, "TEST FAILED - %s\n", t)
	}
	verdict := "passed"
	if r.Verdict.Denied() {
		verdict = "denied"
	}
	fmt.Fprintf(w, "policies %s: %d denied, %d warnings, %d files", verdict, len(r.Verdict.Deny), len(r.Verdict.Warn), len(r.Files))
	if n := r.TestsPassed + len(r.TestsFailed); n > 0 {
		fmt.Fprintf(w, ", %d of %d tests passed", r.TestsPassed, n)
	}
	fmt.Fprintln(w)
}

// readPlan reads PLAN: a saved plan (its plan JSON, and its record for the
// context the flags leave empty) or a plan JSON file.
func readPlan(path string, getenv func(string) string, given policy.Context) ([]byte, policy.Context, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, given, errcode.Wrap(errcode.Usage, err, "cannot read the plan %s", path)
	}
	sctx := given
	if !bytes.HasPrefix(data, []byte("sponson-plan/")) {
		if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
			return nil, given, errcode.New(errcode.Usage, "%s is neither plan JSON nor a saved sponson plan", path).
				WithHint("Give the engine's plan JSON (`sponson show -json FILE > plan.json`) or a saved plan of `sponson plan -out FILE`.")
		}
		return data, sctx, nil
	}
	key, err := savedplan.Key(getenv)
	if err != nil {
		return nil, given, err
	}
	f, err := savedplan.Decode(data, key)
	if err != nil {
		return nil, given, err
	}
	if len(f.PlanJSON) == 0 {
		return nil, given, errcode.New(errcode.Usage, "the saved plan %s holds no plan JSON", path).
			WithHint("Show it with the engine and test that: `sponson show -json " + path + " > plan.json`.")
	}
	m := f.Meta
	fill := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	fill(&sctx.Environment, m.Environment)
	fill(&sctx.Scope, m.Scope)
	fill(&sctx.Stack, m.Stack)
	fill(&sctx.RunID, m.RunID)
	if sctx.PullRequest == 0 {
		sctx.PullRequest = m.PullRequest
	}
	byID := map[string]string{}
	for _, o := range m.Owners {
		byID[o.Identity] = o.Scope
	}
	sctx.Owners = map[string]string{}
	for _, t := range m.Touches {
		for _, id := range append([]string{t.Identity}, t.Keys...) {
			if s, ok := byID[id]; ok && id != "" {
				sctx.Owners[t.Address] = s
				break
			}
		}
	}
	return f.PlanJSON, sctx, nil
}

// rooted is a file system the policy paths can be read from and the paths
// in it: the working directory when they are all inside it (the messages
// then name them as given), else the root.
func rooted(paths []string) (fsys fs.FS, rel []string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "reading the working directory")
	}
	inside := true
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, nil, errcode.Wrap(errcode.Usage, err, "the policy path %q", p)
		}
		r, err := filepath.Rel(wd, abs)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			inside = false
		}
		rel = append(rel, filepath.ToSlash(r))
	}
	if inside {
		return os.DirFS(wd), rel, nil
	}
	rel = rel[:0]
	for _, p := range paths {
		abs, _ := filepath.Abs(p)
		rel = append(rel, strings.TrimPrefix(filepath.ToSlash(abs), "/"))
	}
	return os.DirFS("/"), rel, nil
}
