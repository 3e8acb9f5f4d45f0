// Package gccmd is `sponson gc`: the scopes of closed pull requests and
// deleted branches destroyed and forgotten (docs/design.md §4.1).
package gccmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/manystacks"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// GCOptions are the options of `sponson gc`.
type GCOptions struct {
	// RunFlags holds the flags gc shares with destroy: environment,
	// configuration directory, store, engine, variables, lease TTL and
	// approver. Scope, branch and pull request are not flags of gc: it
	// names each scope itself.
	*cmdutil.IO
	cmdutil.RunFlags
	// Vars and VarFiles are -var and -var-file for the destroys.
	Vars, VarFiles []string
	OpenPRs        string
	OpenPRsFile    string
	Repo           string
	Remote         string
	OlderThan      time.Duration
	IncludeMain    bool
	Yes            bool
	// Every is --all: gc in every stack of the repository.
	Every manystacks.EveryStack

	// Now is the clock the older-than rule and the lease check use;
	// time.Now when nil.
	Now func() time.Time
	// Destroy runs one destroy; scoperun.Run when nil.
	Destroy func(context.Context, scoperun.Options) (*scoperun.Result, error)
	// RemoteHeads lists the branches of a remote, run in the configuration
	// directory; `git ls-remote --heads` (gc.LsRemoteHeads) when nil.
	RemoteHeads gc.HeadsFunc
	// HTTP is the client of the GitHub API; a default one when nil.
	HTTP *http.Client

	// What prepare resolves the flags to: the open pull requests listed on
	// the command line and their source, where this gc collects (target),
	// or the run of every stack (every, with the command line of each
	// stack's gc); err and warnings stop the command before either starts.
	openPRsSet bool
	listed     []int
	listSource string
	target     gcTarget
	every      *manystacks.EveryStackRun
	everyArgs  []string
	warnings   []string
	err        error
}

// gcFlagEnv names the SPONSON_* variable of each flag of gc. --yes and
// --include-main have none on purpose: destroying is asked for on the
// command line, not inherited from a pipeline's environment.
var gcFlagEnv = map[string]string{
	"open-prs":      "SPONSON_GC_OPEN_PRS",
	"open-prs-file": "SPONSON_GC_OPEN_PRS_FILE",
	"repo":          "SPONSON_GC_REPO",
	"remote":        "SPONSON_GC_REMOTE",
	"older-than":    "SPONSON_GC_OLDER_THAN",
	"parallelism":   "SPONSON_PARALLELISM",
}

// gcEnvNames are the variables of every flag of gc: those it shares with
// destroy and its own.
func gcEnvNames() map[string]string {
	env := make(map[string]string, len(cmdutil.RunFlagEnv)+len(gcFlagEnv))
	for k, v := range cmdutil.RunFlagEnv {
		env[k] = v
	}
	for k, v := range gcFlagEnv {
		env[k] = v
	}
	return env
}

// GCResult is the result part of the envelope of `sponson gc`.
type GCResult struct {
	Environment string    `json:"environment"`
	Store       string    `json:"store"`
	DryRun      bool      `json:"dryRun"`
	Rules       GCRules   `json:"rules"`
	Scopes      []GCScope `json:"scopes"`
	Destroyed   int       `json:"destroyed"`
	Failed      int       `json:"failed"`
	Skipped     int       `json:"skipped"`
	// Garbage counts the unreferenced objects a store collected (the S3
	// store: bodies a crash left behind; docs/guides/adopt.md).
	Garbage int `json:"garbage,omitempty"`
}

// garbageCollector is a store that can leave unreferenced objects behind
// after a crash and collects them (objectstore.Store.CollectGarbage: the S3, GCS and Azure stores).
type garbageCollector interface {
	CollectGarbage(ctx context.Context, env string, minAge time.Duration) (int, error)
}

// collectGarbage has the store delete what a crash left unreferenced, when
// it is a store that can; a failure is a warning, never gc's outcome.
func (g *gcRun) collectGarbage(ctx context.Context, st store.Store, env string, res *GCResult) {
	c, ok := st.(garbageCollector)
	if !ok {
		return
	}
	n, err := c.CollectGarbage(ctx, env, 0)
	res.Garbage = n
	if err != nil {
		g.warn(fmt.Sprintf("collecting the store's unreferenced objects: %v", err))
	}
	if n > 0 {
		g.p.Line("collected %d unreferenced %s a crash had left in the store", n, cmdutil.Plural(n, "object", "objects"))
	}
}

// GCRules says which rules were on and with what facts.
type GCRules struct {
	PRClosed    GCRule `json:"prClosed"`
	BranchGone  GCRule `json:"branchGone"`
	OlderThan   GCRule `json:"olderThan"`
	IncludeMain bool   `json:"includeMain"`
	// OpenPullRequests are the open pull requests the pr rule used.
	OpenPullRequests []int `json:"openPullRequests,omitempty"`
	// Branches are the remote's branches the branch rule used.
	Branches []string `json:"branches,omitempty"`
	// Cutoff is the time before which a last run is too old.
	Cutoff time.Time `json:"cutoff,omitzero"`
}

// GCRule is one rule: on or off, and where its facts came from or why it
// is off.
type GCRule struct {
	On     bool   `json:"on"`
	Detail string `json:"detail"`
}

// GCScope is one scope gc selected and what became of it.
type GCScope struct {
	Stack   string              `json:"stack"`
	Scope   string              `json:"scope"`
	Reasons []gc.Reason         `json:"reasons"`
	LastRun *cmdutil.RunSummary `json:"lastRun,omitempty"`
	Owns    int                 `json:"owns"`
	// Outcome is would-destroy, destroyed, failed, skipped or not-attempted.
	Outcome string `json:"outcome"`
	// SkipReason says why a scope was skipped: "busy", or "other-stack"
	// for a scope of another root module, which only a gc in that
	// configuration can destroy.
	SkipReason string             `json:"skipReason,omitempty"`
	Lease      *store.LeaseInfo   `json:"lease,omitempty"`
	RunID      string             `json:"runId,omitempty"`
	Error      *cmdutil.ErrorBody `json:"error,omitempty"`
}

// NewCmdGC builds `sponson gc`. runF replaces the run in tests.
func NewCmdGC(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *GCOptions) cmdutil.Outcome) *cobra.Command {
	opts := &GCOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "gc [flags]",
		Short: "Destroy the scopes whose pull request is closed, whose branch is gone, or that are old",
		Long: `Gc destroys the scopes of an environment that are no longer needed, each one
through the normal destroy path: under the scope's own lease, with fenced state
writes and a receipt, exactly as 'sponson destroy --scope S' would.

A scope is selected when one of these rules says so:

  pr-closed    pr-<n> whose pull request n is not open. The open pull requests
               come from --open-prs 12,15, from --open-prs-file FILE (one
               number per line, # starts a comment), or from the GitHub API
               when GITHUB_TOKEN is set and the repository is known (--repo
               OWNER/NAME or GITHUB_REPOSITORY; API root GITHUB_API_URL,
               default https://api.github.com). "none" says that no pull
               request is open; an empty list is refused. Without any source,
               or when the API fails, the rule is off and gc says so.
  branch-gone  branch-<name> whose branch no longer exists on the remote:
               'git ls-remote --heads REMOTE' in the configuration directory
               (--remote, default origin), each head named as a run on it
               would name its scope. When git fails, or the remote lists no
               branch at all, the rule is off and gc says so.
  older-than   any scope whose last run (its latest receipt) finished before
               now minus --older-than (a duration: 720h, or days: 30d).

Never selected: main, unless --include-main, and then only by --older-than; a
scope whose latest receipt says destroyed (a failed or interrupted destroy is
selected again); a superseded scope, whose resources moved to its successor.
A selected scope whose lease a run holds is skipped as busy; a later gc
collects it.

By default gc prints what it would do and changes nothing. With --yes it
destroys the selected scopes one after another, continues past a failure,
reports each failure with its error code, and exits 1 if any destroy failed
(3 only when every failure was a lost lease); busy scopes do not fail it.
With --yes, a store that can leave unreferenced objects behind after a crash
(the S3 store) also deletes those older than a day.

Stacks: without --stack, gc lists the scopes of every stack (root module) of
the environment; with --yes it destroys only those of the configuration's own
stack and skips the others (other-stack): each root module is destroyed with
its own configuration, by a gc run in its directory. --all does that for every
stack of the repository (or under --chdir) in one run: each stack's gc is its
own sponson process with --chdir and --stack set to the stack, the same flags
and rules, in reverse dependency order (a stack's scopes are collected once
those of the stacks that read its outputs were; a failure there skips it), up
to --parallelism (default 4) at once. One line per stack, one --json document
with each stack's result and the totals, the worst exit code. Each stack
selects its own scopes: pr-closed and branch-gone select a scope in every
stack alike, --older-than judges each stack's own last run. gc --all --yes
under a --chdir that leaves out a stack depending on one of the run is
refused (STACK_HAS_DEPENDENTS, exit 2): run it from the repository root.

Run gc in the configuration directory that created the scopes (or name it with
--chdir), with the -var and -var-file a destroy there needs: like destroy, gc
destroys with that configuration. A production gc with --yes needs
--approved-by. Every flag has a SPONSON_* variable except --yes and
--include-main: destroying is asked for on the command line.

Records: gc never deletes a store record. A destroyed scope keeps all its
receipts; the last one (status destroyed, empty ledger) is the record that the
scope is gone. A superseded scope keeps its receipts, which name its successor.
'sponson status' lists both.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return opts.prepare(cmd, f)
		}, runF, gcCommand),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Env, "env", "", "environment whose scopes to collect (env SPONSON_CTX_ENV; default \"preview\")")
	fs.StringVar(&opts.Chdir, "chdir", "", "configuration directory that created the scopes (env SPONSON_CHDIR; default: the working directory)")
	fs.StringVar(&opts.Store, "store", "", "store URL: file://DIR, git (the remote origin), git+URL, postgres://..., s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX (env SPONSON_STORE; default: .sponson/ in the configuration directory)")
	cmdutil.BindStack(cmd, &opts.Stack, "collect only this stack (env SPONSON_STACK); default: list every stack of the environment, and with --yes destroy only the configuration's own")
	fs.StringVar(&opts.Engine, "engine", "", "`PATH` of the tofu or terraform binary (env SPONSON_ENGINE; default: tofu, then terraform on PATH, then the build of make tools)")
	fs.StringArrayVar(&opts.Vars, "var", nil, "set a variable for the destroys, `NAME=VALUE` (repeatable; -var also works)")
	fs.StringArrayVar(&opts.VarFiles, "var-file", nil, "load variables for the destroys from a `FILE` (repeatable; -var-file also works)")
	fs.DurationVar(&opts.LeaseTTL, "lease-ttl", lease.DefaultTTL, "lease TTL of each destroy; renewed every TTL/3 (env SPONSON_LEASE_TTL)")
	fs.StringVar(&opts.ApprovedBy, "approved-by", "", "name of the person approving a production gc (env SPONSON_APPROVED_BY)")
	fs.StringVar(&opts.OpenPRs, "open-prs", "", "open pull requests, `LIST` like 12,15, or none (env SPONSON_GC_OPEN_PRS)")
	fs.StringVar(&opts.OpenPRsFile, "open-prs-file", "", "`FILE` of open pull request numbers, one per line (env SPONSON_GC_OPEN_PRS_FILE)")
	fs.StringVar(&opts.Repo, "repo", "", "GitHub repository `OWNER/NAME` whose open pull requests to read (env SPONSON_GC_REPO; default GITHUB_REPOSITORY)")
	fs.StringVar(&opts.Remote, "remote", "origin", "git remote whose branches still exist (env SPONSON_GC_REMOTE)")
	fs.Var(&ageValue{&opts.OlderThan}, "older-than", "collect scopes whose last run is older than this `DURATION` (720h, 30d) (env SPONSON_GC_OLDER_THAN)")
	fs.BoolVar(&opts.IncludeMain, "include-main", false, "let --older-than collect the main scope too")
	fs.BoolVar(&opts.Yes, "yes", false, "destroy the selected scopes; without it gc only prints what it would do")
	opts.Every.Bind(cmd, "collect in every stack of the repository (or under --chdir), each with its own configuration, dependents before the stacks they read")
	return cmd
}

// prepare reads gc's SPONSON_* variables, refuses flags of one stack given
// with --all and bad lists of open pull requests, then opens where gc
// collects (with --yes, everything its destroys need), or with --all finds
// every stack.
func (opts *GCOptions) prepare(cmd *cobra.Command, f *cmdutil.Factory) error {
	if err := cmdutil.BindEnv(cmd.Flags(), gcEnvNames(), opts.Getenv); err != nil {
		return err
	}
	if err := opts.Every.CheckOne(cmd); err != nil {
		return err
	}
	if opts.Every.All {
		if opts.Stack != "" {
			return errcode.New(errcode.Usage, "--stack names one stack; gc --all collects each stack's scopes itself").
				WithHint("Run gc --stack NAME without --all for one stack.")
		}
		opts.every, opts.warnings, opts.err = manystacks.StartEveryStack(cmd, f, "gc", opts.Chdir, opts.Every.Parallelism)
		opts.everyArgs = manystacks.EveryStackArgs(cmd, "gc", nil)
		return nil
	}
	if strings.HasPrefix(opts.Remote, "-") {
		return errcode.New(errcode.Usage, "--remote %q is not a remote name or URL", opts.Remote)
	}
	opts.openPRsSet = opts.OpenPRs != "" || cmd.Flags().Changed("open-prs")
	var err error
	if opts.listed, opts.listSource, err = opts.listedPRs(); err != nil {
		return err
	}
	opts.target, opts.err = opts.resolveTarget(cmd, f)
	return nil
}

// gcCommand runs gc in the configuration's stack, or with --all in every
// stack.
func gcCommand(ctx context.Context, opts *GCOptions) cmdutil.Outcome {
	if opts.Every.All {
		return runGCAll(ctx, opts)
	}
	return RunGC(ctx, opts)
}

// ageValue is a duration flag that also takes whole days (30d) and refuses
// durations that are not positive.
type ageValue struct{ d *time.Duration }

func (a *ageValue) String() string {
	if a.d == nil || *a.d == 0 {
		return ""
	}
	return a.d.String()
}

func (a *ageValue) Set(s string) error {
	d, err := gc.ParseAge(s)
	if err != nil {
		return err
	}
	*a.d = d
	return nil
}

func (a *ageValue) Type() string { return "duration" }

// gcRun is one gc invocation in progress.
type gcRun struct {
	io       *cmdutil.IO
	opts     *GCOptions
	p        cmdutil.Printer // sponson's own lines: stdout, or stderr with --json
	engine   io.Writer
	warnings []string
	now      time.Time
}

func (g *gcRun) warn(msg string) {
	g.warnings = append(g.warnings, msg)
}

// RunGC selects the scopes of the environment that gc's rules collect, and
// with --yes destroys them; without, it lists them.
func RunGC(ctx context.Context, opts *GCOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "gc"}
	if opts.err != nil {
		o.Err = opts.err
		return o
	}
	g := newGCRun(opts)
	listed, listSource, t := opts.listed, opts.listSource, opts.target
	defer t.st.Close()

	res := GCResult{Environment: t.env, Store: t.storeURL, DryRun: !opts.Yes, Scopes: []GCScope{}}
	rules := gc.Options{OlderThan: opts.OlderThan, IncludeMain: opts.IncludeMain}
	facts := g.decideRules(ctx, listed, listSource, t.dir, rules, &res.Rules)
	scopes, err := store.ListScopes(ctx, t.st, t.env, opts.Stack)
	if err != nil {
		o.Err = err
		return o
	}
	cands := gc.Select(scopes, facts, g.now, rules)
	for _, c := range cands {
		res.addCandidate(c, t.ownStack())
	}

	g.p.Line("sponson gc · %s · store %s", t.env, t.storeURL)
	g.writeRules(res.Rules)
	if opts.Yes {
		g.collectGarbage(ctx, t.st, t.env, &res)
	}
	if len(res.Scopes) == 0 {
		g.p.Line("nothing to collect")
		o.Result, o.Warnings = res, g.warnings
		return o
	}
	g.writeTable(res.Scopes, !opts.Yes)
	if !opts.Yes {
		toDestroy := len(res.Scopes) - res.Skipped
		g.p.Line("dry run: %d %s would be destroyed%s; run again with --yes", toDestroy, cmdutil.Plural(toDestroy, "scope", "scopes"), g.skippedNote(res))
		o.Result, o.Warnings = res, g.warnings
		return o
	}
	g.destroyAll(ctx, t.base.Opts, cands, &res)
	o.Result, o.Warnings = res, g.warnings
	o.Err = g.summarize(res)
	return o
}

// newGCRun starts a gc: its lines go to stdout, or to stderr with --json.
func newGCRun(opts *GCOptions) *gcRun {
	return &gcRun{io: opts.IO, opts: opts, p: cmdutil.Printer{W: opts.Human()}, engine: opts.Human()}
}

// gcTarget is where a gc collects: the store and environment, and with
// --yes everything a destroy needs (base).
type gcTarget struct {
	base               *runner.RunInput
	st                 store.Store
	storeURL, env, dir string
}

// ownStack is the stack whose scopes this gc may destroy: the
// configuration's, with --yes; none without.
func (t gcTarget) ownStack() string {
	if t.base == nil {
		return ""
	}
	return t.base.Opts.Context.Stack
}

// target opens the store, and with --yes decides once everything a destroy
// needs. resolve needs a scope to decide a context; gc names each scope
// itself, so the placeholder is replaced per scope (gc.DestroyContext).
func (opts *GCOptions) resolveTarget(cmd *cobra.Command, f *cmdutil.Factory) (gcTarget, error) {
	if !opts.Yes {
		sf := cmdutil.StoreFlags{Env: opts.Env, Chdir: opts.Chdir, Store: opts.Store}
		if err := sf.Prepare(cmd, f.Getenv); err != nil {
			return gcTarget{}, err
		}
		st, storeURL, env, err := sf.Open(cmd.Context(), f.Getenv)
		if err != nil {
			return gcTarget{}, err
		}
		dir, err := filepath.Abs(cmdutil.OrDot(opts.Chdir))
		if err != nil {
			st.Close()
			return gcTarget{}, errcode.Wrap(errcode.Usage, err, "--chdir %q", opts.Chdir)
		}
		return gcTarget{st: st, storeURL: storeURL, env: env, dir: dir}, nil
	}
	rf := opts.RunFlags
	rf.Scope, rf.PR, rf.Branch, rf.Commit = "gc", "", "", ""
	base, err := runner.ResolveRun(&rf, cmd, f, scoperun.Destroy, nil)
	if err != nil {
		return gcTarget{}, err
	}
	if base.Opts.Vars, err = cmdutil.VarArgs(opts.VarFiles, opts.Vars); err != nil {
		base.Opts.Store.Close()
		return gcTarget{}, err
	}
	return gcTarget{base: base, st: base.Opts.Store, storeURL: base.StoreURL, env: base.Opts.Context.Environment, dir: base.Opts.Dir}, nil
}

// decideRules turns the rules on or off, into rules, and gathers their
// facts; it reads the clock.
func (g *gcRun) decideRules(ctx context.Context, listed []int, listSource, dir string, opts gc.Options, rules *GCRules) gc.Facts {
	facts := gc.Facts{}
	rules.PRClosed = g.prRule(ctx, listed, listSource, &facts, rules)
	rules.BranchGone = g.branchRule(ctx, dir, &facts, rules)
	clock := g.opts.Now
	if clock == nil {
		clock = time.Now
	}
	g.now = clock()
	rules.IncludeMain = opts.IncludeMain
	rules.OlderThan = GCRule{Detail: "off: pass --older-than DURATION to collect scopes by age"}
	if opts.OlderThan > 0 {
		rules.Cutoff = opts.Cutoff(g.now).UTC()
		rules.OlderThan = GCRule{On: true, Detail: fmt.Sprintf("last run before %s (%s ago)", rules.Cutoff.Local().Format("2006-01-02 15:04"), gc.Age(opts.OlderThan))}
	}
	if opts.MainIgnored() {
		g.warn("--include-main has no effect without --older-than: only the older-than rule can select main")
	}
	return facts
}

// destroyAll destroys the selected scopes one after the other, skipping
// those gc skips; once gc is interrupted, the rest are not attempted.
func (g *gcRun) destroyAll(ctx context.Context, base scoperun.Options, cands []gc.Candidate, res *GCResult) {
	destroy := g.opts.Destroy
	if destroy == nil {
		destroy = scoperun.Run
	}
	for i := range res.Scopes {
		row := &res.Scopes[i]
		if row.Outcome == gc.Skipped {
			continue
		}
		if ctx.Err() != nil {
			row.Outcome = gc.NotAttempted
			continue
		}
		g.destroyOne(ctx, destroy, base, cands[i], row, res)
	}
}

// addCandidate adds the row of a selected scope. With --yes (ownStack set)
// a scope of another stack is skipped: only its own configuration can
// destroy it.
func (res *GCResult) addCandidate(c gc.Candidate, ownStack string) {
	row := GCScope{Stack: c.Stack, Scope: c.Scope, Reasons: c.Reasons, LastRun: cmdutil.Summarize(c.Latest), Outcome: gc.WouldDestroy}
	if c.Latest != nil {
		row.Owns = len(c.Latest.Ledger)
	}
	if skip := gc.Skip(c, ownStack); skip != "" {
		row.Outcome, row.SkipReason = gc.Skipped, skip
		if skip == gc.SkipBusy {
			row.Lease = c.Busy
		}
		res.Skipped++
	}
	res.Scopes = append(res.Scopes, row)
}

// listedPRs reads the open pull requests given on the command line,
// --open-prs or --open-prs-file, and names the source; the source is empty
// when neither was given.
func (opts *GCOptions) listedPRs() (prs []int, source string, err error) {
	list, file := strings.TrimSpace(opts.OpenPRs), strings.TrimSpace(opts.OpenPRsFile)
	listSet := opts.openPRsSet
	switch {
	case listSet && file != "":
		return nil, "", errcode.New(errcode.Usage, "--open-prs and --open-prs-file both name the open pull requests; pass one")
	case listSet:
		prs, err := gc.ParsePRList(list)
		if err != nil {
			return nil, "", errcode.New(errcode.Usage, "--open-prs %q %v", opts.OpenPRs, err)
		}
		return prs, "--open-prs", nil
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, "", errcode.Wrap(errcode.Usage, err, "--open-prs-file %q cannot be read", file)
		}
		prs, err := gc.ParsePRFile(data)
		if err != nil {
			return nil, "", errcode.New(errcode.Usage, "--open-prs-file %s %v", file, err)
		}
		return prs, "--open-prs-file " + file, nil
	}
	return nil, "", nil
}

// prRule decides the pr-closed rule: the listed pull requests, else the
// GitHub API, else off (gc.OpenPRs).
func (g *gcRun) prRule(ctx context.Context, listed []int, source string, facts *gc.Facts, rules *GCRules) GCRule {
	repo := strings.TrimSpace(g.opts.Repo)
	if repo == "" {
		repo = strings.TrimSpace(g.io.Getenv("GITHUB_REPOSITORY"))
	}
	prs, from, off := gc.OpenPRs(ctx, listed, source, gc.GitHub{
		Token: strings.TrimSpace(g.io.Getenv("GITHUB_TOKEN")), Repo: repo, APIURL: g.io.Getenv("GITHUB_API_URL"), HTTP: g.opts.HTTP,
	})
	if off != "" {
		g.warn("the pr-closed rule is off: " + off)
		return GCRule{Detail: "off: " + off}
	}
	facts.OpenPRs, facts.PRsKnown = gc.Set(prs), true
	rules.OpenPullRequests = prs
	return GCRule{On: true, Detail: "open pull requests from " + from + ": " + prList(prs)}
}

// branchRule decides the branch-gone rule from the remote's heads
// (gc.LiveBranches).
func (g *gcRun) branchRule(ctx context.Context, dir string, facts *gc.Facts, rules *GCRules) GCRule {
	remote := g.opts.Remote
	if remote == "" {
		remote = "origin"
	}
	branches, off := gc.LiveBranches(ctx, g.opts.RemoteHeads, dir, remote)
	if off != "" {
		g.warn("the branch-gone rule is off: " + off)
		return GCRule{Detail: "off: " + off}
	}
	facts.BranchScopes, facts.BranchesKnown = gc.BranchScopes(branches), true
	rules.Branches = branches
	return GCRule{On: true, Detail: fmt.Sprintf("remote %s has %d %s", remote, len(branches), cmdutil.Plural(len(branches), "branch", "branches"))}
}

// destroyOne destroys one scope through the normal destroy path and
// records what became of it.
func (g *gcRun) destroyOne(ctx context.Context, destroy func(context.Context, scoperun.Options) (*scoperun.Result, error), base scoperun.Options, c gc.Candidate, row *GCScope, res *GCResult) {
	o := base
	o.Context = gc.DestroyContext(base.Context, c)
	o.RunID = scoperun.NewRunID()
	warnOut := cmdutil.Printer{W: g.io.ErrOut}
	o.Report = scoperun.Reporter{
		EngineOut: g.engine,
		Heartbeat: base.Report.Heartbeat,
		Warn:      func(s string) { warnOut.Warn(c.Scope + ": " + s) },
		Info:      func(s string) { warnOut.Line("%s", s) },
	}
	g.p.Line("%s", cmdutil.Header(string(scoperun.Destroy), o.Context.Environment, c.Scope, o.RunID))
	r, err := destroy(ctx, o)
	row.RunID = o.RunID
	if r != nil {
		for _, w := range r.Warnings {
			g.warn(c.Scope + ": " + w)
		}
	}
	var holder *store.LeaseInfo
	row.Outcome, row.SkipReason, holder = gc.Outcome(err)
	switch row.Outcome {
	case gc.Destroyed:
		res.Destroyed++
		g.p.Line("gc: %s destroyed (receipt %s)", c.Scope, o.RunID)
	case gc.Skipped:
		row.RunID, row.Lease = "", holder
		res.Skipped++
		g.p.Line("gc: %s skipped: busy (%s)", c.Scope, errcode.As(err).Message)
	default:
		e := errcode.As(err)
		row.Error = &cmdutil.ErrorBody{Code: e.Code, Message: e.Message, Hint: e.Hint}
		res.Failed++
		g.p.Line("gc: %s failed: %s: %s", c.Scope, e.Code, e.Message)
	}
}

// summarize prints the closing line and returns the error of a gc in which
// destroys failed: the code of the first failure whose exit code is 1 (the
// first failure's otherwise), with every failure in the details.
func (g *gcRun) summarize(res GCResult) error {
	var failed []string
	var details []map[string]string
	var codes []errcode.Code
	for _, s := range res.Scopes {
		if s.Outcome != gc.Failed {
			continue
		}
		failed = append(failed, fmt.Sprintf("%s (%s)", s.Scope, s.Error.Code))
		details = append(details, map[string]string{"scope": s.Scope, "code": string(s.Error.Code), "message": s.Error.Message})
		codes = append(codes, s.Error.Code)
	}
	code := gc.FailureCode(codes)
	notAttempted := 0
	for _, s := range res.Scopes {
		if s.Outcome == gc.NotAttempted {
			notAttempted++
		}
	}
	line := fmt.Sprintf("gc %s: %d destroyed", res.Environment, res.Destroyed)
	if res.Failed > 0 {
		line += fmt.Sprintf(", %d failed: %s", res.Failed, strings.Join(failed, ", "))
	}
	line += g.skippedNote(res)
	if notAttempted > 0 {
		line += fmt.Sprintf(", %d not attempted (interrupted)", notAttempted)
	}
	g.p.Line("%s", line)
	if res.Failed == 0 {
		if notAttempted > 0 {
			return errcode.New(errcode.Interrupted, "gc was interrupted before %d %s", notAttempted, cmdutil.Plural(notAttempted, "destroy", "destroys"))
		}
		return nil
	}
	attempted := res.Destroyed + res.Failed
	return errcode.New(code, "gc: %d of %d %s failed: %s", res.Failed, attempted, cmdutil.Plural(attempted, "destroy", "destroys"), strings.Join(failed, ", ")).
		WithHint("The other scopes were collected. Read each failed destroy's output and `sponson receipt --scope SCOPE`, fix the cause, and run gc again: a failed destroy is selected again.").
		With("failed", details)
}

func (g *gcRun) skippedNote(res GCResult) string {
	var busy, other []string
	for _, s := range res.Scopes {
		switch {
		case s.Outcome == gc.Skipped && s.SkipReason == gc.SkipOtherStack:
			other = append(other, s.Scope+" of "+s.Stack)
		case s.Outcome == gc.Skipped:
			busy = append(busy, s.Scope)
		}
	}
	note := ""
	if len(busy) > 0 {
		note += fmt.Sprintf(", %d skipped as busy: %s", len(busy), strings.Join(busy, ", "))
	}
	if len(other) > 0 {
		note += fmt.Sprintf(", %d of other stacks skipped (run gc in their directories): %s", len(other), strings.Join(other, ", "))
	}
	return note
}

func (g *gcRun) writeRules(r GCRules) {
	main := "kept; --include-main lets --older-than collect it"
	if r.IncludeMain {
		main = "collected by --older-than only (--include-main)"
	}
	tw := tabwriter.NewWriter(g.p.W, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "  pr-closed:\t%s\n", r.PRClosed.Detail)
	fmt.Fprintf(tw, "  branch-gone:\t%s\n", r.BranchGone.Detail)
	fmt.Fprintf(tw, "  older-than:\t%s\n", r.OlderThan.Detail)
	fmt.Fprintf(tw, "  main:\t%s\n", main)
	tw.Flush()
}

func (g *gcRun) writeTable(rows []GCScope, dryRun bool) {
	tw := tabwriter.NewWriter(g.p.W, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STACK\tSCOPE\tOWNS\tLAST RUN\tAT\tREASONS\tACTION")
	for _, r := range rows {
		last, at := "-", "-"
		if lr := r.LastRun; lr != nil {
			last = lr.OutcomeText()
			at = lr.When().Local().Format("2006-01-02 15:04")
		}
		reasons := make([]string, len(r.Reasons))
		for i, x := range r.Reasons {
			reasons[i] = string(x)
		}
		action := "destroy"
		if dryRun {
			action = "would destroy"
		}
		switch {
		case r.Outcome == gc.Skipped && r.SkipReason == gc.SkipOtherStack:
			action = "skip: other stack"
		case r.Outcome == gc.Skipped:
			action = fmt.Sprintf("skip: busy, %s until %s", r.Lease.Holder, r.Lease.ExpiresAt.Local().Format("15:04:05"))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", cmdutil.OrDash(r.Stack), r.Scope, r.Owns, last, at, strings.Join(reasons, ","), action)
	}
	tw.Flush()
}

// prList shows pull request numbers, at most ten of them.
func prList(prs []int) string {
	if len(prs) == 0 {
		return "none open"
	}
	var parts []string
	for i, n := range prs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("… (%d open)", len(prs)))
			break
		}
		parts = append(parts, "#"+strconv.Itoa(n))
	}
	return strings.Join(parts, " ")
}

// StacksGCResult is the result part of the envelope of `sponson gc --all`:
// each stack's gc, and the totals of its scopes.
type StacksGCResult struct {
	DryRun    bool                        `json:"dryRun"`
	Stacks    []manystacks.StackRunResult `json:"stacks"`
	Selected  int                         `json:"selected"`
	Destroyed int                         `json:"destroyed"`
	Failed    int                         `json:"failed"`
	Skipped   int                         `json:"skipped"`
}

// runGCAll is `sponson gc --all`: gc in every stack with --stack set to
// it, dependents before the stacks they read.
func runGCAll(ctx context.Context, opts *GCOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "gc", Warnings: opts.warnings}
	if opts.err != nil {
		o.Err = opts.err
		return o
	}
	m := opts.every
	if opts.Yes {
		if err := checkGCDependents(ctx, opts.Getenv, m.Set); err != nil {
			o.Err = err
			return o
		}
	}
	base := opts.everyArgs
	m.ArgsFor = func(s *stackgraph.Stack) []string { return append(slices.Clone(base), "--stack="+s.Name) }
	m.Quiet = func(*manystacks.StackRunResult) bool { return false }
	m.Line = gcStackLine
	res := StacksGCResult{DryRun: !opts.Yes, Stacks: m.Run(ctx, true, opts.Every.Parallelism)}
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
	m.Lines.Line("sponson gc --all: %d %s %s in %d stacks, %d failed, %d skipped", n, cmdutil.Plural(n, "scope", "scopes"), verb, len(res.Stacks), res.Failed, res.Skipped)
	o.Err = manystacks.WorstOf(res.Stacks)
	return o
}

// checkGCDependents refuses gc --all --yes under a --chdir that leaves out
// stacks of the repository depending on stacks of the run: their scopes
// would lose the outputs they read, and gc, which selects scopes by rules,
// cannot tell which they still need. Under the repository root every
// dependent is in the run, collected first.
func checkGCDependents(ctx context.Context, getenv func(string) string, set *manystacks.StacksResult) error {
	if set.Top == set.Root {
		return nil
	}
	full, _, err := manystacks.SelectStacks(ctx, getenv, &manystacks.StacksOptions{Chdir: set.Top})
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
func gcStackLine(r *manystacks.StackRunResult) string {
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
