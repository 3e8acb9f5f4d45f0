package cmdutil

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/sponson/terraform-provider-sponson/internal/engineflag"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// The flags that several commands share, and how a flag gets its SPONSON_*
// variable: plan, apply and destroy (RunFlags, ReviewFlags), status,
// receipt and the other readers of a store (StoreFlags), and --stack. A
// command's own flags stay in its file.

// RunFlags are the flags plan, apply and destroy share.
type RunFlags struct {
	ContextFlags
	Env, Commit           string
	Chdir, Store, Engine  string
	Wait                  bool
	WaitTimeout, LeaseTTL time.Duration
	ApprovedBy            string
	AllowOlderCommit      bool
	// StrictCheckout refuses (CHECKOUT_NOT_HEAD) what is otherwise a
	// warning: a comment-triggered run whose HEAD is not the pull
	// request's head, a pull_request_target run of a fork's head.
	StrictCheckout bool
	// engineArgs holds the engineArgs flags (engineflag), read by resolve.
	EngineArgs engineflag.Parsed
	// savePlan is plan's -out FILE; planFile apply's saved plan FILE.
	SavePlan, PlanFile string
	// JSONPlan is plan's --json-plan FILE: the engine's plan JSON.
	JSONPlan string
	// engineCommand names the engine command whose flags the command
	// takes, when it is not the run's command (import applies).
	EngineCommand string
	// positional are the arguments of plan, apply and destroy: apply's
	// saved plan FILE.
	Positional []string
}

// RunFlagEnv names the SPONSON_* variable of each flag. The context flags
// use the SPONSON_CTX_* names that context detection reads.
var RunFlagEnv = map[string]string{
	"chdir":           "SPONSON_CHDIR",
	"store":           storeurl.EnvVar,
	"engine":          "SPONSON_ENGINE",
	"wait":            "SPONSON_WAIT",
	"wait-timeout":    "SPONSON_WAIT_TIMEOUT",
	"lease-ttl":       "SPONSON_LEASE_TTL",
	"approved-by":     "SPONSON_APPROVED_BY",
	"strict-checkout": "SPONSON_STRICT_CHECKOUT",
	// allow-older-commit has none on purpose: rolling a scope back is
	// asked for on the command line of one run, never set once for a job.
}

func (r *RunFlags) Bind(cmd *cobra.Command, writes bool) {
	fs := cmd.Flags()
	fs.StringVar(&r.Env, "env", "", "environment to run in, one sponson.hcl declares (matched case-insensitively; env SPONSON_CTX_ENV; default \"preview\"; never inferred from the branch)")
	r.ContextFlags.Bind(cmd, runContextHelp)
	fs.StringVar(&r.Commit, "commit", "", "commit recorded in the receipt (env SPONSON_CTX_SHA)")
	fs.StringVar(&r.Chdir, "chdir", "", "configuration directory (env SPONSON_CHDIR; default: the working directory)")
	fs.StringVar(&r.Store, "store", "", "store URL: file://DIR, git (the remote origin), git+URL, postgres://..., s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX (env SPONSON_STORE; default: .sponson/ in the configuration directory)")
	fs.BoolVar(&r.StrictCheckout, "strict-checkout", false, "refuse (CHECKOUT_NOT_HEAD) a comment-triggered GitHub run (issue_comment) whose HEAD is not the pull request's head, and a pull_request_target run of a fork's head; without it they are warnings (env SPONSON_STRICT_CHECKOUT)")
	fs.StringVar(&r.Engine, "engine", "", "`PATH` of the tofu or terraform binary (env SPONSON_ENGINE; default: tofu, then terraform on PATH, then the build of make tools)")
	fs.StringArray(EngineArgFlag, nil, "an engine flag, in the engine's spelling (set by NormalizeArgs)")
	_ = fs.MarkHidden(EngineArgFlag)
	if !writes {
		fs.StringVar(&r.JSONPlan, "json-plan", "", "write the engine's plan JSON (`terraform show -json` of the plan, byte for byte) to `FILE`, mode 0600, for policy tools such as conftest; `sponson show -json PLANFILE` prints the same JSON later")
	}
	if writes {
		fs.BoolVar(&r.Wait, "wait", false, "wait for the scope's lease when another run holds it (env SPONSON_WAIT; -lock-timeout=D also works)")
		fs.DurationVar(&r.WaitTimeout, "wait-timeout", WaitDefault, "how long --wait waits before WAIT_TIMEOUT (env SPONSON_WAIT_TIMEOUT)")
		fs.DurationVar(&r.LeaseTTL, "lease-ttl", lease.DefaultTTL, "lease TTL; renewed every TTL/3 (env SPONSON_LEASE_TTL)")
		fs.BoolVar(&r.AllowOlderCommit, "allow-older-commit", false, "apply even when the commit is an ancestor of the one the scope last applied, rolling the scope back (recorded in the receipt; without it: OLDER_COMMIT)")
		fs.StringVar(&r.ApprovedBy, "approved-by", "", "name of the person approving a run in a protected environment such as production (env SPONSON_APPROVED_BY)")
	}
}

// ContextFlags name the scope and the stack a command works in instead of
// detecting them. Their SPONSON_CTX_* variables are read by context
// detection itself (runctx.Detect), not by bindEnv; SPONSON_STACK by
// detectStack.
type ContextFlags struct {
	Scope, PR, Branch, Stack string
}

// contextHelp is the help of the context flags: a run says what each one
// overrides, a reader of the store says it shortly. No --stack without a
// stack help.
type contextHelp struct{ scope, pr, branch, Stack string }

var (
	runContextHelp = contextHelp{
		scope:  "scope name, overriding detection (env SPONSON_CTX_SCOPE)",
		pr:     "pull request number; the scope becomes pr-<n> (env SPONSON_CTX_PR)",
		branch: "branch name; the scope becomes main or branch-<name> (env SPONSON_CTX_BRANCH)",
		Stack:  StackFlagHelp,
	}
	ReadContextHelp = contextHelp{
		scope:  "scope name (env SPONSON_CTX_SCOPE)",
		pr:     "pull request number: scope pr-<n> (env SPONSON_CTX_PR)",
		branch: "branch: scope main or branch-<name> (env SPONSON_CTX_BRANCH)",
		Stack:  StackFlagHelp,
	}
)

// Bind adds --scope, --pr, --branch and --stack.
func (c *ContextFlags) Bind(cmd *cobra.Command, help contextHelp) {
	fs := cmd.Flags()
	fs.StringVar(&c.Scope, "scope", "", help.scope)
	fs.StringVar(&c.PR, "pr", "", help.pr)
	fs.StringVar(&c.Branch, "branch", "", help.branch)
	if help.Stack != "" {
		BindStack(cmd, &c.Stack, help.Stack)
	}
}

// Detect names the scope the flags select in environment env, detected as
// for apply where they name none, in the configuration directory chdir.
func (c *ContextFlags) Detect(getenv func(string) string, chdir, env string) (store.Key, error) {
	dir := OrDot(chdir)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	src := runctx.ProcessSources(dir)
	src.Getenv = getenv
	rc, err := runctx.Detect(runctx.Flags{Environment: env, Scope: c.Scope, PullRequest: c.PR, Branch: c.Branch}, src)
	if err != nil {
		return store.Key{}, err
	}
	stk, err := DetectStack(getenv, dir, c.Stack)
	if err != nil {
		return store.Key{}, err
	}
	return store.Key{Stack: stk.Name, Environment: rc.Environment, Scope: rc.Scope}, nil
}

// StoreFlags locate a store without running the engine.
type StoreFlags struct {
	Env, Chdir, Store string
}

func (s *StoreFlags) Bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&s.Env, "env", "", "environment (env SPONSON_CTX_ENV; default \"preview\")")
	fs.StringVar(&s.Chdir, "chdir", "", "configuration directory (env SPONSON_CHDIR; default: the working directory)")
	fs.StringVar(&s.Store, "store", "", "store URL: file://DIR, git (the remote origin), git+URL, postgres://..., s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX (env SPONSON_STORE; default: .sponson/ in the configuration directory)")
}

// ReviewFlags publish a run's summary where reviewers look.
type ReviewFlags struct {
	Summary      string
	Comment      bool
	GitLabReport string
	// PreviewURLOutput names the output that holds the preview's address;
	// GitLabDotenv the dotenv report an apply writes it to.
	PreviewURLOutput string
	GitLabDotenv     string
}

var ReviewFlagEnv = map[string]string{
	"summary":            "SPONSON_SUMMARY",
	"comment":            "SPONSON_COMMENT",
	"gitlab-report":      "SPONSON_GITLAB_REPORT",
	"preview-url-output": "SPONSON_PREVIEW_URL_OUTPUT",
	"gitlab-dotenv":      "SPONSON_GITLAB_DOTENV",
}

func (r *ReviewFlags) Bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&r.Summary, "summary", "", "write the run's Markdown summary to `FILE` (env SPONSON_SUMMARY); it is also appended to $GITHUB_STEP_SUMMARY when that is set")
	fs.BoolVar(&r.Comment, "comment", false, "post the summary as one sticky comment per pull request, stack and environment on GitHub (GITHUB_TOKEN) or GitLab (SPONSON_GITLAB_TOKEN, GITLAB_TOKEN or CI_JOB_TOKEN), updated in place; a failure to comment is a warning (env SPONSON_COMMENT)")
	fs.StringVar(&r.GitLabReport, "gitlab-report", "", "write GitLab's artifacts:reports:terraform JSON (create, update, delete counts) to `FILE` (env SPONSON_GITLAB_REPORT)")
	fs.StringVar(&r.PreviewURLOutput, "preview-url-output", "", "the root module output that holds the preview's address (a string, not sensitive): after an apply it is the summary's link, a GitHub deployment of environment ENV/SCOPE with that environment_url (GITHUB_TOKEN with deployments: write), marked inactive by the scope's destroy, and SPONSON_URL in --gitlab-dotenv (env SPONSON_PREVIEW_URL_OUTPUT)")
	fs.StringVar(&r.GitLabDotenv, "gitlab-dotenv", "", "after an apply, write SPONSON_URL=<the preview's address> to `FILE`, a GitLab artifacts:reports:dotenv for environment:url: $SPONSON_URL (env SPONSON_GITLAB_DOTENV)")
}

// Wanted reports whether the run must render a summary at all.
func (r *ReviewFlags) Wanted(getenv func(string) string) bool {
	return r.Summary != "" || r.Comment || r.GitLabReport != "" || getenv("GITHUB_STEP_SUMMARY") != ""
}

// StackFlagHelp is the --stack help of every command that takes it.
const StackFlagHelp = "stack name: one root module of one repository (env SPONSON_STACK; default: the sponson_scope " +
	"stack attribute, else the repository and the configuration's directory in it, e.g. github.com/acme/infra//stacks/app)"

func BindStack(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "stack", "", help)
}

// BindEnv gives every flag that has not been set on the command line the
// value of its SPONSON_* variable, so CI can set a flag once for a whole
// pipeline. The names come from envNames.
func BindEnv(fs *pflag.FlagSet, envNames map[string]string, getenv func(string) string) error {
	var firstErr error
	fs.VisitAll(func(fl *pflag.Flag) {
		name, ok := envNames[fl.Name]
		if !ok || fl.Changed || firstErr != nil {
			return
		}
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		if err := fs.Set(fl.Name, v); err != nil {
			firstErr = errcode.New(errcode.Usage, "%s=%q is not a valid value for --%s: %v", name, v, fl.Name, err)
		}
	})
	return firstErr
}

// EngineArgFlag is the hidden flag that carries each engine flag, in the
// engine's spelling and in command-line order, from NormalizeArgs to the
// command. The engine's grammar (one dash, `-name VALUE`) is not the flag
// parser's, so NormalizeArgs picks those flags out before cobra parses the
// rest; order matters for -var and -var-file, so they travel in one list.
const EngineArgFlag = "engine-arg"

// WaitDefault keeps the lease wait's flag default in one place.
const WaitDefault = 10 * time.Minute
