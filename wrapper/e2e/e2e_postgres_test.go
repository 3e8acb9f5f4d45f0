package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore/pgtest"
)

// The PostgreSQL end-to-end tests run sponson with --store postgres://...
// against a throwaway server of their own (pgtest: never a system-wide
// one). Every run has its own copy of the configuration, as separate CI
// jobs have separate checkouts; only the store is shared. The tests read
// the store back through pgstore.

// pgE2E is a server and a database for one test, with a store on it to
// check what the runs left.
type pgE2E struct {
	srv   *pgtest.Server
	db    string
	url   string // what --store gets
	check *pgstore.Store
}

func newPgE2E(t *testing.T) *pgE2E {
	t.Helper()
	srv := pgtest.Own(t)
	db := srv.NewDatabase(t)
	check, err := pgstore.Open(t.Context(), srv.DSN(db), pgstore.WithBudget(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { check.Close() })
	return &pgE2E{srv: srv, db: db, url: srv.URL(db), check: check}
}

// runAll runs one sponson command per configuration copy, all at once.
func runAll(h *harness, dirs []string, env func(i int) []string, args func(i int) []string) []result {
	out := make([]result, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() { out[i] = h.run(dir, env(i), args(i)...) })
	}
	wg.Wait()
	return out
}

func noEnv(int) []string { return nil }

// copies makes n copies of a configuration.
func copies(h *harness, src string, n int) []string {
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = h.workdir(src)
	}
	return dirs
}

// TestE2EPostgresThirtyTwoScopes: 32 pull requests apply at once on one
// PostgreSQL store. All succeed, none waits on another's scope, and each
// scope ends with its own receipt, state and index entries.
func TestE2EPostgresThirtyTwoScopes(t *testing.T) {
	h := e2e(t)
	p := newPgE2E(t)
	const n = 32
	dirs := copies(h, "testdata/slow", n)
	start := time.Now()
	results := runAll(h, dirs, noEnv, func(i int) []string {
		return []string{"apply", "--store", p.url, "--scope", fmt.Sprintf("pr-%d", i+1), "--json", "-var", "sleep=1"}
	})
	t.Logf("%d applies at once took %s", n, time.Since(start).Round(time.Millisecond))
	for i, r := range results {
		if r.exit != 0 {
			t.Errorf("pr-%d: exit %d\n%s\n%s", i+1, r.exit, r.stdout, r.stderr)
			continue
		}
		if strings.Contains(r.stderr, "waiting for the lease") {
			t.Errorf("pr-%d waited for a lease:\n%s", i+1, r.stderr)
		}
		if got := r.envelope(t)["result"].(map[string]any)["store"]; got != p.url {
			t.Errorf("pr-%d: the envelope names the store %v, want %s", i+1, got, p.url)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	sums, err := p.check.List(t.Context(), "preview")
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != n {
		t.Fatalf("List(preview) has %d scopes, want %d", len(sums), n)
	}
	for i := range n {
		checkApplied(t, p.check, fmt.Sprintf("pr-%d", i+1), 1)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, ".sponson")); err == nil {
			t.Errorf("a run wrote a file store in %s although --store named PostgreSQL", dir)
			break
		}
	}
}

// TestE2EPostgresEightRunsOneScope: eight runs of one scope at once. Without
// --wait exactly one runs and seven exit 3 LOCK_HELD; with --wait all eight
// run one after another, each with the next token.
func TestE2EPostgresEightRunsOneScope(t *testing.T) {
	h := e2e(t)
	p := newPgE2E(t)
	const runs = 8
	dirs := copies(h, "testdata/slow", runs)

	results := runAll(h, dirs, noEnv, func(int) []string {
		return []string{"apply", "--store", p.url, "--scope", "pr-7", "--json", "-var", "sleep=3"}
	})
	var ok, held int
	for _, r := range results {
		switch {
		case r.exit == 0:
			ok++
		case r.exit == 3 && r.code(t) == "LOCK_HELD":
			held++
		default:
			t.Errorf("unexpected outcome: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
		}
	}
	if ok != 1 || held != runs-1 {
		t.Fatalf("%d runs succeeded and %d got LOCK_HELD; want 1 and %d", ok, held, runs-1)
	}
	checkApplied(t, p.check, "pr-7", 1)
	receipts, err := p.srv.QueryInt(t.Context(), p.db, "SELECT count(*) FROM sponson.receipts WHERE scope = 'pr-7'")
	if err != nil {
		t.Fatal(err)
	}
	if receipts != 1 {
		t.Errorf("%d runs wrote receipts; only the one holding the lease may", receipts)
	}

	results = runAll(h, dirs, noEnv, func(i int) []string {
		return []string{"apply", "--store", p.url, "--scope", "pr-8", "--json", "--wait", "--wait-timeout", "5m", "-var", "sleep=0", "-var", fmt.Sprintf("input=run-%d", i)}
	})
	runIDs := map[string]bool{}
	for _, r := range results {
		if r.exit != 0 {
			t.Fatalf("a waiting run failed: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
		}
		runIDs[r.envelope(t)["result"].(map[string]any)["runId"].(string)] = true
	}
	if len(runIDs) != runs {
		t.Fatalf("%d distinct runs, want %d", len(runIDs), runs)
	}
	checkApplied(t, p.check, "pr-8", runs)
	if receipts, err = p.srv.QueryInt(t.Context(), p.db, "SELECT count(*) FROM sponson.receipts WHERE scope = 'pr-8'"); err != nil {
		t.Fatal(err)
	}
	if receipts != runs {
		t.Errorf("%d receipts for %d serialized runs", receipts, runs)
	}
}

// TestE2EPostgresFaults: the store fails under running applies.
//
// Terminated backends and a restart: while four applies run, every
// connection of sponson is terminated (pg_terminate_backend) again and
// again, and the server is killed and restarted once. The runs retry
// within their budget and all succeed; each scope ends consistent.
//
// An outage longer than the lease: the server stays down past the TTL of a
// running apply. The run stops itself with LOCK_LOST and nothing it did
// after the outage reaches the store: the scope keeps its checkpoint, and
// the next run takes over.
func TestE2EPostgresFaults(t *testing.T) {
	h := e2e(t)
	p := newPgE2E(t)

	t.Run("TerminateAndRestart", func(t *testing.T) {
		const n = 4
		dirs := copies(h, "testdata/slow", n)
		stop := make(chan struct{})
		var killed atomic.Int64
		var restartErr error
		chaos := make(chan struct{})
		go func() {
			defer close(chaos)
			deadline := time.After(2500 * time.Millisecond)
			for {
				select {
				case <-stop:
					return
				case <-deadline:
					restartErr = p.srv.Restart()
					deadline = nil
				case <-time.After(150 * time.Millisecond):
					if n, err := p.srv.TerminateBackends(context.Background(), "sponson"); err == nil {
						killed.Add(int64(n))
					}
				}
			}
		}()
		results := runAll(h, dirs, noEnv, func(i int) []string {
			return []string{"apply", "--store", p.url, "--scope", fmt.Sprintf("pr-%d", 100+i), "--json", "-var", "sleep=4"}
		})
		close(stop)
		<-chaos
		if restartErr != nil {
			t.Fatalf("restart: %v", restartErr)
		}
		for i, r := range results {
			if r.exit != 0 {
				t.Errorf("pr-%d: exit %d\n%s\n%s", 100+i, r.exit, r.stdout, r.stderr)
			}
		}
		for i := range n {
			checkApplied(t, p.check, fmt.Sprintf("pr-%d", 100+i), 1)
		}
		if killed.Load() == 0 {
			t.Error("no backend was terminated: the test tested nothing")
		}
		t.Logf("%d backends terminated and one restart during %d applies", killed.Load(), n)
	})

	t.Run("OutageLongerThanTheLease", func(t *testing.T) {
		dir := h.workdir("testdata/slow")
		k := store.Key{Stack: e2eStack, Environment: "preview", Scope: "pr-200"}
		victim := h.command(dir, []string{"SPONSON_STORE_BUDGET=20s"}, "apply", "--store", p.url, "--scope", k.Scope, "--json",
			"--lease-ttl", "3s", "-var", "sleep=8", "-var", "input=victim")
		var out, errOut lockedBuffer
		victim.Stdout, victim.Stderr = &out, &errOut
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = victim.Process.Signal(syscall.SIGKILL) }) // fails only once it exited
		waitFor(t, "the victim's apply", func() bool {
			return strings.Contains(errOut.String(), "terraform_data.slow: Provisioning with 'local-exec'")
		})
		checkpoint, err := p.check.LatestReceipt(t.Context(), k)
		if err != nil || checkpoint == nil || checkpoint.Status != receipt.StatusRunning {
			t.Fatalf("the victim's checkpoint: %v, %v", checkpoint, err)
		}
		if err := p.srv.Stop(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // past the 3 s TTL by any clock
		if err := p.srv.Start(); err != nil {
			t.Fatal(err)
		}
		err = victim.Wait()
		r := result{exit: victim.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
		if err == nil || r.exit != 3 || r.code(t) != "LOCK_LOST" {
			t.Fatalf("the run whose lease expired in the outage: exit %d %q, want 3 LOCK_LOST\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
		}
		t.Logf("the run whose lease expired in the outage reported:\n%s", r.stderr)
		latest, err := p.check.LatestReceipt(t.Context(), k)
		if err != nil || latest == nil || latest.RunID != checkpoint.RunID || latest.Status != receipt.StatusRunning {
			t.Errorf("after LOCK_LOST the latest receipt is %+v, %v; want the victim's checkpoint untouched", latest, err)
		}
		// The slow resource finishes after the outage: its state write is
		// refused, whatever the engine wrote before.
		st, err := p.check.ReadState(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Resources []struct{ Name string }
		}
		if len(st) > 0 {
			if err := json.Unmarshal(st, &doc); err != nil {
				t.Fatal(err)
			}
		}
		for _, res := range doc.Resources {
			if res.Name == "slow" {
				t.Errorf("the run that lost its lease wrote its state after the outage:\n%s", st)
			}
		}
		next := h.run(dir, nil, "apply", "--store", p.url, "--scope", k.Scope, "--wait", "--wait-timeout", "1m", "-var", "sleep=0", "-var", "input=next")
		if next.exit != 0 {
			t.Fatalf("the next run: exit %d\n%s\n%s", next.exit, next.stdout, next.stderr)
		}
		rec := checkApplied(t, p.check, k.Scope, 2)
		if rec.LockPreempted == nil || rec.LockPreempted.Holder != checkpoint.RunID {
			t.Errorf("lockPreempted = %+v, want the victim %s", rec.LockPreempted, checkpoint.RunID)
		}
	})
}
