package e2e_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// TestE2EEightRunsOneScope: eight applies in one scope at once. Without
// --wait exactly one runs and seven exit 3 LOCK_HELD; with --wait all eight
// run one after another and the store ends consistent.
func TestE2EEightRunsOneScope(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	const runs = 8

	outcomes := h.parallel(runs, func(i int) []string {
		return []string{"apply", "--scope", "pr-7", "--json", "-var", "sleep=3"}
	})
	var ok, held int
	for _, r := range outcomes {
		switch {
		case r.exit == 0:
			ok++
		case r.exit == 3 && r.code(t) == "LOCK_HELD":
			held++
			// The refusal says who holds the lease: the lease record's
			// description of the holder (here only its host: no CI job).
			host, _ := os.Hostname()
			if msg, _ := r.envelope(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "host "+host) || !strings.Contains(msg, "lease until") {
				t.Errorf("LOCK_HELD does not say who holds the lease: %q", msg)
			}
		default:
			t.Errorf("unexpected outcome: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
		}
	}
	if ok != 1 || held != runs-1 {
		t.Fatalf("%d runs succeeded and %d got LOCK_HELD; want 1 and %d", ok, held, runs-1)
	}
	if n := len(receiptFiles(t, dir, "pr-7")); n != 1 {
		t.Errorf("%d receipts were written; only the run holding the lease may write one", n)
	}

	outcomes = h.parallel(runs, func(i int) []string {
		return []string{"apply", "--scope", "pr-8", "--json", "--wait", "--wait-timeout", "5m", "-var", "sleep=1", "-var", fmt.Sprintf("input=run-%d", i)}
	})
	runIDs := map[string]bool{}
	waited := 0
	for _, r := range outcomes {
		if strings.Contains(r.stderr, "waiting for preview/pr-8") && strings.Contains(r.stderr, ": held by run ") && strings.Contains(r.stderr, "— waited ") {
			waited++
		}
		if r.exit != 0 {
			t.Fatalf("a waiting run failed: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
		}
		runIDs[r.envelope(t)["result"].(map[string]any)["runId"].(string)] = true
	}
	if waited == 0 {
		t.Error("no run said whom it was waiting for")
	}
	files := receiptFiles(t, dir, "pr-8")
	if len(files) != runs || len(runIDs) != runs {
		t.Fatalf("%d receipts for %d distinct runs; want %d of each", len(files), len(runIDs), runs)
	}
	lease := readFile(t, filepath.Join(scopeDir(dir, "preview", "pr-8"), "lease.json"))
	if !bytes.Contains(lease, []byte(fmt.Sprintf(`"token": %d`, runs))) || !bytes.Contains(lease, []byte(`"holder": ""`)) {
		t.Errorf("after %d serialized runs the lease is\n%s\nwant token %d and no holder", runs, lease, runs)
	}
	// The last receipt describes the state the last run left.
	latest := latestReceipt(t, dir, "preview", "pr-8")
	res := stateResources(t, dir, "preview", "pr-8")
	if latest.Status != receipt.StatusApplied || len(latest.Ledger) != 2 {
		t.Fatalf("latest receipt: status %q, %d entries", latest.Status, len(latest.Ledger))
	}
	for _, e := range latest.Ledger {
		if res[e.Address]["id"] != e.ID {
			t.Errorf("ledger entry %s has id %s, the state has %v", e.Address, e.ID, res[e.Address]["id"])
		}
	}
}

// TestE2EKilledRunIsTakenOver: a run killed mid-apply (SIGKILL) keeps its
// scope leased until the lease expires; the next run then takes over,
// records lockPreempted, settles the killed run's intents and finishes, and
// destroy leaves nothing.
func TestE2EKilledRunIsTakenOver(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	scopeDir := filepath.Join(scopeDir(dir, "preview", "pr-9"))

	victim := h.command(dir, nil, "apply", "--scope", "pr-9", "--lease-ttl", "3s", "-var", "sleep=30")
	var victimOut bytes.Buffer
	victim.Stdout, victim.Stderr = &victimOut, &victimOut
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed run's checkpoint", func() bool {
		b, err := os.ReadFile(filepath.Join(scopeDir, "latest.json"))
		return err == nil && bytes.Contains(b, []byte(`"status": "running"`))
	})
	// Into the slow provisioner: the fast create is complete, and the
	// checkpoint's journal recorded it.
	waitFor(t, "the checkpoint to record the fast create", func() bool {
		b, err := os.ReadFile(journalFile(scopeDir))
		return err == nil && bytes.Contains(b, []byte(`"address":"terraform_data.fast"`))
	})
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait() // "signal: killed": the kill above
	killed := latestReceipt(t, dir, "preview", "pr-9")
	intents := 0
	for _, e := range killed.Ledger {
		if e.CreatedBy == receipt.CreatedByIntent {
			intents++
		}
	}
	if intents != 2 {
		t.Fatalf("the checkpoint holds %d intents, want 2:\n%+v", intents, killed.Ledger)
	}

	if r := h.run(dir, nil, "apply", "--scope", "pr-9", "--json", "-var", "sleep=0"); r.exit != 3 || r.code(t) != "LOCK_HELD" {
		t.Fatalf("rerun while the killed run's lease is live: exit %d %q, want 3 LOCK_HELD\n%s", r.exit, r.code(t), r.stdout)
	}
	// The next run takes over, adopts the create the killed run's engine
	// reported complete (fast) and settles the one in flight (slow, in its
	// provisioner) as not created: a terraform_data keeps nothing outside
	// the state (issue 25), so it is created again, and no person is asked.
	r := h.run(dir, nil, "apply", "--scope", "pr-9", "--wait", "--wait-timeout", "1m", "--json", "-var", "sleep=0")
	if r.exit != 0 {
		t.Fatalf("rerun after expiry: exit %d %q, want 0\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "took over an expired lease held by "+killed.RunID) {
		t.Errorf("the takeover was not reported:\n%s", r.stderr)
	}
	settledRec := latestReceipt(t, dir, "preview", "pr-9")
	if settledRec.LockPreempted == nil || settledRec.LockPreempted.Holder != killed.RunID {
		t.Errorf("lockPreempted = %+v, want the killed run %s", settledRec.LockPreempted, killed.RunID)
	}
	outcomes := map[string]string{}
	for _, s := range settledRec.Settled {
		if s.FromRun != killed.RunID {
			t.Errorf("settlement %+v names another run", s)
		}
		outcomes[s.Address] = s.Outcome + "/" + s.Reason
	}
	if want := map[string]string{"terraform_data.fast": receipt.SettledAdopted + "/", "terraform_data.slow": receipt.SettledDropped + "/" + receipt.ReasonStateOnly}; !maps.Equal(outcomes, want) {
		t.Errorf("settled intents = %v, want %v", outcomes, want)
	}
	rec := latestReceipt(t, dir, "preview", "pr-9")
	if rec.Status != receipt.StatusApplied || len(rec.Ledger) != 2 {
		t.Fatalf("receipt after takeover: status %q, ledger %+v", rec.Status, rec.Ledger)
	}
	for _, e := range rec.Ledger {
		if e.CreatedBy != receipt.CreatedBySponson {
			t.Errorf("entry %s still %s after the run finished", e.Address, e.CreatedBy)
		}
	}

	h.mustRun(dir, "destroy", "--scope", "pr-9", "-var", "sleep=0")
	if res := stateResources(t, dir, "preview", "pr-9"); len(res) != 0 {
		t.Errorf("destroy left %v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "sponson_backend_override.tf")); err == nil {
		t.Error("the override file of the killed run was never cleaned up")
	}
}

// TestE2EStoppedRunLosesItsLease: a run stopped (SIGSTOP) past its TTL is
// taken over by another run that finishes; when the first continues it
// exits 3 LOCK_LOST, and neither its state nor its receipt ever replaces the
// second run's.
func TestE2EStoppedRunLosesItsLease(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	scopeDir := filepath.Join(scopeDir(dir, "preview", "pr-10"))

	first := h.command(dir, nil, "apply", "--scope", "pr-10", "--json", "--lease-ttl", "2s", "-var", "sleep=4", "-var", "input=first")
	var firstOut, firstErr lockedBuffer
	first.Stdout, first.Stderr = &firstOut, &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// Stop it in the middle of the apply: its engine goes on and will try to
	// write the state through the stopped run's state server.
	stopMidApply(t, first, &firstErr, scopeDir)

	// The run that takes over cannot vouch for the creates the stopped run
	// has in flight: a person says they are gone, then it applies.
	second := h.applyAfterTakeover(dir, nil, []string{"--scope", "pr-10"}, "--wait", "--wait-timeout", "1m", "-var", "sleep=0", "-var", "input=second")
	if second.exit != 0 {
		// The test fails anyway: let the stopped run finish and reap it,
		// whatever it says.
		_ = first.Process.Signal(syscall.SIGCONT)
		_ = first.Wait()
		t.Fatalf("the second run: exit %d\n%s\n%s", second.exit, second.stdout, second.stderr)
	}
	state := readFile(t, filepath.Join(scopeDir, "terraform.tfstate"))
	latest := readFile(t, filepath.Join(scopeDir, "latest.json"))
	journal, _ := os.ReadFile(journalFile(scopeDir))

	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err := first.Wait()
	exit := first.ProcessState.ExitCode()
	r := result{exit: exit, stdout: firstOut.String(), stderr: firstErr.String()}
	if err == nil || exit != 3 || r.code(t) != "LOCK_LOST" {
		t.Fatalf("the stopped run: exit %d %q, want 3 LOCK_LOST\n%s\n%s", exit, r.code(t), r.stdout, r.stderr)
	}
	t.Logf("the stopped run reported:\n%s", r.stderr)
	// Give a run that wrongly kept writing the time to do it, then compare.
	time.Sleep(time.Second)
	if got := readFile(t, filepath.Join(scopeDir, "terraform.tfstate")); !bytes.Equal(got, state) {
		t.Errorf("the stopped run replaced the state of the run that took over")
	}
	if got := readFile(t, filepath.Join(scopeDir, "latest.json")); !bytes.Equal(got, latest) {
		t.Errorf("the stopped run replaced the latest receipt of the run that took over")
	}
	if got, _ := os.ReadFile(journalFile(scopeDir)); !bytes.Equal(got, journal) {
		t.Errorf("the stopped run replaced the journal of the run that took over:\n%s\nwas\n%s", got, journal)
	}
	if res := stateResources(t, dir, "preview", "pr-10"); dynamic(res["terraform_data.slow"]["output"]) != "second" {
		t.Errorf("state holds %v, want the second run's", res["terraform_data.slow"])
	}
	if _, err := os.Stat(filepath.Join(dir, "errored.tfstate")); err == nil {
		t.Error("errored.tfstate was left in the configuration directory")
	}
}

// stopMidApply stops (SIGSTOP) a run of testdata/slow in the middle of its
// apply: while the slow resource's provisioner runs, and once the run's
// checkpoint holds the fast create. A run stopped inside a file-store write
// keeps the scope's mutex, and a run taking over would wait on it until it
// gives up (after a TTL, STORE_CONTENDED, as the filestore tests show);
// stopped here, the run is idle but for its renewals, which take the mutex
// too: stopOutsideMutex stops it where it holds none.
func stopMidApply(t *testing.T, run *exec.Cmd, stderr *lockedBuffer, scopeDir string) {
	t.Helper()
	waitFor(t, "the run's apply", func() bool {
		return strings.Contains(stderr.String(), "terraform_data.slow: Provisioning with 'local-exec'")
	})
	waitFor(t, "the run's checkpoint of the fast create", func() bool {
		b, _ := os.ReadFile(journalFile(scopeDir))
		return bytes.Contains(b, []byte(`"address":"terraform_data.fast"`))
	})
	stopOutsideMutex(t, run.Process)
}

// parallel runs n sponson processes at once in dir and returns their results.
func (h *harness) parallel(n int, args func(i int) []string) []result {
	h.t.Helper()
	out := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = h.run(h.lastDir, nil, args(i)...)
		}()
	}
	wg.Wait()
	return out
}

func receiptFiles(t *testing.T, dir, scope string) []os.DirEntry {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(scopeDir(dir, "preview", scope), "receipts"))
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer is a bytes.Buffer that a running process writes while the
// test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestE2EPlanDuringApply: plan never takes the lease; it reads it and warns
// that an apply is running.
func TestE2EPlanDuringApply(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	leasePath := filepath.Join(scopeDir(dir, "preview", "pr-11"), "lease.json")
	apply := h.command(dir, nil, "apply", "--scope", "pr-11", "-var", "sleep=3")
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = apply.Process.Kill() }) // no-op (os.ErrProcessDone) once it exited
	waitFor(t, "the apply's lease", func() bool {
		b, err := os.ReadFile(leasePath)
		return err == nil && bytes.Contains(b, []byte(`"holder": "run-`))
	})
	before := readFile(t, leasePath)
	r := h.run(dir, nil, "plan", "--scope", "pr-11", "--json", "-var", "sleep=3")
	if r.exit != 0 {
		t.Fatalf("plan during an apply: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	running, _ := r.envelope(t)["result"].(map[string]any)["applyRunning"].(map[string]any)
	if running == nil || !strings.HasPrefix(running["holder"].(string), "run-") {
		t.Errorf("the plan's result does not name the running apply: %s", r.stdout)
	}
	if !strings.Contains(r.stderr, "apply running in this scope since") {
		t.Errorf("no warning about the running apply:\n%s", r.stderr)
	}
	if after := readFile(t, leasePath); !bytes.Equal(after, before) {
		t.Errorf("plan touched the lease:\nbefore %s\nafter %s", before, after)
	}
	if err := apply.Wait(); err != nil {
		t.Fatalf("the apply: %v", err)
	}
}
