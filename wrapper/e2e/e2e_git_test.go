package e2e_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
)

// End-to-end tests of the git store: sponson runs with --store git+file://
// against a bare repository on disk standing for the CI job's remote, with
// the state key in SPONSON_STATE_KEY.

var gitStateKey = bytes.Repeat([]byte{0x42}, gitstore.KeySize)

// gitRemote creates the bare repository and returns the --store flag and the
// environment of a run against it.
func gitRemote(t *testing.T) (bare string, flag string, env []string) {
	t.Helper()
	bare = filepath.Join(t.TempDir(), "origin.git")
	for _, args := range [][]string{{"init", "--bare", "--quiet", bare}, {"-C", bare, "config", "receive.autogc", "false"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// The remote's receive-pack runs in a session of its own, as a real
	// remote's runs on its server: a test that kills a run's whole process
	// group kills the client, never the remote's half of a push in the
	// middle of its ref update (which would leave the ref's lock file on
	// the remote, a crash of the server rather than of the run).
	return bare, "--store=git+file://" + bare, []string{
		"SPONSON_STATE_KEY=" + hex.EncodeToString(gitStateKey),
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.sponson.receivepack", "GIT_CONFIG_VALUE_0=setsid -w git receive-pack",
	}
}

// gitParallel runs n sponson processes at once in dir with env.
func (h *harness) gitParallel(dir string, env []string, n int, args func(i int) []string) []result {
	h.t.Helper()
	out := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = h.run(dir, env, args(i)...) })
	}
	wg.Wait()
	return out
}

// openBare opens the git store on bare as the tests' own reader.
func openBare(t *testing.T, bare string) *gitstore.Store {
	t.Helper()
	s, err := gitstore.Open(context.Background(), bare, gitstore.WithStateKey(gitStateKey))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestE2EGitSixteenScopes: sixteen pull requests apply at once on one git
// store; all succeed, none waits on another's scope, and no lease is left
// held.
func TestE2EGitSixteenScopes(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	bare, flag, env := gitRemote(t)
	const n = 16

	start := time.Now()
	outcomes := h.gitParallel(dir, env, n, func(i int) []string {
		return []string{"apply", flag, "--pr", fmt.Sprint(i + 1), "--json", "-var", "sleep=1", "-var", fmt.Sprintf("input=pr-%d", i+1)}
	})
	t.Logf("%d applies at once on the git store took %s", n, time.Since(start).Round(time.Millisecond))
	for i, r := range outcomes {
		if r.exit != 0 {
			t.Errorf("apply pr-%d: exit %d\n%s\n%s", i+1, r.exit, r.stdout, r.stderr)
		} else if strings.Contains(r.stderr, "waiting for the lease") {
			t.Errorf("apply pr-%d waited for a lease:\n%s", i+1, r.stderr)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	s := openBare(t, bare)
	sums, err := s.List(t.Context(), "preview")
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != n {
		t.Fatalf("List(preview) = %d scopes, want %d", len(sums), n)
	}
	for _, sum := range sums {
		if sum.Lease.Holder != "" || sum.Lease.Token != 1 {
			t.Errorf("%s: lease %+v left behind, want released with token 1", sum.Key, sum.Lease)
		}
		if sum.Latest == nil || sum.Latest.Status != receipt.StatusApplied || len(sum.Latest.Ledger) != 2 {
			t.Errorf("%s: latest receipt %+v, want applied with 2 entries", sum.Key, sum.Latest)
			continue
		}
		st, err := s.ReadState(t.Context(), sum.Key)
		if err != nil || !slices.Contains(dataInputs(t, st), any(sum.Key.Scope)) {
			t.Errorf("%s: state does not hold the scope's input (%v):\n%s", sum.Key, err, st)
		}
	}
	owners, err := s.Owners(t.Context(), "preview", nil)
	if err != nil || len(owners) != 2*n {
		t.Errorf("Owners(preview) = %d entries, %v; want %d", len(owners), err, 2*n)
	}
	// State at rest is sealed: no blob anywhere in the remote's history is
	// a readable state, while the receipts beside them are (so the check
	// reads what it should).
	states, receipts := remoteBlobs(t, bare)
	if states != 0 {
		t.Errorf("the remote's history holds %d plaintext states", states)
	}
	if receipts < n {
		t.Errorf("the remote's history holds %d readable receipts, want at least %d: the check reads nothing", receipts, n)
	}
}

// remoteBlobs reads every blob of every commit of a bare repository and
// counts those that parse as a Terraform state and as a receipt.
func remoteBlobs(t *testing.T, bare string) (states, receipts int) {
	t.Helper()
	list, err := exec.Command("git", "-C", bare, "rev-list", "--all", "--objects").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		id, _, _ := strings.Cut(line, " ")
		kind, err := exec.Command("git", "-C", bare, "cat-file", "-t", id).Output()
		if err != nil || strings.TrimSpace(string(kind)) != "blob" {
			continue
		}
		b, err := exec.Command("git", "-C", bare, "cat-file", "blob", id).Output()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Lineage   string `json:"lineage"`
			Resources []any  `json:"resources"`
			RunID     string `json:"runId"`
		}
		if json.Unmarshal(b, &doc) != nil {
			continue
		}
		if doc.Lineage != "" || doc.Resources != nil {
			states++
		}
		if doc.RunID != "" {
			receipts++
		}
	}
	return states, receipts
}

// dataInputs returns the input of every terraform_data instance of a state,
// parsed: the engines indent their state differently, so no test compares
// its bytes.
func dataInputs(t *testing.T, state []byte) []any {
	t.Helper()
	var st struct {
		Resources []struct {
			Type      string `json:"type"`
			Instances []struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatalf("state is not JSON: %v\n%s", err, state)
	}
	var out []any
	for _, r := range st.Resources {
		if r.Type != "terraform_data" {
			continue
		}
		for _, in := range r.Instances {
			out = append(out, dynamic(in.Attributes["input"]))
		}
	}
	return out
}

// TestE2EGitEightRunsOneScope: eight applies in one scope at once on the git
// store: exactly one runs, seven exit 3 LOCK_HELD, and only the winner wrote
// a receipt.
func TestE2EGitEightRunsOneScope(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	bare, flag, env := gitRemote(t)
	const runs = 8

	outcomes := h.gitParallel(dir, env, runs, func(i int) []string {
		return []string{"apply", flag, "--scope", "pr-7", "--json", "-var", "sleep=3"}
	})
	var ok, held int
	var winner string
	for _, r := range outcomes {
		switch {
		case r.exit == 0:
			ok++
			winner = r.envelope(t)["result"].(map[string]any)["runId"].(string)
		case r.exit == 3 && r.code(t) == "LOCK_HELD":
			held++
		default:
			t.Errorf("unexpected outcome: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
		}
	}
	if ok != 1 || held != runs-1 {
		t.Fatalf("%d runs succeeded and %d got LOCK_HELD; want 1 and %d", ok, held, runs-1)
	}
	ref := "refs/heads/sponson-stacks/preview/e2e_2fapp/pr-7"
	out, err := exec.Command("git", "-C", bare, "ls-tree", "--name-only", ref+":receipts").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != winner+".json" {
		t.Errorf("receipts on the branch: %v; only the winner %s may write one", got, winner)
	}
	info, err := openBare(t, bare).ReadLease(t.Context(), store.Key{Stack: e2eStack, Environment: "preview", Scope: "pr-7"})
	if err != nil || info.Holder != "" || info.Token != 1 {
		t.Errorf("lease after the runs = %+v, %v; want released with token 1", info, err)
	}
}

// TestE2EGitBranchDeletedMidRun: the scope's branch is deleted while a run
// applies; a second run then applies from scratch and succeeds, and the
// first can write nothing more: it ends with LOCK_LOST. Never do both
// succeed.
func TestE2EGitBranchDeletedMidRun(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	bare, flag, env := gitRemote(t)
	ref := "refs/heads/sponson-stacks/preview/e2e_2fapp/pr-11"

	first := h.command(dir, env, "apply", flag, "--scope", "pr-11", "--json", "-var", "sleep=5", "-var", "input=first")
	var firstOut, firstErr lockedBuffer
	first.Stdout, first.Stderr = &firstOut, &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first run's apply", func() bool {
		return strings.Contains(firstErr.String(), "terraform_data.slow: Provisioning with 'local-exec'")
	})
	if out, err := exec.Command("git", "-C", bare, "update-ref", "-d", ref).CombinedOutput(); err != nil {
		// The test fails anyway: stop the run and reap it, whatever it says.
		_ = first.Process.Kill()
		_ = first.Wait()
		t.Fatalf("deleting %s: %v\n%s", ref, err, out)
	}

	second := h.run(dir, env, "apply", flag, "--scope", "pr-11", "--json", "-var", "sleep=0", "-var", "input=second")
	err := first.Wait()
	r := result{exit: first.ProcessState.ExitCode(), stdout: firstOut.String(), stderr: firstErr.String()}
	if second.exit != 0 {
		t.Fatalf("the run after the deletion: exit %d\n%s\n%s", second.exit, second.stdout, second.stderr)
	}
	if err == nil || r.exit != 3 || r.code(t) != "LOCK_LOST" {
		t.Fatalf("the run whose branch was deleted: exit %d %q, want 3 LOCK_LOST\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	s := openBare(t, bare)
	k := store.Key{Stack: e2eStack, Environment: "preview", Scope: "pr-11"}
	latest, err := s.LatestReceipt(t.Context(), k)
	secondID := second.envelope(t)["result"].(map[string]any)["runId"].(string)
	if err != nil || latest == nil || latest.RunID != secondID || latest.Status != receipt.StatusApplied {
		t.Errorf("latest receipt = %+v, %v; want the second run's %s, applied", latest, err, secondID)
	}
	st, err := s.ReadState(t.Context(), k)
	if inputs := dataInputs(t, st); err != nil || !slices.Contains(inputs, any("second")) || slices.Contains(inputs, any("first")) {
		t.Errorf("state after both runs (%v):\n%s", err, st)
	}
}
