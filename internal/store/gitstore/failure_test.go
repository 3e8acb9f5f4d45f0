package gitstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// hook installs an executable hook in a bare repository.
func hook(t testing.TB, remote, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(remote, "hooks", name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// wantCode fails the test unless err is an *errcode.Error with code, and
// returns a copy of it for checks of its message, hint or details. A copy,
// not the error: a call made for the check alone then does not read as an
// ignored error.
func wantCode(t testing.TB, err error, code errcode.Code) errcode.Error {
	t.Helper()
	var e *errcode.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	return *e
}

// TestHookRejects: a pre-receive hook (or a branch rule) that refuses the
// push gives STORE_REJECTED naming the hook's reason, and the receipt is kept
// in the fallback directory the error names.
func TestHookRejects(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	fallback := filepath.Join(t.TempDir(), "unpushed")
	s := openStore(t, remote, gitstore.WithFallbackDir(fallback))
	ctx := t.Context()
	g := mustAcquire(t, s, pr1, "run-a", time.Minute)

	marker := filepath.Join(t.TempDir(), "closed")
	hook(t, remote, "pre-receive", fmt.Sprintf("if [ -e %q ]; then echo 'policy: sponson-receipts/* is protected' >&2; exit 1; fi\n", marker))
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := storetest.NewReceipt(pr1, "run-a", 2)
	err := s.WriteReceipt(ctx, g.Lease, r)
	e := wantCode(t, err, errcode.StoreRejected)
	kept, _ := e.Details["keptAt"].(string)
	if want := filepath.Join(fallback, "preview", "pr-1", "run-a.json"); kept != want {
		t.Fatalf("keptAt = %q, want %q (error: %v)", kept, want, err)
	}
	if !strings.Contains(e.Message, kept) || !strings.Contains(e.Message, "policy: sponson-receipts/* is protected") {
		t.Errorf("the message names neither the copy nor the hook's reason: %s", e.Message)
	}
	b, rerr := os.ReadFile(kept)
	if rerr != nil || !bytes.Contains(b, []byte(`"runId": "run-a"`)) {
		t.Errorf("the kept copy: %q, %v", b, rerr)
	}
	if err := s.WriteState(ctx, g.Lease, []byte(`{"serial":1}`)); !errcode.Is(err, errcode.StoreRejected) {
		t.Errorf("WriteState under the hook: %v, want STORE_REJECTED", err)
	}

	// The hook lifted, the run goes on under the same lease.
	os.Remove(marker)
	if err := s.WriteReceipt(ctx, g.Lease, r); err != nil {
		t.Fatalf("WriteReceipt after the hook was lifted: %v", err)
	}
}

// TestContendedBudget: a branch that someone else moves on every push is
// retried within the budget and then given up with STORE_CONTENDED, saying
// how long and how often it tried. The budget is measured on a clock that
// moves 100 ms each time the store reads it, so that the first two retries
// always fit in the 400 ms budget and the store always gives up after a few
// more, however long each push takes on a loaded machine (issue 12 item 10).
func TestContendedBudget(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	s := openStore(t, remote, gitstore.WithBudget(400*time.Millisecond))
	gitstore.StepBudgetClock(s, 100*time.Millisecond)
	g := mustAcquire(t, s, pr1, "run-a", time.Minute)
	// A competitor that moves the branch (to an equal tree) just before
	// every push to it lands.
	hook(t, remote, "pre-receive", `
export GIT_AUTHOR_NAME=c GIT_AUTHOR_EMAIL=c@localhost GIT_COMMITTER_NAME=c GIT_COMMITTER_EMAIL=c@localhost
while read old new ref; do
  c=$(env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES git commit-tree -p "$old" -m "competitor $$ $(date +%s%N)" "$old^{tree}")
  env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES git update-ref "$ref" "$c" "$old"
done
`)
	_, err := s.Renew(t.Context(), g.Lease, time.Minute)
	e := wantCode(t, err, errcode.StoreContended)
	for _, k := range []string{"attempts", "elapsedMs", "budgetMs", "branch", "remote"} {
		if _, ok := e.Details[k]; !ok {
			t.Errorf("STORE_CONTENDED lacks detail %q: %+v", k, e.Details)
		}
	}
	// Each retry reads the clock once before its backoff of at most
	// 12.5 ms + 25 ms·2^attempt: retries 1 and 2 fit (100+62, 200+112 ms),
	// so the third attempt is the earliest that can give up; with 100 ms a
	// read, the budget is spent by the fourth.
	if n, _ := e.Details["attempts"].(int); n < 3 || n > 4 {
		t.Errorf("attempts = %v, want 3 or 4", e.Details["attempts"])
	}
}

// TestStaleRefLock: a ref lock file a dead push left on the remote is
// retried within the budget like a race, and then named in STORE_CONTENDED,
// not blamed on other writers; once removed, the write goes through.
func TestStaleRefLock(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	s := openStore(t, remote, gitstore.WithBudget(400*time.Millisecond))
	gitstore.StepBudgetClock(s, 100*time.Millisecond)
	g := mustAcquire(t, s, pr1, "run-a", time.Minute)
	ref := strings.TrimSpace(git(t, remote, "for-each-ref", "--format=%(refname)", "refs/heads/sponson-stacks/"))
	if ref == "" || strings.Contains(ref, "\n") {
		t.Fatalf("the remote's scope branches: %q, want one", ref)
	}
	lock := filepath.Join(remote, ref+".lock")
	if err := os.WriteFile(lock, []byte("0000000000000000000000000000000000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Renew(t.Context(), g.Lease, time.Minute)
	e := wantCode(t, err, errcode.StoreContended)
	if !strings.Contains(e.Message, lock) || strings.Contains(e.Message, "other writers") || !strings.Contains(e.Hint, "remove that file") {
		t.Errorf("STORE_CONTENDED for a held ref lock: %q (hint %q), want it to name %s", e.Message, e.Hint, lock)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(t.Context(), g.Lease, time.Minute); err != nil {
		t.Fatalf("renew after the lock was removed: %v", err)
	}
}

// gitHTTP serves the bare repositories under root over smart HTTP with git
// http-backend. With user set, requests need that user and password (basic
// auth) and may push; without, anyone may read and nobody may push, as with
// a token that lacks contents: write.
func gitHTTP(t testing.TB, root, user, password string) string {
	t.Helper()
	backend := filepath.Join(git(t, "", "--exec-path"), "git-http-backend")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, Stderr: io.Discard}
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
			h.Env = append(h.Env, "REMOTE_USER="+u) // http-backend lets authenticated users push
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestReadOnlyRemote: a remote the runner may read but not write gives
// STORE_PERMISSION with the contents: write hint, at once.
func TestReadOnlyRemote(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	seed := openStore(t, remote)
	g := mustAcquire(t, seed, pr1, "run-0", time.Minute)
	if err := seed.Release(t.Context(), g.Lease); err != nil {
		t.Fatal(err)
	}
	url := gitHTTP(t, filepath.Dir(remote), "", "") + "/origin.git"
	s := openStore(t, url)
	if info, err := s.ReadLease(t.Context(), pr1); err != nil || info.Token != 1 {
		t.Fatalf("ReadLease over HTTP = %+v, %v", info, err)
	}
	start := time.Now()
	_, err := s.Acquire(t.Context(), pr1, "run-a", time.Minute)
	e := wantCode(t, err, errcode.StorePermission)
	if !strings.Contains(e.Hint, "contents: write") {
		t.Errorf("hint %q does not mention contents: write", e.Hint)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a permission failure took %s: it must not be retried", took)
	}
}

// TestPasswordNeverShown: a remote URL with a password works, and the
// password appears in no message, no error, no receipt and nothing on the
// remote.
func TestPasswordNeverShown(t *testing.T) {
	t.Parallel()
	const password = "pa55-W0rd-visible-nowhere"
	remote := newRemote(t)
	base := gitHTTP(t, filepath.Dir(remote), "bot", password)
	good := strings.Replace(base, "http://", "http://bot:"+password+"@", 1) + "/origin.git"
	bad := strings.Replace(base, "http://", "http://bot:"+password+"-wrong@", 1) + "/origin.git"
	ctx := t.Context()

	var texts []string
	s := openStore(t, good)
	texts = append(texts, s.Remote())
	g := mustAcquire(t, s, pr1, "run-a", time.Minute)
	if err := s.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(pr1, "run-a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteState(ctx, g.Lease, []byte(`{"serial":1}`)); err != nil {
		t.Fatal(err)
	}
	sums, err := s.List(ctx, "preview")
	if err != nil || len(sums) != 1 {
		t.Fatalf("List over HTTP = %+v, %v", sums, err)
	}
	// Errors of every kind, on the good URL and the bad one.
	_, err = s.Acquire(ctx, pr1, "run-b", time.Minute)
	texts = append(texts, fmt.Sprint(err))
	hook(t, remote, "pre-receive", "echo refused >&2; exit 1\n")
	err = s.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(pr1, "run-a", 2))
	wantCode(t, err, errcode.StoreRejected)
	texts = append(texts, describe(err))
	os.Remove(filepath.Join(remote, "hooks", "pre-receive"))

	wrong := openStore(t, bad)
	texts = append(texts, wrong.Remote())
	_, err = wrong.Acquire(ctx, store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-2"}, "run-c", time.Minute)
	wantCode(t, err, errcode.StorePermission)
	texts = append(texts, describe(err))
	_, err = wrong.List(ctx, "preview")
	texts = append(texts, describe(err))
	gone := openStore(t, strings.Replace(good, "/origin.git", "/missing.git", 1))
	_, err = gone.ReadLease(ctx, pr1)
	texts = append(texts, describe(err))

	texts = append(texts, git(t, remote, "log", "-p", "--all"))
	for _, text := range texts {
		if strings.Contains(text, password) {
			t.Errorf("the password leaked:\n%s", text)
		}
	}
	if !strings.Contains(texts[0], "bot@127.0.0.1") {
		t.Errorf("Remote() = %q, want the user without the password", texts[0])
	}
}

// describe renders everything an error carries: message, hint, details.
func describe(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%s | %s | %v", e.Error(), e.Hint, e.Details)
	}
	return fmt.Sprint(err)
}

// TestMissingRemote: a remote that does not exist is STORE_UNAVAILABLE at
// once, not after the whole budget.
func TestMissingRemote(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "nowhere.git"))
	start := time.Now()
	_, err := s.ReadLease(t.Context(), pr1)
	wantCode(t, err, errcode.StoreUnavailable)
	_, err = s.Acquire(t.Context(), pr1, "run-a", time.Minute)
	wantCode(t, err, errcode.StoreUnavailable)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
}

// TestStateKey: without a key the store refuses to write state, unless
// plaintext was explicitly allowed; a sealed state needs the key that sealed
// it.
func TestStateKey(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	ctx := t.Context()
	noKey, err := gitstore.Open(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	defer noKey.Close()
	g := mustAcquire(t, noKey, pr1, "run-a", time.Minute)
	e := wantCode(t, noKey.WriteState(ctx, g.Lease, []byte("{}")), errcode.Usage)
	if !strings.Contains(e.Hint, gitstore.EnvStateKey) || !strings.Contains(e.Hint, gitstore.EnvStatePlaintext) {
		t.Errorf("hint %q names neither %s nor %s", e.Hint, gitstore.EnvStateKey, gitstore.EnvStatePlaintext)
	}
	wantCode(t, noKey.Quarantine(ctx, pr1, "run-0", []byte("{}")), errcode.Usage)

	keyed := openStore(t, remote)
	if err := keyed.WriteState(ctx, g.Lease, []byte(`{"serial":1}`)); err != nil {
		t.Fatal(err)
	}
	_, err = noKey.ReadState(ctx, pr1)
	wantCode(t, err, errcode.Usage)
	other := openStore(t, remote, gitstore.WithStateKey(bytes.Repeat([]byte{1}, gitstore.KeySize)))
	_, err = other.ReadState(ctx, pr1)
	wantCode(t, err, errcode.Usage)

	plain, err := gitstore.Open(ctx, remote, gitstore.WithPlaintextState())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.WriteState(ctx, g.Lease, []byte(`{"serial":2}`)); err != nil {
		t.Fatalf("WriteState with plaintext allowed: %v", err)
	}
	ref := "refs/heads/sponson-stacks/preview/acme_2fapp/pr-1"
	if got := string(showFile(t, remote, ref, "terraform.tfstate")); got != `{"serial":2}` {
		t.Errorf("plaintext state on the branch: %q", got)
	}
	if files := strings.Join(branchFiles(t, remote, ref), " "); strings.Contains(files, ".enc") {
		t.Errorf("the sealed state stayed beside the plaintext one: %s", files)
	}
	if got, err := keyed.ReadState(ctx, pr1); err != nil || string(got) != `{"serial":2}` {
		t.Errorf("ReadState of a plaintext state = %q, %v", got, err)
	}

	if _, err := gitstore.Open(ctx, remote, gitstore.WithStateKey([]byte("short"))); !errcode.Is(err, errcode.Usage) {
		t.Errorf("Open with a short key: %v, want USAGE", err)
	}
	if _, err := gitstore.Open(ctx, ""); !errcode.Is(err, errcode.Usage) {
		t.Errorf("Open without a remote: %v, want USAGE", err)
	}
}

// TestListProcesses: listing an environment is one ls-remote and one fetch
// (and reads through the one cat-file process), however many scopes it has;
// a second listing with nothing new fetches nothing.
func TestListProcesses(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	w := openStore(t, remote)
	ctx := t.Context()
	const scopes = 12
	for i := range scopes {
		k := store.Key{Stack: "acme/app", Environment: "preview", Scope: fmt.Sprintf("pr-%d", i)}
		g := mustAcquire(t, w, k, "run-w", time.Minute)
		r := storetest.NewReceipt(k, "run-w", 2)
		if err := w.WriteReceipt(ctx, g.Lease, r); err != nil {
			t.Fatal(err)
		}
	}
	// Names that need encoding, and a branch a human added, in the same
	// environment.
	odd := store.Key{Stack: "acme/app", Environment: "preview", Scope: "A..b"}
	mustAcquire(t, w, odd, "run-w", time.Minute)
	git(t, remote, "update-ref", "refs/heads/sponson-stacks/preview/acme_2fapp/=zz", git(t, remote, "rev-parse", "refs/heads/sponson-stacks/preview/acme_2fapp/pr-1"))

	r := openStore(t, remote)
	before := gitstore.Spawned(r)
	sums, err := r.List(ctx, "preview")
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != scopes+1 {
		t.Fatalf("List = %d scopes, want %d", len(sums), scopes+1)
	}
	if sums[0].Key != odd {
		t.Errorf("first scope %s, want %s (sorted by name)", sums[0].Key, odd)
	}
	owners, err := r.Owners(ctx, "preview", nil)
	if err != nil || len(owners) != 2*scopes {
		t.Fatalf("Owners = %d entries, %v; want %d", len(owners), err, 2*scopes)
	}
	after := gitstore.Spawned(r)
	// One ls-remote per Store checks the layout (sponson-layout/*), then
	// one each for List and Owners.
	if got := after["ls-remote"] - before["ls-remote"]; got != 3 {
		t.Errorf("%d ls-remote for the layout check, List and Owners, want 3", got)
	}
	if got := after["fetch"] - before["fetch"]; got != 1 {
		t.Errorf("%d fetches for List and Owners, want 1 (the second has every tip)", got)
	}
	if got := after["cat-file"]; got != 1 {
		t.Errorf("%d cat-file processes, want 1", got)
	}
	t.Logf("git processes: %v", after)
}

// TestCancelledContext: Acquire refuses a done context; the other calls
// give up on it too, with INTERRUPTED.
func TestCancelledContext(t *testing.T) {
	t.Parallel()
	s := openStore(t, newRemote(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Acquire(ctx, pr1, "run-a", time.Minute)
	wantCode(t, err, errcode.Interrupted)
	_, err = s.ReadLease(ctx, pr1)
	wantCode(t, err, errcode.Interrupted)
}
