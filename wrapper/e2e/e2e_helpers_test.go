// Package e2e_test holds the end-to-end tests and benchmarks of the sponson
// command (docs/design.md §3.1): each runs the built binary as a user would,
// against real engines, stores and providers, from the configurations in
// testdata/. They run only with SPONSON_E2E=1 and SPONSON_TEST_ENGINE set.
package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// End-to-end tests run the built sponson binary against a real engine, like
// a CI job would. They need SPONSON_E2E=1 and SPONSON_TEST_ENGINE (make test
// sets both); without them they skip, as acceptance tests do without TF_ACC.

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error

	failpointsOnce sync.Once
	failpointsBin  string
	failpointsErr  error
)

// e2eFailpoints is e2e with a sponson built with the failpoints tag, which
// kills itself at the step SPONSON_FAILPOINT names.
func e2eFailpoints(t *testing.T) *harness {
	h := newHarness(t)
	failpointsOnce.Do(func() {
		failpointsBin, failpointsErr = buildSponson("-tags", "failpoints")
	})
	if failpointsErr != nil {
		t.Fatalf("building sponson with failpoints: %v", failpointsErr)
	}
	h.bin = failpointsBin
	return h
}

// buildSponson builds the sponson CLI as the release does (.goreleaser.yml:
// no cgo, -trimpath, -s -w), so the tests and the benchmarks run the binary
// users install: a cgo build links the C library dynamically and starts
// slower (docs/design.md §8).
func buildSponson(flags ...string) (string, error) {
	dir, err := os.MkdirTemp("", "sponson-e2e-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "sponson")
	args := append(append([]string{"build", "-trimpath", "-ldflags", "-s -w"}, flags...), "-o", bin, "../cmd/sponson")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
}

// e2e returns a harness, building the sponson binary once per test binary.
func e2e(t *testing.T) *harness { return newHarness(t) }

// e2eBench is e2e for benchmarks.
func e2eBench(b *testing.B) *harness { return newHarness(b) }

func newHarness(t testing.TB) *harness {
	t.Helper()
	if os.Getenv("SPONSON_E2E") != "1" {
		t.Skip("end-to-end test: set SPONSON_E2E=1 and SPONSON_TEST_ENGINE (make test does)")
	}
	engine := os.Getenv("SPONSON_TEST_ENGINE")
	if engine == "" {
		t.Fatal("SPONSON_E2E=1 needs SPONSON_TEST_ENGINE, the path of the tofu binary")
	}
	buildOnce.Do(func() { builtBin, buildErr = buildSponson() })
	if buildErr != nil {
		t.Fatalf("building sponson: %v", buildErr)
	}
	rc := filepath.Join(t.TempDir(), "empty.tfrc")
	if err := os.WriteFile(rc, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, bin: builtBin, env: []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"TMPDIR=" + os.TempDir(),
		"TF_CLI_CONFIG_FILE=" + rc,
		"SPONSON_ENGINE=" + engine,
		// Copies of a configuration stand for checkouts of one root module
		// on several CI runners: one stack. Their temporary directories are
		// in no repository, whose derived names would differ per copy. The
		// stack tests set SPONSON_STACK= to derive names from git.
		"SPONSON_STACK=" + e2eStack,
	}}
}

// e2eStack is the stack of the end-to-end runs unless a test names another.
const e2eStack = "e2e/app"

// scopeDir is the directory of a scope of e2eStack in the embedded file
// store of the configuration in dir.
func scopeDir(dir, env, scope string) string {
	return filepath.Join(dir, ".sponson", "@stacks", env, store.StackSegment(e2eStack), scope)
}

type harness struct {
	t       testing.TB
	bin     string
	lastDir string   // the directory workdir made last
	env     []string // a clean environment: no CI variables of the machine leak in

	mu     sync.Mutex
	guards map[*exec.Cmd]*guard // of the commands started, for their hang guards
}

// workdir copies the *.tf files of a configuration directory into a fresh
// directory, so every test starts with an empty store.
func (h *harness) workdir(src string) string {
	h.t.Helper()
	dst := h.t.TempDir()
	h.lastDir = dst
	entries, err := os.ReadDir(src)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tf") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	return dst
}

type result struct {
	exit   int
	stdout string
	stderr string
}

// envelope decodes stdout as the one JSON document of --json.
func (r result) envelope(t *testing.T) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var env map[string]any
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", r.stdout)
	}
	return env
}

func (r result) code(t *testing.T) string {
	t.Helper()
	e, _ := r.envelope(t)["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// run runs sponson in dir with extra environment entries.
func (h *harness) run(dir string, extraEnv []string, args ...string) result {
	h.t.Helper()
	cmd := h.command(dir, extraEnv, args...)
	stdout, stderr, err := h.runGuarded(cmd)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("running sponson: %v", err)
	}
	return result{exit: code, stdout: stdout, stderr: stderr}
}

// command returns a sponson command in dir with extra environment entries,
// under the hang guard (h.guarded).
func (h *harness) command(dir string, extraEnv []string, args ...string) *exec.Cmd {
	return h.guarded(dir, append(append([]string{}, h.env...), extraEnv...), h.bin, args...)
}

// mustRun runs sponson and fails the test unless it exits 0.
func (h *harness) mustRun(dir string, args ...string) result {
	h.t.Helper()
	r := h.run(dir, nil, args...)
	if r.exit != 0 {
		h.t.Fatalf("sponson %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.exit, r.stdout, r.stderr)
	}
	return r
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// latestReceipt reads a scope's latest receipt of the file store in dir/.sponson
// as every run reads it (store.Latest: a checkpoint with its journal).
func latestReceipt(t *testing.T, dir, env, scope string) *receipt.Receipt {
	t.Helper()
	s, err := filestore.Open(filepath.Join(dir, ".sponson"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.Latest(context.Background(), s, store.Key{Stack: e2eStack, Environment: env, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if r == nil {
		t.Fatalf("%s/%s has no receipt", env, scope)
	}
	return r
}

// journalFile is where the file store keeps the journal of a scope's
// checkpoint (store.JournalRecord).
func journalFile(scopeDir string) string {
	return filepath.Join(scopeDir, "records", store.JournalRecord+".json")
}

// stateResources returns the managed resource addresses of a scope's state
// and the value of one attribute for each.
func stateResources(t *testing.T, dir, env, scope string) map[string]map[string]any {
	t.Helper()
	return parseStateResources(t, readFile(t, filepath.Join(scopeDir(dir, env, scope), "terraform.tfstate")))
}

// parseStateResources is stateResources of a state document.
func parseStateResources(t *testing.T, state []byte) map[string]map[string]any {
	t.Helper()
	var st struct {
		Resources []struct {
			Mode, Type, Name string
			Instances        []struct {
				Attributes map[string]any `json:"attributes"`
			}
		}
	}
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, r := range st.Resources {
		if r.Mode == "managed" && len(r.Instances) > 0 {
			out[r.Type+"."+r.Name] = r.Instances[0].Attributes
		}
	}
	return out
}

// dynamic unwraps a value of a dynamically typed attribute (terraform_data's
// input and output), which the state stores as {"value": ..., "type": ...}.
func dynamic(v any) any {
	if m, ok := v.(map[string]any); ok {
		if _, typed := m["type"]; typed {
			return m["value"]
		}
	}
	return v
}

// mustRunEnv is mustRun with extra environment entries.
func (h *harness) mustRunEnv(dir string, env []string, args ...string) result {
	h.t.Helper()
	r := h.run(dir, env, args...)
	if r.exit != 0 {
		h.t.Fatalf("sponson %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.exit, r.stdout, r.stderr)
	}
	return r
}

// parallelEnv runs n sponson processes at once in dir with extra
// environment entries.
func (h *harness) parallelEnv(dir string, n int, env []string, args func(i int) []string) []result {
	h.t.Helper()
	out := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = h.run(dir, env, args(i)...)
		}()
	}
	wg.Wait()
	return out
}

// appliedStore is what checkApplied reads of a shared store (PostgreSQL,
// S3): only the parts a successful apply writes.
type appliedStore interface {
	store.Leases
	store.Receipts
	store.States
	store.Index
}

// checkApplied checks what a successful apply of testdata/slow left in s
// for scope: a free lease with the given token, an applied receipt whose
// ledger entries are sponson's creations and in the state, and the scope's
// part of the ownership index, one entry per ledger entry.
func checkApplied(t *testing.T, s appliedStore, scope string, token int64) *receipt.Receipt {
	t.Helper()
	ctx := t.Context()
	k := store.Key{Stack: e2eStack, Environment: "preview", Scope: scope}
	info, err := s.ReadLease(ctx, k)
	if err != nil || info.Holder != "" || info.Token != token {
		t.Errorf("%s: lease %+v, %v; want free with token %d", scope, info, err, token)
	}
	r, err := s.LatestReceipt(ctx, k)
	if err != nil || r == nil {
		t.Fatalf("%s: latest receipt %v, %v", scope, r, err)
	}
	if r.Status != receipt.StatusApplied || len(r.Ledger) != 2 {
		t.Errorf("%s: receipt status %q with %d ledger entries, want applied with 2", scope, r.Status, len(r.Ledger))
	}
	st, err := s.ReadState(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Ledger {
		if e.CreatedBy != receipt.CreatedBySponson {
			t.Errorf("%s: entry %s is %s after the run", scope, e.Address, e.CreatedBy)
		}
		if !strings.Contains(string(st), e.ID) {
			t.Errorf("%s: ledger entry %s (%s) is not in the state", scope, e.Address, e.ID)
		}
	}
	owners, err := s.Owners(ctx, "preview", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range owners {
		if o.Scope == scope {
			n++
		}
	}
	if n != len(r.Ledger) {
		t.Errorf("%s: %d entries in the ownership index, want the ledger's %d", scope, n, len(r.Ledger))
	}
	return r
}
