package e2e_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
)

// The S3 end-to-end tests run sponson with --store s3://... against a real
// S3-compatible server of their own (versitygw on loopback, gwtest), with
// credentials from the environment as the AWS chain reads them. Every run
// has its own copy of the configuration; only the bucket is shared. The
// tests read the bucket back through s3store.

var s3StateKey = bytes.Repeat([]byte{0x53}, 32)

type s3E2E struct {
	gw    *gwtest.Server
	url   string   // what --store gets
	env   []string // credentials and the state key
	check *s3store.Store
}

func newS3E2E(t *testing.T, prefix string) *s3E2E {
	t.Helper()
	gw := gwtest.Start(t)
	url := gw.StoreURL(prefix)
	check, err := s3store.Open(t.Context(), url, s3store.WithAWSConfig(gw.RootConfig()),
		s3store.WithStateKey(s3StateKey), s3store.WithBudget(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	env := append(gw.RootEnv(), "SPONSON_STATE_KEY="+hex.EncodeToString(s3StateKey))
	return &s3E2E{gw: gw, url: url, env: env, check: check}
}

func (p *s3E2E) envOf(int) []string { return p.env }

// TestE2ES3SixteenScopes: sixteen pull requests apply at once on one
// bucket. All succeed without waiting on each other, and each scope ends
// with its own receipt, sealed state and ownership entries.
func TestE2ES3SixteenScopes(t *testing.T) {
	h := e2e(t)
	p := newS3E2E(t, "team")
	const n = 16
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
		if strings.Contains(r.stdout+r.stderr, p.gw.Secret) {
			t.Errorf("pr-%d printed the secret key", i+1)
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

// TestE2ES3EightContenders: eight runs of one scope at once. Exactly one
// runs; seven exit 3 LOCK_HELD, and only the winner wrote a receipt.
func TestE2ES3EightContenders(t *testing.T) {
	h := e2e(t)
	p := newS3E2E(t, "team")
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

// TestE2ES3StoppedRunLosesItsLease: a run stopped (SIGSTOP) past its TTL is
// taken over by a run that finishes; when the first continues it exits 3
// LOCK_LOST, and its state write is refused: the state and the receipt in
// the bucket stay the second run's, byte for byte.
func TestE2ES3StoppedRunLosesItsLease(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	p := newS3E2E(t, "team")
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
	// The run taking over cannot vouch for the creates the stopped run has
	// in flight: a person says they are gone.
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
	// The stopped run has exited: whatever it wrote, it wrote.
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

// TestE2ES3ServerStopped: the server is killed in the middle of an apply and
// stays down past the store budget. The run fails with a named store error
// (or loses its lease) and writes nothing more; the state the engine could
// not write stays in the configuration directory, said so; after a restart
// nothing stored before is lost, and the next run takes the scope over and
// applies.
func TestE2ES3ServerStopped(t *testing.T) {
	h := e2e(t)
	p := newS3E2E(t, "team")
	dir := h.workdir("testdata/slow")
	k := store.Key{Stack: e2eStack, Environment: "preview", Scope: "pr-20"}
	env := append(append([]string{}, p.env...), "SPONSON_STORE_BUDGET=2s")

	victim := h.command(dir, env, "apply", "--store", p.url, "--scope", k.Scope, "--json", "--lease-ttl", "4s", "-var", "sleep=3", "-var", "input=victim")
	var out, errOut lockedBuffer
	victim.Stdout, victim.Stderr = &out, &errOut
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Signal(syscall.SIGKILL) })
	waitFor(t, "the victim's apply", func() bool {
		return strings.Contains(errOut.String(), "terraform_data.slow: Provisioning with 'local-exec'")
	})
	checkpoint, err := p.check.LatestReceipt(t.Context(), k)
	if err != nil || checkpoint == nil || checkpoint.Status != receipt.StatusRunning {
		t.Fatalf("the victim's checkpoint: %v, %v", checkpoint, err)
	}
	if err := p.gw.Stop(); err != nil {
		t.Fatal(err)
	}
	err = victim.Wait() // the server stays down until the run has ended
	r := result{exit: victim.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
	if err == nil || r.exit == 0 {
		t.Fatalf("the run whose store went away succeeded:\n%s\n%s", r.stdout, r.stderr)
	}
	if c := r.code(t); c != "STORE_UNAVAILABLE" && c != "LOCK_LOST" {
		t.Errorf("the run whose store went away: exit %d %q, want STORE_UNAVAILABLE or LOCK_LOST\n%s\n%s", r.exit, c, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, p.gw.Secret) {
		t.Error("the failed run printed the secret key")
	}
	t.Logf("the run whose store went away reported:\n%s", r.stderr)
	// Nothing is lost: the state the engine could not write is kept (in
	// the configuration directory while the store is down, said so).
	kept, err := os.ReadFile(filepath.Join(dir, "errored.tfstate"))
	if err != nil || !strings.Contains(string(kept), `"victim"`) {
		t.Errorf("the state the engine could not write was not kept: %v\n%s", err, r.stderr)
	}
	if !strings.Contains(r.stderr, "errored.tfstate") || !strings.Contains(r.stderr, "it stays there") {
		t.Errorf("the run did not say where the state it could not write is:\n%s", r.stderr)
	}

	if err := p.gw.Start(); err != nil {
		t.Fatal(err)
	}
	latest, err := p.check.LatestReceipt(t.Context(), k)
	if err != nil || latest == nil || latest.RunID != checkpoint.RunID {
		t.Fatalf("after the outage the latest receipt is %+v, %v; want the victim's checkpoint", latest, err)
	}
	next := h.run(dir, p.env, "apply", "--store", p.url, "--scope", k.Scope, "--json", "--wait", "--wait-timeout", "2m", "-var", "sleep=0", "-var", "input=next")
	grants := 2 // the victim's and the next run's
	if next.exit != 0 && next.code(t) == "INTENT_UNRESOLVED" {
		// What the victim's creates left is known from the state it kept:
		// a person gives their ids, and the next run adopts them.
		grants += 1 + p.resolveFromState(t, h, dir, k, kept)
		next = h.run(dir, p.env, "apply", "--store", p.url, "--scope", k.Scope, "--json", "-var", "sleep=0", "-var", "input=next")
	}
	if next.exit != 0 {
		t.Fatalf("the run after the restart: exit %d\n%s\n%s", next.exit, next.stdout, next.stderr)
	}
	checkApplied(t, p.check, k.Scope, int64(grants))
}

// TestE2ES3Forbidden: credentials the bucket policy allows to read but not
// to write. The run fails with STORE_PERMISSION before the engine changes
// anything, and prints neither key.
func TestE2ES3Forbidden(t *testing.T) {
	h := e2e(t)
	p := newS3E2E(t, "team")
	const user, secret = "reader", "readersecret0123"
	if err := p.gw.AddUser(user, secret); err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["%s"]},"Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`,
		user, gwtest.Bucket, gwtest.Bucket)
	if err := p.gw.SetPolicy(policy); err != nil {
		t.Fatal(err)
	}
	dir := h.workdir("testdata/slow")
	env := append(gwtest.Env(user, secret), "SPONSON_STATE_KEY="+hex.EncodeToString(s3StateKey))
	r := h.run(dir, env, "apply", "--store", p.url, "--scope", "pr-1", "--json", "-var", "sleep=0")
	if r.exit == 0 || r.code(t) != "STORE_PERMISSION" {
		t.Fatalf("apply with read-only credentials: exit %d %q, want STORE_PERMISSION\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, secret) || strings.Contains(r.stdout+r.stderr, p.gw.Secret) {
		t.Error("the refused run printed a secret key")
	}
	if info, err := p.check.ReadLease(t.Context(), store.Key{Stack: e2eStack, Environment: "preview", Scope: "pr-1"}); err != nil || info.Token != 0 {
		t.Errorf("the refused run left a lease: %+v, %v", info, err)
	}
}

// resolveFromState resolves the unresolved entries of k's ledger from a
// state the engine kept: the object's id where the state has it, gone
// where not. It returns how many it resolved (each under its own lease).
func (p *s3E2E) resolveFromState(t *testing.T, h *harness, dir string, k store.Key, state []byte) int {
	t.Helper()
	var st struct {
		Resources []struct {
			Type, Name string
			Instances  []struct {
				Attributes struct {
					ID string `json:"id"`
				} `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, r := range st.Resources {
		if len(r.Instances) == 1 {
			ids[r.Type+"."+r.Name] = r.Instances[0].Attributes.ID
		}
	}
	rec, err := p.check.LatestReceipt(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	resolved := 0
	for _, e := range rec.Ledger {
		if e.CreatedBy != receipt.CreatedByUnresolved {
			continue
		}
		args := []string{"resolve", e.Address, "--store", p.url, "--scope", k.Scope, "--gone"}
		if id := ids[e.Address]; id != "" {
			args = append(args[:len(args)-1], "--id", id)
		}
		if r := h.run(dir, p.env, args...); r.exit != 0 {
			t.Fatalf("sponson %v: exit %d\n%s\n%s", args, r.exit, r.stdout, r.stderr)
		}
		resolved++
	}
	return resolved
}

// TestE2ES3PrefixPolicy (issue 28): two repositories share a bucket, each
// with its own prefix and the bucket policy `sponson grants` prints.
// Each applies in its own prefix; the other's credentials can neither read
// nor write it (STORE_PERMISSION, before any engine change), and the
// victim's lease and receipt are untouched.
func TestE2ES3PrefixPolicy(t *testing.T) {
	h := e2e(t)
	gw := gwtest.Start(t)
	users := map[string]string{"ci-a": "secret-of-a-0123", "ci-b": "secret-of-b-0123"}
	for u, secret := range users {
		if err := gw.AddUser(u, secret); err != nil {
			t.Fatal(err)
		}
	}
	urlA, urlB := gw.StoreURL("repo-a"), gw.StoreURL("repo-b")
	dir := h.workdir("testdata/slow")
	// The policy is what `sponson grants` prints for each repository, its
	// statements merged into the bucket's one policy, as its help says.
	var statements []json.RawMessage
	for user, url := range map[string]string{"ci-a": urlA, "ci-b": urlB} {
		var doc struct{ Statement []json.RawMessage }
		r := h.mustRunEnv(dir, nil, "grants", "--store", url, "--for", user)
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("sponson grants printed no policy: %v\n%s", err, r.stdout)
		}
		statements = append(statements, doc.Statement...)
	}
	policy, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": statements})
	if err := gw.SetPolicy(string(policy)); err != nil {
		t.Fatal(err)
	}
	key := "SPONSON_STATE_KEY=" + hex.EncodeToString(s3StateKey)
	envA, envB := append(gwtest.Env("ci-a", users["ci-a"]), key), append(gwtest.Env("ci-b", users["ci-b"]), key)
	h.mustRunEnv(dir, envA, "apply", "--store", urlA, "--scope", "pr-1", "-var", "sleep=0")
	h.mustRunEnv(dir, envB, "apply", "--store", urlB, "--scope", "pr-1", "-var", "sleep=0")

	root, err := s3store.Open(t.Context(), urlA, s3store.WithAWSConfig(gw.RootConfig()), s3store.WithStateKey(s3StateKey))
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Stack: e2eStack, Environment: "preview", Scope: "pr-1"}
	before, err := root.LatestReceipt(t.Context(), k)
	if err != nil || before == nil {
		t.Fatalf("repository A's receipt: %v, %v", before, err)
	}
	for _, args := range [][]string{
		{"status", "--store", urlA, "--json"},
		{"state", "list", "--store", urlA, "--scope", "pr-1", "--json"},
		{"apply", "--store", urlA, "--scope", "pr-1", "--json", "-var", "sleep=0", "-var", "input=b-was-here"},
		{"destroy", "--store", urlA, "--scope", "pr-1", "--json"},
	} {
		r := h.run(dir, envB, args...)
		if r.exit == 0 || r.code(t) != "STORE_PERMISSION" {
			t.Errorf("repository B's `%s` in A's prefix: exit %d %q, want STORE_PERMISSION\n%s\n%s", strings.Join(args[:2], " "), r.exit, r.code(t), r.stdout, r.stderr)
		}
	}
	after, err := root.LatestReceipt(t.Context(), k)
	if err != nil || after == nil || after.RunID != before.RunID {
		t.Errorf("repository A's latest receipt changed under B's attempts: %+v, %v", after, err)
	}
	if info, err := root.ReadLease(t.Context(), k); err != nil || info.Holder != "" || info.Token != 1 {
		t.Errorf("repository A's lease after B's attempts: %+v, %v; want free with token 1", info, err)
	}
}
