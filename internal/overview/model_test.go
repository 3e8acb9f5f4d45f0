package overview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/overview"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

func TestBuildScopes(t *testing.T) {
	t.Parallel()
	m := fixtureModel(t)
	type row struct {
		Env, Stack, Scope, Owner, OwnerURL, Last, Lease, Collect, Drift, States string
		Owns, Timeline                                                          int
		Age                                                                     time.Duration
	}
	var got []row
	for _, s := range m.Scopes {
		r := row{Env: s.Environment, Stack: s.Stack, Scope: s.Scope, Owner: s.Owner.Label, OwnerURL: s.Owner.URL,
			Owns: s.Owns, Timeline: len(s.Timeline), Age: time.Duration(s.Age) * time.Second, States: strings.Join(s.States, " ")}
		if s.LastRun != nil {
			r.Last = s.LastRun.Command + " " + s.LastRun.Status + " " + s.LastRun.Actor
		}
		if s.Lease != nil {
			r.Lease = s.Lease.Holder
			if s.Lease.Expired {
				r.Lease += " expired"
			}
		}
		if s.Collect != nil {
			r.Collect = strings.Join(s.Collect.Reasons, ",")
		}
		if s.Drift != nil {
			r.Drift = s.Drift.Status
		}
		got = append(got, r)
	}
	gh := "https://github.com/acme/infra"
	want := []row{
		// preview: network, db, app in dependency order, then legacy, gone.
		{Env: "preview", Stack: "acme/network", Scope: "main", Owner: "main", OwnerURL: gh + "/tree/main", Last: "apply applied ada", Owns: 3, Timeline: 2, Age: 3 * time.Hour, States: ""},
		{Env: "preview", Stack: "acme/network", Scope: "pr-1", Owner: "#1", OwnerURL: gh + "/pull/1", Last: "apply applied bob", Owns: 1, Timeline: 1, Age: 5 * time.Hour, Collect: "pr-closed", States: "collectable"},
		{Env: "preview", Stack: "acme/db", Scope: "pr-9", Owner: "#9", OwnerURL: gh + "/pull/9", Last: "destroy destroyed ", Timeline: 2, Age: 9 * 24 * time.Hour, States: "destroyed"},
		{Env: "preview", Stack: "acme/app", Scope: "branch-feat-x", Owner: "feat/x", OwnerURL: gh + "/tree/feat%2Fx", Last: "apply failed dee", Lease: "run-branch-feat-x-0 expired", Owns: 1, Timeline: 1, Age: 26 * time.Hour, States: "failed stale-lease"},
		{Env: "preview", Stack: "acme/app", Scope: "pr-2", Owner: "#2", OwnerURL: gh + "/pull/2", Last: "apply applied cy", Lease: "run-pr-2-0", Owns: 2, Timeline: 1, Age: 2 * time.Hour, States: "running"},
		{Env: "preview", Stack: "acme/legacy", Scope: "branch-old", Owner: "old", OwnerURL: gh + "/tree/old", Last: "apply applied ", Owns: 4, Timeline: 1, Age: 40 * 24 * time.Hour, Collect: "older-than", States: "collectable"},
		{Env: "production", Stack: "acme/network", Scope: "main", Owner: "main", OwnerURL: gh + "/tree/main", Last: "apply applied ada", Owns: 5, Timeline: 1, Age: 30 * time.Hour, Drift: "in-sync", States: ""},
		{Env: "production", Stack: "acme/app", Scope: "main", Owner: "main", OwnerURL: gh + "/tree/main", Last: "apply applied ada", Owns: 3, Timeline: 1, Age: 29 * time.Hour, Drift: "drifted", States: "drifted"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("scopes (-want +got):\n%s", d)
	}
	wantCounts := overview.Counts{Scopes: 8, Running: 1, StaleLease: 1, Drifted: 1, Collectable: 2, Destroyed: 1, Owned: 19}
	if d := cmp.Diff(wantCounts, m.Counts); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"preview", "production"}, m.Environments); d != "" {
		t.Errorf("environments (-want +got):\n%s", d)
	}
	if m.Host.Repo != gh {
		t.Errorf("host %+v, want the repository of the lease's job URL", m.Host)
	}
	// The timeline is every receipt, oldest first.
	main := m.Scopes[0]
	if main.Timeline[0].Commit != "1111111aaaa" || main.Timeline[1].Commit != "2222222bbbb" || main.Partial {
		t.Errorf("main's timeline %+v", main.Timeline)
	}
	if l := m.Scopes[4].Lease; l.JobURL != "https://github.com/acme/infra/actions/runs/77" || l.Actor != "cy" || !l.Until.After(now) {
		t.Errorf("pr-2's lease %+v", l)
	}
}

func TestBuildStacks(t *testing.T) {
	t.Parallel()
	m := fixtureModel(t)
	type row struct {
		Name, Dir string
		Depth     int
		Needs     string
		Gone      bool
		Scopes    int
	}
	var got []row
	for _, s := range m.Stacks {
		got = append(got, row{s.Name, s.Directory, s.Depth, strings.Join(s.Needs, ","), s.Gone, s.Scopes})
	}
	want := []row{
		{"acme/network", "stacks/network", 0, "", false, 3},
		{"acme/db", "stacks/db", 1, "acme/network", false, 1},
		{"acme/app", "stacks/app", 2, "acme/db", false, 3},
		{"acme/legacy", "", 0, "", true, 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stacks (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"pr-closed", "older-than 30d"}, m.GC.Rules); d != "" {
		t.Errorf("gc rules (-want +got):\n%s", d)
	}
}

// A store without the history listing shows the latest receipt alone,
// and says so; without a stack set nothing is gone and there is no graph.
func TestBuildLatestOnly(t *testing.T) {
	t.Parallel()
	st, _ := seedStore(t, t.TempDir())
	m, err := overview.Build(context.Background(), overview.Input{Store: latestOnly{st}, Environments: []string{"preview"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Environments) != 1 || len(m.Scopes) != 6 {
		t.Fatalf("environments %v, %d scopes; want preview alone, 6 scopes", m.Environments, len(m.Scopes))
	}
	for _, s := range m.Scopes {
		if len(s.Timeline) != 1 || !s.Partial || s.Collect != nil {
			t.Errorf("%s: timeline %d partial %v collect %v; want the latest alone, partial, nothing collected without facts", s.Scope, len(s.Timeline), s.Partial, s.Collect)
		}
	}
	for _, s := range m.Stacks {
		if s.Gone || s.Directory != "" {
			t.Errorf("stack %+v without a set", s)
		}
	}
	if len(m.GC.Rules) != 0 || len(m.GC.Off) != 3 {
		t.Errorf("gc %+v: every rule off without its facts", m.GC)
	}
}

// latestOnly hides the file store's listings beyond the contract.
type latestOnly struct{ *filestore.Store }

func (latestOnly) ReceiptHistory() {}
func (latestOnly) Environments()   {}

// The page carries every scope, escapes what the store holds, and loads
// nothing from elsewhere.
func TestRenderSelfContained(t *testing.T) {
	t.Parallel()
	m := fixtureModel(t)
	m.Scopes[0].Owner.Label = `<script>alert(1)</script>`
	var b bytes.Buffer
	if err := overview.Render(&b, m, overview.RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, s := range m.Scopes {
		if !strings.Contains(page, `data-scope="`+s.Scope+`"`) {
			t.Errorf("the page lacks scope %s", s.Scope)
		}
	}
	if strings.Contains(page, "<script>alert(1)</script>") {
		t.Error("a value of the store reached the page unescaped")
	}
	for _, bad := range []string{"src=\"http", "href=\"//", "<link", "@import", "url(http", "fetch("} {
		if strings.Contains(page, bad) {
			t.Errorf("the page loads from elsewhere: %q", bad)
		}
	}
	if !strings.Contains(page, "<svg") || !strings.Contains(page, "directory gone") {
		t.Error("the page lacks the graph or the gone stack")
	}
	// A run's receipt that names its CI job links the run to it, in the
	// last run and in the timeline.
	if n := strings.Count(page, `<a href="https://github.com/acme/infra/actions/runs/55">run</a>`); n != 2 {
		t.Errorf("the page links the recorded job of pr-1's run %d times, want 2 (last run, timeline)", n)
	}
	if _, err := json.Marshal(m); err != nil {
		t.Fatal(err)
	}
}
