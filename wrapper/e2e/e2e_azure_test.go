package e2e_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore/azuritetest"
)

// The Azure end-to-end tests run sponson with --store azblob://... against
// Azurite on loopback (azuritetest), named by the URL's endpoint, with the
// emulator's key in AZURE_STORAGE_KEY. The tests read the container back
// through azblobstore. What the emulator does not prove is in azuritetest's
// doc.

var azStateKey = bytes.Repeat([]byte{0x41}, 32)

type azE2E struct {
	srv   *azuritetest.Server
	url   string   // what --store gets
	env   []string // the emulator and the state key
	check *azblobstore.Store
}

func newAzE2E(t *testing.T, prefix string) *azE2E {
	t.Helper()
	return azAt(t, azuritetest.Start(t), prefix)
}

// azAt is the store at prefix on a running Azurite: another prefix is
// another store.
func azAt(t *testing.T, srv *azuritetest.Server, prefix string) *azE2E {
	t.Helper()
	url := srv.StoreURL(prefix)
	check, err := azblobstore.Open(t.Context(), url, azblobstore.WithGetenv(srv.Getenv),
		azblobstore.WithStateKey(azStateKey), azblobstore.WithBudget(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	env := append(srv.Env(), "SPONSON_STATE_KEY="+hex.EncodeToString(azStateKey))
	return &azE2E{srv: srv, url: url, env: env, check: check}
}

func (p *azE2E) envOf(int) []string { return p.env }

// TestE2EAzureEightScopes: eight pull requests apply at once on one container.
// All succeed without waiting on each other, and each scope ends with its
// own receipt, sealed state and ownership entries.
func TestE2EAzureEightScopes(t *testing.T) {
	h := e2e(t)
	p := newAzE2E(t, "team")
	const n = 8
	dirs := copies(h, "testdata/slow", n)
	results := runAll(h, dirs, p.envOf, func(i int) []string {
		return []string{"apply", "--store", p.url, "--scope", fmt.Sprintf("pr-%d", i+1), "--json", "-var", "sleep=1"}
	})
	for i, r := range results {
		if r.exit != 0 {
			t.Errorf("pr-%d: exit %d\n%s\n%s", i+1, r.exit, r.stdout, r.stderr)
			continue
		}
		if strings.Contains(r.stderr, "waiting for the lease") {
			t.Errorf("pr-%d waited for a lease:\n%s", i+1, r.stderr)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	sums, err := p.check.List(t.Context(), "preview")
	if err != nil || len(sums) != n {
		t.Fatalf("List(preview) = %d scopes, %v; want %d", len(sums), err, n)
	}
	for i := range n {
		checkApplied(t, p.check, fmt.Sprintf("pr-%d", i+1), 1)
	}
}

// TestE2EAzureEightContenders: eight runs of one scope at once. Exactly one
// runs; seven exit 3 LOCK_HELD, and only the winner wrote a receipt.
func TestE2EAzureEightContenders(t *testing.T) {
	h := e2e(t)
	p := newAzE2E(t, "team")
	const runs = 8
	dirs := copies(h, "testdata/slow", runs)
	results := runAll(h, dirs, p.envOf, func(int) []string {
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
}

// TestE2EAzureStoppedRunLosesItsLease: a run stopped (SIGSTOP) past its TTL
// is taken over by a run that finishes; when the first continues it exits 3
// LOCK_LOST, and its state write is refused: the state and the receipt in
// the bucket stay the second run's, byte for byte.
func TestE2EAzureStoppedRunLosesItsLease(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	p := newAzE2E(t, "team")
	dir := h.workdir("testdata/slow")
	k := store.Key{Stack: e2eStack, Environment: "preview", Scope: "pr-10"}

	first := h.command(dir, p.env, "apply", "--store", p.url, "--scope", k.Scope, "--json", "--lease-ttl", "3s", "-var", "sleep=5", "-var", "input=first")
	var firstOut, firstErr lockedBuffer
	first.Stdout, first.Stderr = &firstOut, &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Process.Signal(syscall.SIGKILL) }) // fails only once it exited
	waitFor(t, "the first run's apply", func() bool {
		return strings.Contains(firstErr.String(), "terraform_data.slow: Provisioning with 'local-exec'")
	})
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	second := h.applyAfterTakeover(dir, p.env, []string{"--store", p.url, "--scope", k.Scope}, "--wait", "--wait-timeout", "2m", "-var", "sleep=0", "-var", "input=second")
	if second.exit != 0 {
		_ = first.Process.Signal(syscall.SIGCONT)
		_ = first.Wait()
		t.Fatalf("the second run: exit %d\n%s\n%s", second.exit, second.stdout, second.stderr)
	}
	state, err := p.check.ReadState(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := p.check.LatestReceipt(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := p.check.ReadLease(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}

	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err = first.Wait()
	r := result{exit: first.ProcessState.ExitCode(), stdout: firstOut.String(), stderr: firstErr.String()}
	if err == nil || r.exit != 3 || r.code(t) != "LOCK_LOST" {
		t.Fatalf("the stopped run: exit %d %q, want 3 LOCK_LOST\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if got, err := p.check.ReadState(t.Context(), k); err != nil || !bytes.Equal(got, state) {
		t.Errorf("the stopped run replaced the state of the run that took over (%v)", err)
	}
	if !strings.Contains(string(state), `"second"`) || strings.Contains(string(state), `"first"`) {
		t.Errorf("the state is not the second run's:\n%s", state)
	}
	if got, err := p.check.LatestReceipt(t.Context(), k); err != nil || got.RunID != latest.RunID || got.Status != latest.Status {
		t.Errorf("the stopped run replaced the latest receipt: %+v, %v", got, err)
	}
	if got, err := p.check.ReadLease(t.Context(), k); err != nil || got != lease {
		t.Errorf("the stopped run changed the lease: %+v, %v; want %+v", got, err, lease)
	}
}

// TestE2EAzureBadKey: a key that does not decode fails the apply with
// STORE_PERMISSION in its own words before any request, with a hint naming
// where credentials are looked up, and no SDK log line.
func TestE2EAzureBadKey(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	env := []string{"AZURE_STORAGE_KEY=not-a-key!", "SPONSON_STATE_KEY=" + hex.EncodeToString(azStateKey)}
	r := h.run(dir, env, "apply", "--store", "azblob://acct/c/team?endpoint=http://127.0.0.1:1/acct", "--scope", "pr-1", "--json", "-var", "sleep=0")
	if r.exit == 0 || r.code(t) != "STORE_PERMISSION" {
		t.Fatalf("apply with a bad key: exit %d %q, want STORE_PERMISSION\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	for _, want := range []string{"no Azure credential", "AZURE_STORAGE_KEY", "DefaultAzureCredential"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(out, "attempts") || strings.Contains(out, "connection refused") {
		t.Errorf("a bad key was reported as a network failure:\n%s\n%s", r.stdout, r.stderr)
	}
	if m := sdkLine.FindString(r.stderr); m != "" {
		t.Errorf("an SDK log line (%q) reached sponson's output:\n%s", m, r.stderr)
	}
}
