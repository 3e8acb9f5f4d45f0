package overview_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/overview"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

// now is the fixture's present: receipts and leases are written relative
// to it through the store's clock, and Build reads at it.
var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// run is one receipt a scope's run writes.
type run struct {
	command, status string
	ago             time.Duration
	pr              int
	branch, actor   string
	commit          string
	approver        string
	owns            int
	superseded      string
	job             string // the CI job's URL the receipt records
}

// scopeSpec is one scope of the fixture: its runs, oldest first, and the
// lease it is left with.
type scopeSpec struct {
	env, stack, scope string
	runs              []run
	// lease: "" released, "live" held until after now, "stale" expired
	// before now without release.
	lease string
	job   string
}

// fixture is a store of three environments' worth of stacks: every kind
// of scope the overview tells apart, written through the real store API.
var fixture = []scopeSpec{
	{env: "preview", stack: "acme/network", scope: "main", runs: []run{
		{command: "apply", status: receipt.StatusApplied, ago: 72 * time.Hour, branch: "main", actor: "ada", commit: "1111111aaaa", owns: 2},
		{command: "apply", status: receipt.StatusApplied, ago: 3 * time.Hour, branch: "main", actor: "ada", commit: "2222222bbbb", owns: 3},
	}},
	{env: "preview", stack: "acme/network", scope: "pr-1", runs: []run{
		{command: "apply", status: receipt.StatusApplied, ago: 5 * time.Hour, pr: 1, branch: "feat/one", actor: "bob", commit: "3333333cccc", owns: 1, job: "https://github.com/acme/infra/actions/runs/55"},
	}},
	{env: "preview", stack: "acme/app", scope: "pr-2", runs: []run{
		{command: "apply", status: receipt.StatusApplied, ago: 2 * time.Hour, pr: 2, branch: "feat/two", actor: "cy", commit: "4444444dddd", owns: 2},
	}, lease: "live", job: "https://github.com/acme/infra/actions/runs/77"},
	{env: "preview", stack: "acme/app", scope: "branch-feat-x", runs: []run{
		{command: "apply", status: receipt.StatusFailed, ago: 26 * time.Hour, branch: "feat/x", actor: "dee", commit: "5555555eeee", owns: 1},
	}, lease: "stale"},
	{env: "preview", stack: "acme/db", scope: "pr-9", runs: []run{
		{command: "apply", status: receipt.StatusApplied, ago: 10 * 24 * time.Hour, pr: 9, owns: 2},
		{command: "destroy", status: receipt.StatusDestroyed, ago: 9 * 24 * time.Hour, pr: 9},
	}},
	{env: "preview", stack: "acme/legacy", scope: "branch-old", runs: []run{
		{command: "apply", status: receipt.StatusApplied, ago: 40 * 24 * time.Hour, branch: "old", owns: 4},
	}},
	{env: "production", stack: "acme/network", scope: "main", runs: []run{
		{command: "apply", status: receipt.StatusApplied, ago: 30 * time.Hour, branch: "main", actor: "ada", approver: "Ada", commit: "6666666ffff", owns: 5},
	}},
	{env: "production", stack: "acme/app", scope: "main", runs: []run{
		{command: "apply", status: receipt.StatusApplied, ago: 29 * time.Hour, branch: "main", actor: "ada", approver: "Ada", commit: "6666666ffff", owns: 3},
	}},
}

// seedStore writes the fixture into a file store under dir and returns it,
// and how to write one more scope as the fixture's are written.
func seedStore(t testing.TB, dir string) (*filestore.Store, func(scopeSpec)) {
	t.Helper()
	// The store's clock: the time each write is made at. The store may
	// read it from a server's goroutine while the test writes.
	var clock atomic.Int64
	st, err := filestore.Open(filepath.Join(dir, ".sponson"), filestore.WithClock(func() time.Time { return time.Unix(0, clock.Load()).UTC() }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	write := func(s scopeSpec) {
		key := store.Key{Stack: s.stack, Environment: s.env, Scope: s.scope}
		for i, r := range s.runs {
			clock.Store(now.Add(-r.ago - time.Minute).UnixNano())
			last := i == len(s.runs)-1
			ttl := time.Hour
			hctx := ctx
			if last && s.lease == "stale" {
				ttl = 10 * time.Minute // taken 26h ago: long expired at now
			}
			if last && s.job != "" {
				hctx = store.WithHolder(ctx, store.HolderInfo{JobURL: s.job, Actor: r.actor})
			}
			if last && s.lease == "live" {
				clock.Store(now.Add(-time.Minute).UnixNano()) // a run that started a minute ago
			}
			g, err := st.Acquire(hctx, key, fmt.Sprintf("run-%s-%d", s.scope, i), ttl)
			if err != nil {
				t.Fatal(err)
			}
			rec := &receipt.Receipt{
				Version: receipt.Version, RunID: fmt.Sprintf("run-%s-%s-%d", s.env, s.scope, i), Command: r.command,
				Stack: s.stack, Environment: s.env, Scope: s.scope, Status: r.status,
				StartedAt: now.Add(-r.ago - time.Minute), FinishedAt: now.Add(-r.ago),
				Branch: r.branch, PullRequest: r.pr, Commit: r.commit, Actor: r.actor, JobURL: r.job, ApprovedBy: r.approver,
				SupersededBy: r.superseded, Changes: []receipt.Change{}, Ledger: []receipt.Entry{},
			}
			for j := range r.owns {
				rec.Ledger = append(rec.Ledger, receipt.Entry{
					Identity: fmt.Sprintf("terraform_data/%s-%s-%d", s.env, s.scope, j), Address: fmt.Sprintf("terraform_data.r%d", j),
					Provider: "terraform.io/builtin/terraform", Type: "terraform_data", ID: fmt.Sprintf("id-%s-%d", s.scope, j), CreatedBy: receipt.CreatedBySponson,
				})
			}
			if err := st.WriteReceipt(hctx, g.Lease, rec); err != nil {
				t.Fatal(err)
			}
			if !last || s.lease == "" {
				if err := st.Release(hctx, g.Lease); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, s := range fixture {
		write(s)
	}
	return st, write
}

// repoTree writes a repository of three stacks: network, db reading
// network's outputs, app after db. acme/legacy has no directory.
func repoTree(t testing.TB) (*stackgraph.Set, error) {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"stacks/network/main.tf": `resource "sponson_scope" "this" {}`,
		"stacks/db/main.tf":      `resource "sponson_scope" "this" {}` + "\n" + `data "sponson_outputs" "net" { stack = "stacks/network" }`,
		"stacks/app/main.tf":     `resource "sponson_scope" "this" { after = ["stacks/db"] }`,
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	name := func(dir string) (string, error) { return "acme/" + filepath.Base(dir), nil }
	return stackgraph.Discover(stackgraph.Options{Root: root, Top: root, Name: name,
		Resolve: func(_, ref string) (stack.Reference, error) {
			n, _ := name(filepath.Join(root, ref))
			return stack.Reference{Name: n, Dir: filepath.Join(root, ref)}, nil
		}})
}

// fixtureModel builds the overview of the fixture: pull request 2 open
// (so pr-1's is closed), older-than 30 days.
func fixtureModel(t testing.TB) *overview.Model {
	t.Helper()
	in, _ := fixtureInput(t)
	m, err := overview.Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fixtureInput is the input of fixtureModel, and how to write a scope
// more into its store.
func fixtureInput(t testing.TB) (overview.Input, func(scopeSpec)) {
	t.Helper()
	st, write := seedStore(t, t.TempDir())
	set, err := repoTree(t)
	if err != nil {
		t.Fatal(err)
	}
	return overview.Input{
		Store: st, StoreURL: "file:///fixture/.sponson", Environments: []string{"preview", "production"},
		Stacks: set, GC: gc.Facts{OpenPRs: gc.Set([]int{2}), PRsKnown: true}, GCOptions: gc.Options{OlderThan: 30 * 24 * time.Hour},
		Drift: map[string]summary.DriftScope{
			overview.DriftKey("production", "acme/app", "main"):     {Scope: "main", Status: summary.Drifted, Changes: []summary.Change{{}, {}}},
			overview.DriftKey("production", "acme/network", "main"): {Scope: "main", Status: summary.InSync, Changes: []summary.Change{}},
		},
		Now: now,
	}, write
}
