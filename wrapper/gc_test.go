package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/gccmd"
)

// seedScope is one scope of a test store.
type seedScope struct {
	name       string
	status     string        // of the latest receipt; "" for none
	age        time.Duration // since the last run finished
	branch     string
	pr         int
	commit     string
	approver   string
	owns       int
	superseded string
	inherited  string
	busy       bool // a run holds the lease now
	expired    bool // a run died holding the lease
}

// seed writes scopes into the embedded store of dir, as runs would have.
func seed(t *testing.T, dir string, now time.Time, scopes ...seedScope) *filestore.Store {
	t.Helper()
	st, err := filestore.Open(filepath.Join(dir, ".sponson"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range scopes {
		key := store.Key{Stack: testStack, Environment: "preview", Scope: s.name}
		g, err := st.Acquire(ctx, key, "run-seed-"+s.name, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if s.status != "" {
			r := &receipt.Receipt{
				Version: receipt.Version, RunID: "run-" + s.name, Command: "apply", Stack: testStack, Environment: "preview", Scope: s.name,
				Status: s.status, StartedAt: now.Add(-s.age - time.Minute).UTC(), FinishedAt: now.Add(-s.age).UTC(),
				Branch: s.branch, PullRequest: s.pr, Commit: s.commit, ApprovedBy: s.approver,
				SupersededBy: s.superseded, InheritedFrom: s.inherited, Changes: []receipt.Change{}, Ledger: []receipt.Entry{},
			}
			if s.status == receipt.StatusDestroyed {
				r.Command = "destroy"
			}
			for i := range s.owns {
				r.Ledger = append(r.Ledger, receipt.Entry{Identity: fmt.Sprintf("terraform_data/%s-%d", s.name, i), Address: fmt.Sprintf("terraform_data.r%d", i), Provider: "terraform.io/builtin/terraform", Type: "terraform_data", ID: fmt.Sprintf("id-%s-%d", s.name, i), CreatedBy: receipt.CreatedBySponson})
			}
			if err := st.WriteReceipt(ctx, g.Lease, r); err != nil {
				t.Fatal(err)
			}
		}
		switch {
		case s.busy:
		case s.expired:
			if _, err := st.Renew(ctx, g.Lease, time.Millisecond); err != nil {
				t.Fatal(err)
			}
		default:
			if err := st.Release(ctx, g.Lease); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(5 * time.Millisecond) // let the expired leases expire
	return st
}

// theMix is a store with every kind of scope gc must tell apart.
func theMix(t *testing.T, dir string, now time.Time) {
	seed(t, dir, now,
		seedScope{name: "main", status: receipt.StatusApplied, age: 90 * 24 * time.Hour, branch: "main", owns: 3},
		seedScope{name: "pr-1", status: receipt.StatusApplied, age: time.Hour, branch: "feat/one", pr: 1, owns: 3},
		seedScope{name: "pr-2", status: receipt.StatusApplied, age: time.Hour, branch: "feat/two", pr: 2, owns: 3},
		seedScope{name: "pr-3", status: receipt.StatusApplied, age: time.Hour, branch: "feat/three", pr: 3, owns: 2},
		seedScope{name: "pr-4", status: receipt.StatusApplied, age: time.Hour, pr: 4, superseded: "pr-2"},
		seedScope{name: "pr-5", status: receipt.StatusApplied, age: time.Hour, pr: 5, owns: 1, busy: true},
		seedScope{name: "pr-6", status: receipt.StatusDestroyed, age: 50 * 24 * time.Hour, pr: 6},
		seedScope{name: "branch-feat-kept", status: receipt.StatusApplied, age: time.Hour, branch: "feat/kept", owns: 3},
		seedScope{name: "branch-gone", status: receipt.StatusApplied, age: time.Hour, branch: "gone", owns: 3},
		seedScope{name: "stale", status: receipt.StatusApplied, age: 40 * 24 * time.Hour, owns: 1},
	)
}

// gcHarness runs `sponson gc` as Run does, with the seams of GCOptions set.
type gcHarness struct {
	mu      sync.Mutex
	calls   []scoperun.Options
	fail    map[string]error
	heads   []string
	headErr error
	now     time.Time
	intrude string // a scope whose lease another run takes just before its destroy
}

func (h *gcHarness) destroy(ctx context.Context, o scoperun.Options) (*scoperun.Result, error) {
	h.mu.Lock()
	h.calls = append(h.calls, o)
	h.mu.Unlock()
	key := store.Key{Stack: testStack, Environment: o.Context.Environment, Scope: o.Context.Scope}
	res := &scoperun.Result{RunID: o.RunID, Command: o.Command, Key: key}
	if err := h.fail[o.Context.Scope]; err != nil {
		res.Status = receipt.StatusFailed
		return res, err
	}
	if o.Context.Scope == h.intrude {
		if _, err := o.Store.Acquire(ctx, key, "run-intruder", time.Hour); err != nil {
			return res, err
		}
	}
	// The real destroy path's lease and receipt, without the engine.
	held, err := lease.Acquire(ctx, o.Store, key, o.RunID, o.Lease)
	if err != nil {
		return res, err
	}
	defer held.Release(context.WithoutCancel(ctx))
	r := &receipt.Receipt{Version: receipt.Version, RunID: o.RunID, Command: "destroy", Environment: key.Environment, Scope: key.Scope,
		Status: receipt.StatusDestroyed, StartedAt: time.Now().UTC(), FinishedAt: time.Now().UTC(), Changes: []receipt.Change{}, Ledger: []receipt.Entry{},
		Branch: o.Context.Branch, PullRequest: o.Context.PullRequest}
	if err := o.Store.WriteReceipt(ctx, held.Lease(), r); err != nil {
		return res, err
	}
	res.Status, res.Receipt = receipt.StatusDestroyed, r
	res.Warnings = []string{"a warning of the destroy"}
	return res, nil
}

func (h *gcHarness) scopes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []string{}
	for _, c := range h.calls {
		out = append(out, c.Context.Scope)
	}
	return out
}

func (h *gcHarness) run(t *testing.T, f *cmdutil.Factory, args ...string) errcode.ExitCode {
	t.Helper()
	var o cmdutil.Outcome
	root := &cobra.Command{Use: "sponson", SilenceErrors: true, SilenceUsage: true}
	root.PersistentFlags().Bool("json", false, "")
	root.AddCommand(gccmd.NewCmdGC(f, &o, func(ctx context.Context, opts *gccmd.GCOptions) cmdutil.Outcome {
		opts.Destroy = h.destroy
		opts.Now = func() time.Time { return h.now }
		opts.RemoteHeads = func(_ context.Context, _, remote string) ([]string, error) {
			if remote != "origin" {
				return nil, fmt.Errorf("no remote %s", remote)
			}
			return h.heads, h.headErr
		}
		return gccmd.RunGC(ctx, opts)
	}))
	args = NormalizeArgs(args)
	root.SetArgs(args)
	root.SetOut(f.Out)
	root.SetErr(f.ErrOut)
	if err := root.ExecuteContext(context.Background()); err != nil && o.Err == nil {
		o.Command, o.Err = "gc", usageError(err)
	}
	return finish(f, cmdutil.WantsJSON(args, f.Getenv), o)
}

// gcResult decodes the envelope of gc --json.
func gcResult(t *testing.T, out *bytes.Buffer) (cmdutil.Envelope, gccmd.GCResult) {
	t.Helper()
	env := decode(t, out)
	b, err := json.Marshal(env.Result)
	if err != nil {
		t.Fatal(err)
	}
	var res gccmd.GCResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result is not a gc result: %v\n%s", err, b)
	}
	return env, res
}

type scopeOutcome struct{ Scope, Outcome, Reasons string }

func outcomes(res gccmd.GCResult) []scopeOutcome {
	out := []scopeOutcome{}
	for _, s := range res.Scopes {
		var rs []string
		for _, r := range s.Reasons {
			rs = append(rs, string(r))
		}
		out = append(out, scopeOutcome{s.Scope, s.Outcome, strings.Join(rs, ",")})
	}
	return out
}

func mixArgs(dir string, extra ...string) []string {
	return append([]string{"gc", "--chdir", dir, "--open-prs", "2", "--older-than", "30d"}, extra...)
}

func TestGCDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	theMix(t, dir, now)
	h := &gcHarness{now: now, heads: []string{"main", "feat/kept"}}
	f, out, _ := testFactory(nil)
	if code := h.run(t, f, mixArgs(dir, "--json")...); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	env, res := gcResult(t, out)
	if !env.OK || env.Command != "gc" || !res.DryRun {
		t.Errorf("envelope %+v", env)
	}
	want := []scopeOutcome{
		{"branch-gone", gc.WouldDestroy, "branch-gone"},
		{"pr-1", gc.WouldDestroy, "pr-closed"},
		{"pr-3", gc.WouldDestroy, "pr-closed"},
		{"pr-5", gc.Skipped, "pr-closed"},
		{"stale", gc.WouldDestroy, "older-than"},
	}
	if diff := cmp.Diff(want, outcomes(res)); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
	if calls := h.scopes(); len(calls) != 0 {
		t.Errorf("a dry run destroyed %v", calls)
	}
	if !res.Rules.PRClosed.On || !res.Rules.BranchGone.On || !res.Rules.OlderThan.On || res.Rules.IncludeMain {
		t.Errorf("rules %+v", res.Rules)
	}
	if diff := cmp.Diff([]int{2}, res.Rules.OpenPullRequests); diff != "" {
		t.Errorf("open pull requests (-want +got):\n%s", diff)
	}
	if b := res.Scopes[3]; b.SkipReason != "busy" || b.Lease == nil || b.Lease.Holder != "run-seed-pr-5" {
		t.Errorf("busy scope %+v", b)
	}
	if s := res.Scopes[0]; s.Owns != 3 || s.LastRun == nil || s.LastRun.Branch != "gone" {
		t.Errorf("branch-gone row %+v", s)
	}

	// The human form says what it would do and how to do it.
	f, out, _ = testFactory(nil)
	if code := h.run(t, f, mixArgs(dir)...); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	text := out.String()
	for _, w := range []string{
		"sponson gc · preview · store file://",
		"pr-closed:   open pull requests from --open-prs: #2",
		"branch-gone: remote origin has 2 branches",
		"older-than:  last run before",
		"main:        kept; --include-main lets --older-than collect it",
		"SCOPE        OWNS  LAST RUN  AT",
		"pr-5         1     applied",
		"skip: busy, run-seed-pr-5 until",
		"dry run: 4 scopes would be destroyed, 1 skipped as busy: pr-5; run again with --yes",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("output lacks %q:\n%s", w, text)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if len([]rune(line)) > 120 {
			t.Errorf("line longer than 120 columns:\n%s", line)
		}
	}
}

// TestGCDestroysExactlyTheSelected: with --yes every selected scope goes
// through the destroy path in order, a failure is reported and the rest
// continue, the busy scope is skipped, and gc exits 1 naming the failure.
func TestGCDestroysExactlyTheSelected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	theMix(t, dir, now)
	h := &gcHarness{now: now, heads: []string{"main", "feat/kept"}, fail: map[string]error{
		"pr-3": errcode.New(errcode.EngineFailed, "tofu destroy: exit status 1"),
	}}
	f, out, errOut := testFactory(nil)
	code := h.run(t, f, mixArgs(dir, "--yes", "--json", "--lease-ttl", "45s", "-var", "tier=small", "--approved-by", "Ada")...)
	env, res := gcResult(t, out)
	if code != errcode.ExitFailed || env.OK || env.Error == nil || env.Error.Code != errcode.EngineFailed {
		t.Fatalf("exit %d, envelope %+v", code, env)
	}
	if diff := cmp.Diff([]string{"branch-gone", "pr-1", "pr-3", "stale"}, h.scopes()); diff != "" {
		t.Errorf("destroyed scopes (-want +got):\n%s", diff)
	}
	want := []scopeOutcome{
		{"branch-gone", gc.Destroyed, "branch-gone"},
		{"pr-1", gc.Destroyed, "pr-closed"},
		{"pr-3", gc.Failed, "pr-closed"},
		{"pr-5", gc.Skipped, "pr-closed"},
		{"stale", gc.Destroyed, "older-than"},
	}
	if diff := cmp.Diff(want, outcomes(res)); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
	if res.Destroyed != 3 || res.Failed != 1 || res.Skipped != 1 || res.DryRun {
		t.Errorf("counts %+v", res)
	}
	if e := res.Scopes[2].Error; e == nil || e.Code != errcode.EngineFailed || res.Scopes[2].RunID == "" {
		t.Errorf("pr-3 row %+v", res.Scopes[2])
	}
	if !strings.Contains(env.Error.Message, "1 of 4 destroys failed: pr-3 (ENGINE_FAILED)") || env.Error.Hint == "" {
		t.Errorf("error %+v", env.Error)
	}
	if failed, _ := env.Error.Details["failed"].([]any); len(failed) != 1 {
		t.Errorf("details %v", env.Error.Details)
	}
	if !strings.Contains(strings.Join(env.Warn, "\n"), "pr-1: a warning of the destroy") {
		t.Errorf("warnings %q", env.Warn)
	}
	// Progress goes to stderr in --json mode.
	for _, w := range []string{"sponson destroy · preview · pr-1 · run ", "gc: pr-3 failed: ENGINE_FAILED", "gc preview: 3 destroyed, 1 failed: pr-3 (ENGINE_FAILED), 1 skipped as busy: pr-5"} {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}

	// Each destroy is the normal one: this configuration, this store, the
	// flags of a destroy, and the scope's own branch and pull request.
	for _, o := range h.calls {
		if o.Command != scoperun.Destroy || o.Dir != dir || o.Store == nil || o.StoreURL != "file://"+dir+"/.sponson" || o.Lease.TTL != 45*time.Second || o.Lease.Wait ||
			o.ApprovedBy != "Ada" || len(o.Vars) != 1 || o.Engine != "/usr/bin/tofu" || o.ProviderBinary != "/usr/bin/sponson" {
			t.Errorf("destroy options of %s: %+v", o.Context.Scope, o)
		}
		if o.Context.Environment != "preview" || o.Context.Predecessor != "" {
			t.Errorf("context of %s: %+v", o.Context.Scope, o.Context)
		}
	}
	if c := h.calls[1].Context; c.Scope != "pr-1" || c.PullRequest != 1 || c.Branch != "feat/one" {
		t.Errorf("pr-1 context %+v", c)
	}
	if c := h.calls[0].Context; c.Scope != "branch-gone" || c.PullRequest != 0 || c.Branch != "gone" {
		t.Errorf("branch-gone context %+v", c)
	}

	// Nothing else was touched: the kept scopes' receipts are as seeded.
	st, _ := filestore.Open(filepath.Join(dir, ".sponson"))
	for _, scope := range []string{"main", "pr-2", "pr-4", "pr-5", "pr-6", "branch-feat-kept", "pr-3"} {
		r, err := st.LatestReceipt(context.Background(), store.Key{Stack: testStack, Environment: "preview", Scope: scope})
		if err != nil || r == nil || r.RunID != "run-"+scope {
			t.Errorf("%s: latest receipt %+v, %v; want the seeded one", scope, r, err)
		}
	}

	// The next gc selects only what is left: the failed destroy.
	h.fail = nil
	h.calls = nil
	f, out, _ = testFactory(nil)
	if code := h.run(t, f, mixArgs(dir, "--yes", "--json")...); code != errcode.ExitOK {
		t.Fatalf("second gc: exit %d\n%s", code, out)
	}
	_, res = gcResult(t, out)
	if diff := cmp.Diff([]scopeOutcome{{"pr-3", gc.Destroyed, "pr-closed"}, {"pr-5", gc.Skipped, "pr-closed"}}, outcomes(res)); diff != "" {
		t.Errorf("second gc (-want +got):\n%s", diff)
	}
}

func TestGCLeaseTakenBeforeTheDestroyIsBusy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	seed(t, dir, now,
		seedScope{name: "pr-1", status: receipt.StatusApplied, age: time.Hour, pr: 1},
		seedScope{name: "pr-2", status: receipt.StatusApplied, age: time.Hour, pr: 2},
	)
	h := &gcHarness{now: now, heads: []string{"main"}, intrude: "pr-1"}
	f, out, _ := testFactory(nil)
	code := h.run(t, f, "gc", "--chdir", dir, "--open-prs", "none", "--yes", "--json")
	env, res := gcResult(t, out)
	if code != errcode.ExitOK || !env.OK {
		t.Fatalf("exit %d, envelope %+v", code, env)
	}
	want := []scopeOutcome{{"pr-1", gc.Skipped, "pr-closed"}, {"pr-2", gc.Destroyed, "pr-closed"}}
	if diff := cmp.Diff(want, outcomes(res)); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
	if l := res.Scopes[0].Lease; l == nil || l.Holder != "run-intruder" || res.Scopes[0].SkipReason != "busy" {
		t.Errorf("pr-1 row %+v", res.Scopes[0])
	}
}

func TestGCRulesOffSaySo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	theMix(t, dir, now)
	h := &gcHarness{now: now, headErr: errors.New("git ls-remote --heads origin failed: fatal: not a git repository")}
	f, out, _ := testFactory(map[string]string{"GITHUB_TOKEN": "ghs_shouldNotMatter"})
	if code := h.run(t, f, "gc", "--chdir", dir, "--json", "--include-main"); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	env, res := gcResult(t, out)
	if len(res.Scopes) != 0 || res.Rules.PRClosed.On || res.Rules.BranchGone.On || res.Rules.OlderThan.On {
		t.Errorf("result %+v", res)
	}
	warns := strings.Join(env.Warn, "\n")
	for _, w := range []string{
		"the pr-closed rule is off: GITHUB_TOKEN is set but no repository is known",
		"the branch-gone rule is off: git ls-remote --heads origin failed: fatal: not a git repository",
		"--include-main has no effect without --older-than",
	} {
		if !strings.Contains(warns, w) {
			t.Errorf("warnings lack %q:\n%s", w, warns)
		}
	}
	if strings.Contains(out.String(), "ghs_shouldNotMatter") {
		t.Error("the token was printed")
	}

	// A remote without any branch turns the rule off instead of collecting
	// every branch scope.
	h = &gcHarness{now: now, heads: []string{}}
	f, out, _ = testFactory(nil)
	if code := h.run(t, f, "gc", "--chdir", dir); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, w := range []string{"pr-closed:   off: no open pull requests known", "branch-gone: off: remote origin lists no branch at all", "older-than:  off", "nothing to collect"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}

	// --include-main with --older-than collects main too; every scope
	// older than an hour is selected, and nothing was destroyed (dry run).
	h = &gcHarness{now: now, heads: []string{"main"}}
	f, out, _ = testFactory(nil)
	if code := h.run(t, f, "gc", "--chdir", dir, "--json", "--older-than", "2h", "--include-main", "--remote", "origin"); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	_, res = gcResult(t, out)
	want := []scopeOutcome{
		{"branch-feat-kept", gc.WouldDestroy, "branch-gone"},
		{"branch-gone", gc.WouldDestroy, "branch-gone"},
		{"main", gc.WouldDestroy, "older-than"},
		{"stale", gc.WouldDestroy, "older-than"},
	}
	if diff := cmp.Diff(want, outcomes(res)); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
}

// fakePulls answers like GitHub's pulls endpoint, in two pages.
func fakePulls(t *testing.T, token string, open ...int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
			return
		}
		if r.URL.Path != "/repos/sponson/demo/pulls" && r.URL.Path != "/repositories/7/pulls" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"Not Found"}`)
			return
		}
		page, half := open[:len(open)/2], open[len(open)/2:]
		if r.URL.Query().Get("page") == "2" {
			page = half
		} else {
			w.Header().Set("Link", `<http://`+r.Host+`/repositories/7/pulls?state=open&per_page=100&page=2>; rel="next"`)
		}
		var pulls []map[string]any
		for _, n := range page {
			pulls = append(pulls, map[string]any{"number": n, "state": "open"})
		}
		// A failed write means the client went away; the client's side of
		// the test reports that.
		_ = json.NewEncoder(w).Encode(pulls)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGCReadsOpenPullRequestsFromGitHub(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	seed(t, dir, now,
		seedScope{name: "pr-1", status: receipt.StatusApplied, age: time.Hour, pr: 1},
		seedScope{name: "pr-2", status: receipt.StatusApplied, age: time.Hour, pr: 2},
		seedScope{name: "pr-3", status: receipt.StatusApplied, age: time.Hour, pr: 3},
		seedScope{name: "pr-4", status: receipt.StatusApplied, age: time.Hour, pr: 4},
	)
	const token = "ghs_realLookingSECRET"
	srv := fakePulls(t, token, 4, 2, 9)
	h := &gcHarness{now: now, heads: []string{"main"}}
	f, out, _ := testFactory(map[string]string{"GITHUB_TOKEN": token, "GITHUB_REPOSITORY": "sponson/demo", "GITHUB_API_URL": srv.URL})
	if code := h.run(t, f, "gc", "--chdir", dir, "--json"); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	_, res := gcResult(t, out)
	if diff := cmp.Diff([]scopeOutcome{{"pr-1", gc.WouldDestroy, "pr-closed"}, {"pr-3", gc.WouldDestroy, "pr-closed"}}, outcomes(res)); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
	if d := res.Rules.PRClosed.Detail; !strings.Contains(d, "the GitHub API (sponson/demo): #4 #2 #9") {
		t.Errorf("pr rule %q", d)
	}

	// --repo overrides GITHUB_REPOSITORY; a failing API turns the rule off
	// and never prints the token.
	f, out, _ = testFactory(map[string]string{"GITHUB_TOKEN": "ghp_wrongSECRET", "GITHUB_REPOSITORY": "other/repo", "GITHUB_API_URL": srv.URL})
	if code := h.run(t, f, "gc", "--chdir", dir, "--repo", "sponson/demo", "--json"); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	env, res := gcResult(t, out)
	if len(res.Scopes) != 0 || res.Rules.PRClosed.On || !strings.Contains(res.Rules.PRClosed.Detail, "401 Unauthorized: Bad credentials") {
		t.Errorf("result %+v", res)
	}
	if strings.Contains(out.String(), "SECRET") || len(env.Warn) == 0 {
		t.Errorf("output %s", out)
	}
}

func TestGCOpenPRsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	seed(t, dir, now,
		seedScope{name: "pr-1", status: receipt.StatusApplied, age: time.Hour, pr: 1},
		seedScope{name: "pr-2", status: receipt.StatusApplied, age: time.Hour, pr: 2},
	)
	file := filepath.Join(dir, "open.txt")
	if err := os.WriteFile(file, []byte("# open pull requests\n2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &gcHarness{now: now, heads: []string{"main"}}
	f, out, _ := testFactory(map[string]string{"SPONSON_GC_OPEN_PRS_FILE": file})
	if code := h.run(t, f, "gc", "--chdir", dir, "--json"); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	_, res := gcResult(t, out)
	if diff := cmp.Diff([]scopeOutcome{{"pr-1", gc.WouldDestroy, "pr-closed"}}, outcomes(res)); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
}

// TestGCFlagsReachTheOptions goes through the run-function seam.
func TestGCFlagsReachTheOptions(t *testing.T) {
	t.Parallel()
	f, out, _ := testFactory(map[string]string{"SPONSON_GC_OLDER_THAN": "30d", "SPONSON_GC_REMOTE": "upstream", "SPONSON_GC_OPEN_PRS": "3,4", "SPONSON_LEASE_TTL": "2m", "SPONSON_GC_YES": "true"})
	var got *gccmd.GCOptions
	var o cmdutil.Outcome
	root := &cobra.Command{Use: "sponson"}
	root.PersistentFlags().Bool("json", false, "")
	root.AddCommand(gccmd.NewCmdGC(f, &o, func(_ context.Context, opts *gccmd.GCOptions) cmdutil.Outcome {
		got = opts
		return cmdutil.Outcome{Command: "gc"}
	}))
	root.SetArgs(NormalizeArgs([]string{"gc", "--env", "staging", "--repo", "o/r", "--include-main", "-var", "a=1"}))
	if err := root.Execute(); err != nil || o.Err != nil {
		t.Fatalf("%v %v %s", err, o.Err, out)
	}
	if got.OlderThan != 30*24*time.Hour || got.Remote != "upstream" || got.OpenPRs != "3,4" || got.LeaseTTL != 2*time.Minute {
		t.Errorf("environment did not reach the options: %+v", got)
	}
	if got.Env != "staging" || got.Repo != "o/r" || !got.IncludeMain || got.Yes || len(got.Vars) != 1 {
		t.Errorf("flags did not reach the options (and --yes must come from the command line only): %+v", got)
	}
}

func TestGCRefusesBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code errcode.Code
		msg  string
	}{
		{"empty list", []string{"--open-prs", ""}, nil, errcode.Usage, `lists no pull request; write "none"`},
		{"bad number", []string{"--open-prs", "1,x"}, nil, errcode.Usage, `"x" is not a pull request number`},
		{"list and file", []string{"--open-prs", "1", "--open-prs-file", "f"}, nil, errcode.Usage, "pass one"},
		{"missing file", []string{"--open-prs-file", filepath.Join(dir, "nope")}, nil, errcode.Usage, "cannot be read"},
		{"negative age", []string{"--older-than", "-1h"}, nil, errcode.Usage, "not a positive duration"},
		{"bad age", []string{"--older-than", "soon"}, nil, errcode.Usage, "not a duration like 720h or 30d"},
		{"bad age from env", nil, map[string]string{"SPONSON_GC_OLDER_THAN": "3w"}, errcode.Usage, "SPONSON_GC_OLDER_THAN"},
		{"remote like a flag", []string{"--remote", "-upload-pack=x"}, nil, errcode.Usage, "not a remote name"},
		{"argument", []string{"pr-1"}, nil, errcode.Usage, "unknown command"},
		{"production unapproved", []string{"--env", "production", "--yes", "--open-prs", "1"}, nil, errcode.EnvNotApproved, "named approver"},
		{"bad environment", []string{"--env", "../x"}, nil, errcode.Usage, "invalid environment name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, out, _ := testFactory(tc.env)
			args := append([]string{"gc", "--chdir", dir, "--json"}, tc.args...)
			code := Run(context.Background(), args, f)
			env := decode(t, out)
			if code != errcode.Lookup(tc.code).Exit || env.Error == nil || env.Error.Code != tc.code || !strings.Contains(env.Error.Message, tc.msg) || env.Command != "gc" {
				t.Errorf("exit %d, envelope %+v; want %s saying %q", code, env, tc.code, tc.msg)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".sponson", "@stacks", "production")); err == nil {
		t.Error("a refused gc left something in the store")
	}
}

// TestGCThroughRun is the registered command with its real seams: git
// fails outside a repository, so the branch rule is off, and nothing is
// selected without --yes being needed.
func TestGCThroughRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	seed(t, dir, now, seedScope{name: "pr-1", status: receipt.StatusApplied, age: time.Hour, pr: 1})
	f, out, _ := testFactory(nil)
	code := Run(context.Background(), []string{"gc", "--chdir", dir, "--open-prs", "none", "--remote", filepath.Join(dir, "no-such-remote"), "--json"}, f)
	env, res := gcResult(t, out)
	if code != errcode.ExitOK || !env.OK {
		t.Fatalf("exit %d %+v", code, env)
	}
	if res.Rules.BranchGone.On || !strings.Contains(res.Rules.BranchGone.Detail, "git ls-remote --heads") {
		t.Errorf("branch rule %+v", res.Rules.BranchGone)
	}
	if diff := cmp.Diff([]scopeOutcome{{"pr-1", gc.WouldDestroy, "pr-closed"}}, outcomes(res)); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
}

func TestGCNothingToCollect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := &gcHarness{now: time.Now(), heads: []string{"main"}}
	f, out, _ := testFactory(nil)
	if code := h.run(t, f, "gc", "--chdir", dir, "--open-prs", "none", "--yes"); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out.String(), "nothing to collect") || len(h.scopes()) != 0 {
		t.Errorf("output:\n%s", out)
	}
}
