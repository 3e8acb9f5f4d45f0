package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/statuscmd"
)

func statusFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	seed(t, dir, time.Now(),
		seedScope{name: "main", status: receipt.StatusApplied, age: time.Hour, branch: "main", commit: "7aba4410c0ffee", approver: "Ada", owns: 3},
		seedScope{name: "branch-feat-search", status: receipt.StatusApplied, age: 2 * time.Hour, branch: "feat/search", superseded: "pr-12"},
		seedScope{name: "pr-12", status: receipt.StatusApplied, age: time.Hour, pr: 12, commit: "3c1f2a4b99", owns: 2, inherited: "branch-feat-search", busy: true},
		seedScope{name: "pr-13", status: receipt.StatusFailed, age: time.Hour, pr: 13, owns: 1, expired: true},
		seedScope{name: "pr-9", status: receipt.StatusDestroyed, age: 3 * time.Hour, pr: 9},
	)
	return dir
}

func TestStatusJSONRows(t *testing.T) {
	t.Parallel()
	dir := statusFixture(t)
	f, out, _ := testFactory(nil)
	if code := Run(context.Background(), []string{"status", "--chdir", dir, "--json"}, f); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	env := decode(t, out)
	b, _ := json.Marshal(env.Result)
	var res struct {
		Environment string                  `json:"environment"`
		Scopes      []statuscmd.ScopeStatus `json:"scopes"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Scope, Status, Commit, Approver, Lease, Expired, Superseded, Inherited string
		Owns                                                                   int
	}
	var got []row
	for _, s := range res.Scopes {
		r := row{Scope: s.Scope, Owns: s.Owns, Superseded: s.SupersededBy, Inherited: s.InheritedFrom}
		if s.LastRun != nil {
			r.Status, r.Commit, r.Approver = s.LastRun.Status, s.LastRun.Commit, s.LastRun.ApprovedBy
		}
		if s.Lease != nil {
			r.Lease = s.Lease.Holder
		}
		if s.ExpiredLease != nil {
			r.Expired = s.ExpiredLease.Holder
		}
		got = append(got, r)
	}
	want := []row{
		{Scope: "branch-feat-search", Status: "applied", Superseded: "pr-12"},
		{Scope: "main", Status: "applied", Commit: "7aba4410c0ffee", Approver: "Ada", Owns: 3},
		{Scope: "pr-12", Status: "applied", Commit: "3c1f2a4b99", Lease: "run-seed-pr-12", Inherited: "branch-feat-search", Owns: 2},
		{Scope: "pr-13", Status: "failed", Expired: "run-seed-pr-13", Owns: 1},
		{Scope: "pr-9", Status: "destroyed"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if res.Environment != "preview" || res.Scopes[2].Lease.ExpiresAt.IsZero() || res.Scopes[2].LastRun.PullRequest != 12 {
		t.Errorf("result %+v", res)
	}
}

func TestStatusTable(t *testing.T) {
	t.Parallel()
	dir := statusFixture(t)
	f, out, _ := testFactory(nil)
	if code := Run(context.Background(), []string{"status", "--chdir", dir}, f); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("want a title, the stack, a header, 4 rows, 2 lineage lines and the destroyed folded in one:\n%s", out)
	}
	for _, w := range []string{
		"stack acme/app",
		"SCOPE  OWNS  LAST RUN  AT  COMMIT  BY  LEASE",
		"branch-feat-search 0 applied - - free ↳ superseded by pr-12: its resources moved there main",
		"main 3 applied 7aba441 Ada free pr-12",
		"pr-12 2 applied 3c1f2a4 - run-seed-pr-12 until",
		"↳ inherited from branch-feat-search pr-13",
		"pr-13 1 apply failed - - expired (run-seed-pr-13) + 1 destroyed: pr-9 (--state destroyed lists them)",
	} {
		if !strings.Contains(squash(out.String()), squash(w)) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 120 {
			t.Errorf("a %d-column line:\n%s", n, l)
		}
	}
}

// squash drops the timestamps' columns' alignment: runs of spaces become
// one and dates are removed, so that a row can be matched as words.
func squash(s string) string {
	var words []string
	for _, w := range strings.Fields(s) {
		if len(w) == 10 && w[4] == '-' && w[7] == '-' || len(w) == 5 && w[2] == ':' {
			continue // 2025-06-01 10:02
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

func TestStatusEmpty(t *testing.T) {
	t.Parallel()
	f, out, _ := testFactory(nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sponson.hcl"), []byte(`environment "staging" {}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := Run(context.Background(), []string{"status", "--chdir", dir, "--env", "Staging"}, f); code != errcode.ExitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(out.String(), "environment staging · store file://") || !strings.Contains(out.String(), "no scopes yet") {
		t.Errorf("output:\n%s", out)
	}
}

func TestStatusRowsOfLeases(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	rows := statuscmd.StatusRows([]store.ScopeSummary{
		{Key: store.Key{Stack: testStack, Environment: "preview", Scope: "free"}, Lease: store.LeaseInfo{Token: 4}},
		{Key: store.Key{Stack: testStack, Environment: "preview", Scope: "held"}, Lease: store.LeaseInfo{Holder: "run-a", ExpiresAt: now.Add(time.Minute)}},
		{Key: store.Key{Stack: testStack, Environment: "preview", Scope: "dead"}, Lease: store.LeaseInfo{Holder: "run-b", ExpiresAt: now.Add(-time.Second)}},
	}, now)
	if rows[0].Lease != nil || rows[0].ExpiredLease != nil || rows[0].LastRun != nil {
		t.Errorf("free: %+v", rows[0])
	}
	if rows[1].Lease == nil || rows[1].Lease.Holder != "run-a" || rows[1].ExpiredLease != nil {
		t.Errorf("held: %+v", rows[1])
	}
	if rows[2].Lease != nil || rows[2].ExpiredLease == nil || rows[2].ExpiredLease.Holder != "run-b" {
		t.Errorf("dead: %+v", rows[2])
	}
}

func TestReceiptHuman(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 6, 1, 10, 2, 3, 0, time.Local)
	r := &receipt.Receipt{
		Version: 1, RunID: "run-7aba4410", Command: "apply", Environment: "production", Scope: "pr-12", Status: receipt.StatusApplied,
		StartedAt: start, FinishedAt: start.Add(9 * time.Second), Branch: "feat/search", PullRequest: 12, Commit: "3c1f2a4b99e0",
		ApprovedBy: "Ada", Engine: receipt.Engine{Name: "OpenTofu", Version: "1.12.0"}, InheritedFrom: "branch-feat-search",
		Changes: []receipt.Change{
			{Address: "a.x", Actions: []string{"create"}},
			{Address: "a.y", Actions: []string{"delete", "create"}},
			{Address: "a.z", Actions: []string{"update"}},
			{Address: "a.w", Actions: []string{"no-op"}},
		},
		Ledger:        []receipt.Entry{{Address: "a.x", ID: "x-1", CreatedBy: receipt.CreatedBySponson}, {Address: "a.y", ID: "y-1", CreatedBy: receipt.CreatedByInherited}},
		LockPreempted: &receipt.Preempted{Holder: "run-dead", Since: start.Add(-time.Hour), Until: start.Add(-time.Minute)},
		Settled:       []receipt.Settlement{{Address: "a.x", FromRun: "run-dead", Outcome: receipt.SettledClaimed}},
	}
	var b bytes.Buffer
	statuscmd.WriteReceipt(&b, r)
	want := `production/pr-12 · applied · run-7aba4410
run        apply started 2025-06-01 10:02:03, finished 10:02:12 (9s)
context    branch feat/search · pull request #12 · commit 3c1f2a4 · approved by Ada
engine     OpenTofu 1.12.0
inherited  from branch-feat-search
lease      took over from run-dead (held since 09:02:03, expired 10:01:03)
changes    2 to add, 1 to change, 1 to destroy
settled    a.x claimed (intent of run-dead)
owns 2 resources:
  a.x  x-1  created
  a.y  y-1  inherited
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}

	r = &receipt.Receipt{Version: 1, RunID: "run-1", Command: "destroy", Environment: "preview", Scope: "branch-x", Status: receipt.StatusFailed,
		StartedAt: start, SupersededBy: "pr-3", Error: &receipt.Failure{Code: "ENGINE_FAILED", Message: "tofu destroy: exit status 1"}}
	b.Reset()
	statuscmd.WriteReceipt(&b, r)
	want = `preview/branch-x · destroy failed · run-1
run         destroy started 2025-06-01 10:02:03
superseded  by pr-3: its resources moved there
error ENGINE_FAILED: tofu destroy: exit status 1
owns nothing
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
}

func TestReceiptCommand(t *testing.T) {
	t.Parallel()
	dir := statusFixture(t)
	f, out, _ := testFactory(nil)
	if code := Run(context.Background(), []string{"receipt", "--chdir", dir, "--pr", "12", "--json"}, f); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	env := decode(t, out)
	if res, _ := env.Result.(map[string]any); res["runId"] != "run-pr-12" || res["inheritedFrom"] != "branch-feat-search" {
		t.Errorf("result %v", env.Result)
	}
	f, out, _ = testFactory(nil)
	if code := Run(context.Background(), []string{"receipt", "--chdir", dir, "--scope", "main"}, f); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out.String(), "commit 7aba441 · approved by Ada") || !strings.Contains(out.String(), "owns 3 resources:") {
		t.Errorf("output:\n%s", out)
	}
	f, out, _ = testFactory(nil)
	if code := Run(context.Background(), []string{"receipt", "--chdir", dir, "--scope", "pr-404", "--json"}, f); code != errcode.ExitRefused {
		t.Errorf("missing scope: exit %d\n%s", code, out)
	}
}

// TestStatusSaysWhoHoldsALease: a live lease whose record describes its
// holder gets a line under its scope with the job, actor, commit and host.
func TestStatusSaysWhoHoldsALease(t *testing.T) {
	t.Parallel()
	now := time.Now()
	l := store.LeaseInfo{
		Holder: "run-3c1f2a9b", Token: 4, AcquiredAt: now.Add(-time.Minute), ExpiresAt: now.Add(14 * time.Minute),
		About: store.HolderInfo{JobURL: "https://github.com/acme/infra/actions/runs/123", Actor: "alice", Commit: "1a2b3c4d5e", PullRequest: 42, Host: "runner-7"},
	}
	var out bytes.Buffer
	statuscmd.WriteStatusTable(&out, statuscmd.StatusRows([]store.ScopeSummary{{Key: store.Key{Environment: "preview", Scope: "pr-42"}, Lease: l}}, now))
	want := "↳ held by run 3c1f2a9b (https://github.com/acme/infra/actions/runs/123, @alice, commit 1a2b3c4, pull request #42, host runner-7) since "
	if !strings.Contains(out.String(), want) {
		t.Errorf("status:\n%s\nlacks %q", out.String(), want)
	}
}

// TestOutcomeTextOfAnUnlock: an unlock's receipt carries the outcome of the
// run before it; status says the scope was unlocked and what that run's
// outcome was, never "unlock failed" (issue 52).
func TestOutcomeTextOfAnUnlock(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    cmdutil.RunSummary
		want string
	}{
		{cmdutil.RunSummary{Command: "unlock", Status: receipt.StatusFailed}, "unlocked (last run failed)"},
		{cmdutil.RunSummary{Command: "unlock", Status: receipt.StatusApplied}, "unlocked (last run applied)"},
		{cmdutil.RunSummary{Command: "apply", Status: receipt.StatusFailed}, "apply failed"},
		{cmdutil.RunSummary{Command: "apply", Status: receipt.StatusApplied}, "applied"},
	} {
		if got := tt.r.OutcomeText(); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.r.Command, tt.r.Status, got, tt.want)
		}
	}
}

// statusScopes runs status --json with args and returns the scopes of its
// rows and of its overview.
func statusScopes(t *testing.T, dir string, args ...string) (rows, model []string) {
	t.Helper()
	f, out, errOut := testFactory(nil)
	if code := Run(context.Background(), append([]string{"status", "--chdir", dir, "--json"}, args...), f); code != errcode.ExitOK {
		t.Fatalf("status %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	b, _ := json.Marshal(decode(t, out).Result)
	var res struct {
		Scopes   []statuscmd.ScopeStatus `json:"scopes"`
		Overview struct {
			Scopes []struct {
				Scope  string   `json:"scope"`
				States []string `json:"states"`
			} `json:"scopes"`
		} `json:"overview"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	rows, model = []string{}, []string{}
	for _, s := range res.Scopes {
		rows = append(rows, s.Scope)
	}
	for _, s := range res.Overview.Scopes {
		model = append(model, s.Scope)
	}
	return rows, model
}

func TestStatusFilters(t *testing.T) {
	t.Parallel()
	dir := statusFixture(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"branch-feat-search", "main", "pr-12", "pr-13", "pr-9"}},
		{[]string{"--state", "running"}, []string{"pr-12"}},
		{[]string{"--state", "stale-lease"}, []string{"pr-13"}},
		{[]string{"--state", "destroyed"}, []string{"pr-9"}},
		{[]string{"--state", "failed"}, []string{"pr-13"}},
		// gc's pr-closed rule with pull request 12 open: 13 is closed;
		// pr-9 is destroyed, and no rule judges the others.
		{[]string{"--state", "collectable", "--open-prs", "12"}, []string{"pr-13"}},
		{[]string{"--state", "collectable"}, []string{}},
		{[]string{"--stack", "acme/other"}, []string{}},
	} {
		rows, model := statusScopes(t, dir, c.args...)
		if d := cmp.Diff(c.want, rows); d != "" {
			t.Errorf("status %v rows (-want +got):\n%s", c.args, d)
		}
		if d := cmp.Diff(c.want, model); d != "" {
			t.Errorf("status %v overview (-want +got):\n%s", c.args, d)
		}
	}
	f, out, errOut := testFactory(nil)
	if code := Run(context.Background(), []string{"status", "--chdir", dir, "--state", "stuck"}, f); code != errcode.ExitRefused || !strings.Contains(errOut.String(), "running, stale-lease") {
		t.Errorf("--state stuck: exit %d, want 2 naming the states\n%s\n%s", code, out, errOut)
	}
}

func TestStatusHTML(t *testing.T) {
	t.Parallel()
	dir := statusFixture(t)
	page := filepath.Join(t.TempDir(), "overview.html")
	f, out, errOut := testFactory(nil)
	if code := Run(context.Background(), []string{"status", "--chdir", dir, "--html", page}, f); code != errcode.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"branch-feat-search", "main", "pr-12", "pr-13", "pr-9"} {
		if !bytes.Contains(b, []byte(`data-scope="`+s+`"`)) {
			t.Errorf("the page lacks scope %s", s)
		}
	}
	if !strings.Contains(out.String(), "wrote the overview of 5 scopes to "+page) {
		t.Errorf("output:\n%s", out)
	}
	f, out, errOut = testFactory(nil)
	if code := Run(context.Background(), []string{"status", "--chdir", dir, "--html", "-"}, f); code != errcode.ExitOK || !strings.HasPrefix(out.String(), "<!DOCTYPE html>") || !strings.Contains(out.String(), `data-scope="pr-9"`) {
		t.Errorf("--html -: exit %d\n%.200s\n%s", code, out, errOut)
	}
	f, out, errOut = testFactory(nil)
	if code := Run(context.Background(), []string{"status", "--chdir", dir, "--html", "-", "--json"}, f); code != errcode.ExitRefused {
		t.Errorf("--html - --json: exit %d, want 2\n%s%s", code, out, errOut)
	}
}

// --drift reads a drift result, of one stack or of --all: drift records
// nothing in the store.
func TestStatusDrift(t *testing.T) {
	t.Parallel()
	dir := statusFixture(t)
	one := filepath.Join(t.TempDir(), "drift.json")
	if err := os.WriteFile(one, []byte(`{"ok":false,"command":"drift","result":{"environment":"preview","store":"x","scopes":[{"scope":"pr-12","status":"drifted","changes":[{"address":"a.b","action":"update"}]},{"scope":"main","status":"in-sync","changes":[]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	all := filepath.Join(t.TempDir(), "drift-all.json")
	if err := os.WriteFile(all, []byte(`{"result":{"environment":"preview","stacks":[{"stack":"acme/app","directory":".","result":{"environment":"preview","scopes":[{"scope":"main","status":"drifted","changes":[]}]}},{"stack":"acme/other","directory":"x","result":{"environment":"preview","scopes":[{"scope":"pr-12","status":"drifted","changes":[]}]}}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if rows, _ := statusScopes(t, dir, "--drift", one, "--state", "drifted"); !cmp.Equal(rows, []string{"pr-12"}) {
		t.Errorf("drifted by one stack's result: %v, want [pr-12]", rows)
	}
	if rows, _ := statusScopes(t, dir, "--drift", all, "--state", "drifted"); !cmp.Equal(rows, []string{"main"}) {
		t.Errorf("drifted by --all's result: %v, want [main] (pr-12 drifted in another stack)", rows)
	}
	f, out, errOut := testFactory(nil)
	if code := Run(context.Background(), []string{"status", "--chdir", dir, "--drift", filepath.Join(dir, "nothing.json")}, f); code != errcode.ExitRefused {
		t.Errorf("--drift of no file: exit %d, want 2\n%s%s", code, out, errOut)
	}
}
