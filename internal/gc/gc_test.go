package gc_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

type scopeSpec struct {
	name       string
	status     string        // "" for no receipt
	age        time.Duration // since the last run finished
	unfinished bool          // only StartedAt is set
	superseded string
	leased     time.Duration // >0: live lease for this long; <0: expired since
}

func summaries(specs ...scopeSpec) []store.ScopeSummary {
	var out []store.ScopeSummary
	for _, s := range specs {
		sum := store.ScopeSummary{Key: store.Key{Stack: "acme/app", Environment: "preview", Scope: s.name}}
		if s.status != "" {
			r := &receipt.Receipt{Version: 1, RunID: "run-" + s.name, Command: "apply", Environment: "preview", Scope: s.name, Status: s.status, SupersededBy: s.superseded}
			r.StartedAt = now.Add(-s.age - time.Minute)
			if !s.unfinished {
				r.FinishedAt = now.Add(-s.age)
			}
			if s.status == receipt.StatusDestroyed {
				r.Command = "destroy"
			}
			sum.Latest = r
		}
		if s.leased != 0 {
			sum.Lease = store.LeaseInfo{Holder: "run-other", Token: 3, AcquiredAt: now.Add(-time.Minute), ExpiresAt: now.Add(s.leased)}
		}
		out = append(out, sum)
	}
	return out
}

type pick struct {
	Scope   string
	Reasons []gc.Reason
	Busy    bool
}

func picks(cs []gc.Candidate) []pick {
	out := []pick{}
	for _, c := range cs {
		out = append(out, pick{c.Scope, c.Reasons, c.Busy != nil})
	}
	return out
}

func TestSelect(t *testing.T) {
	t.Parallel()
	prsOpen := func(ns ...int) gc.Facts { return gc.Facts{OpenPRs: gc.Set(ns), PRsKnown: true} }
	day := 24 * time.Hour
	mix := summaries(
		scopeSpec{name: "main", status: receipt.StatusApplied, age: 90 * day},
		scopeSpec{name: "pr-1", status: receipt.StatusApplied, age: time.Hour},
		scopeSpec{name: "pr-2", status: receipt.StatusApplied, age: time.Hour},
		scopeSpec{name: "pr-3", status: receipt.StatusFailed, age: 40 * day},
		scopeSpec{name: "pr-4", status: receipt.StatusApplied, superseded: "pr-9"},
		scopeSpec{name: "pr-5", status: receipt.StatusApplied, leased: time.Minute},
		scopeSpec{name: "pr-6", status: receipt.StatusDestroyed, age: 50 * day},
		scopeSpec{name: "pr-7", status: receipt.StatusApplied, leased: -time.Minute},
		scopeSpec{name: "pr-08", status: receipt.StatusApplied},
		scopeSpec{name: "branch-feat-search", status: receipt.StatusApplied, age: 31 * day},
		scopeSpec{name: "branch-gone", status: receipt.StatusApplied},
		scopeSpec{name: "branch-old", status: receipt.StatusApplied, superseded: "pr-2", age: 60 * day},
		scopeSpec{name: "demo", status: receipt.StatusRunning, unfinished: true, age: 31 * day},
		scopeSpec{name: "pr-10"}, // a lease record, no receipt
	)
	for _, tc := range []struct {
		name   string
		scopes []store.ScopeSummary
		facts  gc.Facts
		opts   gc.Options
		want   []pick
	}{
		{"no facts, no options: nothing", mix, gc.Facts{}, gc.Options{}, []pick{}},
		{"closed pull requests", mix, prsOpen(2), gc.Options{}, []pick{
			{"pr-1", []gc.Reason{gc.PRClosed}, false},
			{"pr-10", []gc.Reason{gc.PRClosed}, false},
			{"pr-3", []gc.Reason{gc.PRClosed}, false},
			{"pr-5", []gc.Reason{gc.PRClosed}, true},
			{"pr-7", []gc.Reason{gc.PRClosed}, false}, // an expired lease is no lease
		}},
		{"none open", mix, prsOpen(), gc.Options{}, []pick{
			{"pr-1", []gc.Reason{gc.PRClosed}, false},
			{"pr-10", []gc.Reason{gc.PRClosed}, false},
			{"pr-2", []gc.Reason{gc.PRClosed}, false},
			{"pr-3", []gc.Reason{gc.PRClosed}, false},
			{"pr-5", []gc.Reason{gc.PRClosed}, true},
			{"pr-7", []gc.Reason{gc.PRClosed}, false},
		}},
		{"branches gone", mix, gc.Facts{BranchScopes: gc.BranchScopes([]string{"main", "feat/search"}), BranchesKnown: true}, gc.Options{}, []pick{
			{"branch-gone", []gc.Reason{gc.BranchGone}, false},
		}},
		{"older than 30 days", mix, gc.Facts{}, gc.Options{OlderThan: 30 * day}, []pick{
			{"branch-feat-search", []gc.Reason{gc.OlderThan}, false},
			{"demo", []gc.Reason{gc.OlderThan}, false}, // never finished: its start counts
			{"pr-3", []gc.Reason{gc.OlderThan}, false},
		}},
		{"older than includes main when asked", mix, gc.Facts{}, gc.Options{OlderThan: 30 * day, IncludeMain: true}, []pick{
			{"branch-feat-search", []gc.Reason{gc.OlderThan}, false},
			{"demo", []gc.Reason{gc.OlderThan}, false},
			{"main", []gc.Reason{gc.OlderThan}, false},
			{"pr-3", []gc.Reason{gc.OlderThan}, false},
		}},
		{"every rule at once, reasons combine", mix,
			gc.Facts{OpenPRs: gc.Set([]int{1, 2, 5, 7, 10}), PRsKnown: true, BranchScopes: gc.BranchScopes([]string{"main"}), BranchesKnown: true},
			gc.Options{OlderThan: 30 * day}, []pick{
				{"branch-feat-search", []gc.Reason{gc.BranchGone, gc.OlderThan}, false},
				{"branch-gone", []gc.Reason{gc.BranchGone}, false},
				{"demo", []gc.Reason{gc.OlderThan}, false},
				{"pr-3", []gc.Reason{gc.PRClosed, gc.OlderThan}, false},
			}},
		{"an open pull request's scope is still old", summaries(scopeSpec{name: "pr-1", status: receipt.StatusApplied, age: 40 * day}),
			prsOpen(1), gc.Options{OlderThan: 30 * day}, []pick{{"pr-1", []gc.Reason{gc.OlderThan}, false}}},
		{"a failed destroy is collected again", summaries(scopeSpec{name: "pr-1", status: receipt.StatusFailed}),
			prsOpen(), gc.Options{}, []pick{{"pr-1", []gc.Reason{gc.PRClosed}, false}}},
		{"empty environment", nil, prsOpen(), gc.Options{OlderThan: time.Hour}, []pick{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := gc.Select(tc.scopes, tc.facts, now, tc.opts)
			if diff := cmp.Diff(tc.want, picks(got)); diff != "" {
				t.Errorf("Select (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectCarriesTheReceiptAndLease(t *testing.T) {
	t.Parallel()
	got := gc.Select(summaries(scopeSpec{name: "pr-5", status: receipt.StatusApplied, age: time.Hour, leased: time.Minute}),
		gc.Facts{OpenPRs: gc.Set(nil), PRsKnown: true}, now, gc.Options{})
	if len(got) != 1 {
		t.Fatalf("got %d candidates", len(got))
	}
	c := got[0]
	if c.Destroy() || c.Busy.Holder != "run-other" || c.Latest == nil || c.Latest.RunID != "run-pr-5" || !c.LastRun.Equal(now.Add(-time.Hour)) {
		t.Errorf("candidate %+v", c)
	}
}

func TestPRNumber(t *testing.T) {
	t.Parallel()
	for scope, want := range map[string]int{"pr-1": 1, "pr-42": 42, "pr-0": 0, "pr-012": 0, "pr-": 0, "pr-x": 0, "pr--1": 0, "pr-1a": 0, "branch-pr-1": 0, "main": 0} {
		n, ok := gc.PRNumber(scope)
		if n != want || ok != (want > 0) {
			t.Errorf("PRNumber(%q) = %d, %v; want %d", scope, n, ok, want)
		}
	}
}

func TestBranchScopesSanitizeLikeRuns(t *testing.T) {
	t.Parallel()
	got := gc.BranchScopes([]string{"feat/Search", "fix//two  spaces", "master", "release-1.2"})
	want := map[string]bool{"branch-feat-Search": true, "branch-fix-two-spaces": true, "main": true, "branch-release-1.2": true,
		// master is main's scope, or its own where the default branch is another.
		"branch-master": true,
		// fix//two  spaces loses characters: its scope has a hash
		// (runctx.BranchScope); the name it had before is kept too.
		"branch-fix-two-spaces-1756df84": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BranchScopes (-want +got):\n%s", diff)
	}
}

func TestParseHeads(t *testing.T) {
	t.Parallel()
	out := "1111111111111111111111111111111111111111\trefs/heads/main\n" +
		"2222222222222222222222222222222222222222\trefs/heads/feat/search\n" +
		"warning: something\n" +
		"3333333333333333333333333333333333333333\trefs/tags/v1\n\n"
	if diff := cmp.Diff([]string{"main", "feat/search"}, gc.ParseHeads(out)); diff != "" {
		t.Errorf("ParseHeads (-want +got):\n%s", diff)
	}
	if got := gc.ParseHeads(""); len(got) != 0 {
		t.Errorf("ParseHeads of nothing = %v", got)
	}
}

func TestParsePRList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"12,15", []int{12, 15}, false},
		{" 12 , 15 ,", []int{12, 15}, false},
		{"7", []int{7}, false},
		{"none", []int{}, false},
		{"", nil, true},
		{" , ", nil, true},
		{"12,x", nil, true},
		{"0", nil, true},
		{"-3", nil, true},
		{"#12", nil, true},
		{"99999999999999999999999", nil, true},
	} {
		got, err := gc.ParsePRList(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParsePRList(%q): error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); !tc.err && diff != "" {
			t.Errorf("ParsePRList(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestParsePRFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{"12\n15\n", []int{12, 15}, ""},
		{"# open pull requests\n\n  12  \r\n15", []int{12, 15}, ""},
		{"none\n", []int{}, ""},
		{"", nil, `lists no pull request; write "none" on a line when none is open`},
		{"# nothing\n", nil, `lists no pull request; write "none" on a line when none is open`},
		{"12\nnone\n", nil, `says "none" and lists pull requests`},
		{"12\n1 5\n", nil, `line 2: "1 5" is not a pull request number`},
	} {
		got, err := gc.ParsePRFile([]byte(tc.in))
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != tc.err {
			t.Errorf("ParsePRFile(%q): error %q, want %q", tc.in, msg, tc.err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); tc.err == "" && diff != "" {
			t.Errorf("ParsePRFile(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestGoneAndLastRun(t *testing.T) {
	t.Parallel()
	started := now.Add(-time.Hour)
	if !gc.LastRun(nil).IsZero() || gc.Gone(nil) {
		t.Error("no receipt: a last run or gone")
	}
	r := &receipt.Receipt{Status: receipt.StatusRunning, StartedAt: started}
	if !gc.LastRun(r).Equal(started) || gc.Gone(r) {
		t.Errorf("running receipt: last run %s, gone %v", gc.LastRun(r), gc.Gone(r))
	}
	r.FinishedAt, r.Status = now, receipt.StatusDestroyed
	if !gc.LastRun(r).Equal(now) || !gc.Gone(r) {
		t.Errorf("destroyed receipt: last run %s, gone %v", gc.LastRun(r), gc.Gone(r))
	}
}
