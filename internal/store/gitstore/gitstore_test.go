package gitstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/ownership/ownershiptest"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// testKey is the state key of the tests.
var testKey = bytes.Repeat([]byte{0x5a}, gitstore.KeySize)

var pr1 = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}

// TestConformance runs the shared suite on a fake clock. The git store
// decides expiry by its own (client) clock alone, so unlike a store with a
// server clock it can run the suite without sleeping.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		return openStore(t, newRemote(t), gitstore.WithClock(clock.Now))
	})
}

// TestConformanceWallClock runs the suite again on the real clock with short
// TTLs (SPONSON_GITSTORE_TTL, default 10s), as a CI runner's clock would
// drive it. The TTL must outlast the few git pushes between two renewals of
// a subtest on a loaded machine: 3s did not, at a load of 10 on two cores
// (StacksAreIndependent lost its lease before its first renewal); each of
// the suite's eight expiries sleeps 1.25 TTL.
func TestConformanceWallClock(t *testing.T) {
	t.Parallel()
	ttl := 10 * time.Second
	if v := os.Getenv("SPONSON_GITSTORE_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SPONSON_GITSTORE_TTL: %v", err)
		}
		ttl = d
	}
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		clock.UseWallTime(ttl)
		return openStore(t, newRemote(t))
	})
}

// newRemote creates a bare repository to serve as the remote, the way a
// hosting service keeps one: no working tree, no automatic gc on receive.
func newRemote(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "origin.git")
	git(t, "", "init", "--bare", "--quiet", dir)
	git(t, dir, "config", "receive.autogc", "false")
	return dir
}

// git runs a git command for a test (in dir when set) and returns its
// trimmed stdout. Identity comes from the environment, so the tests run on
// machines without a global git identity.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@localhost", "GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@localhost")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, errOut.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// openStore opens a store on remote with the test key; the test closes it.
func openStore(t testing.TB, remote string, opts ...gitstore.Option) *gitstore.Store {
	t.Helper()
	s, err := gitstore.Open(context.Background(), remote, append([]gitstore.Option{gitstore.WithStateKey(testKey)}, opts...)...)
	if err != nil {
		t.Fatalf("Open(%s): %v", remote, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustAcquire(t testing.TB, s store.Store, k store.Key, holder string, ttl time.Duration) store.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), k, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", k, holder, err)
	}
	return g
}

// branchFiles lists the files at the tip of a scope's branch on the remote.
func branchFiles(t testing.TB, remote string, ref string) []string {
	t.Helper()
	out := git(t, remote, "ls-tree", "-r", "--name-only", ref)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func showFile(t testing.TB, remote, ref, path string) []byte {
	t.Helper()
	return []byte(git(t, remote, "show", ref+":"+path))
}

// TestBranchLayout checks what a scope's branch holds after a run: one
// commit per step, all documents in one tree, the README, and state that is
// sealed at rest.
func TestBranchLayout(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	s := openStore(t, remote)
	ctx := t.Context()
	g := mustAcquire(t, s, pr1, "run-a", time.Minute)
	r := storetest.NewReceipt(pr1, "run-a", 2)
	if err := s.WriteReceipt(ctx, g.Lease, r); err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"version":4,"resources":[{"password":"hunter2-very-secret"}]}`)
	if err := s.WriteState(ctx, g.Lease, secret); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRecord(ctx, g.Lease, "scope", []byte(`{"name":"pr-1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(ctx, pr1, "run-0", []byte(`{"serial":1,"password":"hunter2-very-secret"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, g.Lease); err != nil {
		t.Fatal(err)
	}

	ref := "refs/heads/sponson-stacks/preview/acme_2fapp/pr-1"
	want := []string{"README.md", "latest.json", "lease.json", "owners.json", "quarantine/run-0.json", "quarantine/run-0.tfstate.enc", "receipts/run-a.json", "records/scope.json", "terraform.tfstate.enc"}
	if diff := cmp.Diff(want, branchFiles(t, remote, ref)); diff != "" {
		t.Errorf("files of %s (-want +got):\n%s", ref, diff)
	}
	if n := git(t, remote, "rev-list", "--count", ref); n != "6" {
		t.Errorf("%s has %s commits, want 6 (one per mutation)", ref, n)
	}
	if roots := git(t, remote, "rev-list", "--max-parents=0", ref); strings.Contains(roots, "\n") {
		t.Errorf("%s has several root commits:\n%s", ref, roots)
	}
	for _, p := range []string{"terraform.tfstate.enc", "quarantine/run-0.tfstate.enc"} {
		if b := showFile(t, remote, ref, p); bytes.Contains(b, []byte("hunter2")) || !bytes.HasPrefix(b, []byte("sponson-state/1 aes-256-gcm key=")) {
			t.Errorf("%s is not sealed: %q", p, b[:min(len(b), 80)])
		}
	}
	if all := git(t, remote, "log", "-p", "--all"); strings.Contains(all, "hunter2") {
		t.Error("the plaintext state reached the remote's history")
	}
	readme := string(showFile(t, remote, ref, "README.md"))
	for _, w := range []string{"preview", "pr-1", "Deleting this branch is safe only when"} {
		if !strings.Contains(readme, w) {
			t.Errorf("README lacks %q:\n%s", w, readme)
		}
	}
	for _, msg := range strings.Split(git(t, remote, "log", "--format=%B%x00", ref), "\x00") {
		if msg = strings.TrimSpace(msg); msg != "" && !strings.Contains(msg, "Sponson-Nonce: ") {
			t.Errorf("commit without nonce:\n%s", msg)
		}
	}
	var lease store.LeaseInfo
	if err := json.Unmarshal(showFile(t, remote, ref, "lease.json"), &lease); err != nil || lease.Holder != "" || lease.Token != 1 {
		t.Errorf("lease.json = %+v, %v; want released with token 1", lease, err)
	}
	got, err := s.ReadState(ctx, pr1)
	if err != nil || !bytes.Equal(got, secret) {
		t.Errorf("ReadState = %q, %v", got, err)
	}
}

// TestIntentRace runs the intent race rule's race test on two stores of one
// remote (ownershiptest.IntentRace), as two CI jobs would use it.
func TestIntentRace(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	ownershiptest.IntentRace(t, 20, openStore(t, remote), openStore(t, remote))
}
