package e2e_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// The stack tests run sponson in checkouts of a repository, as CI jobs do:
// the stack of each root module is derived from the checkout's origin and
// the module's directory in it (SPONSON_STACK is unset for them).

// deriveStack unsets the harness's SPONSON_STACK: the stack is derived.
var deriveStack = "SPONSON_STACK="

// checkout makes a git repository whose origin is origin, with a copy of
// testdata/stacks in each of dirs (relative paths), and returns its root.
func checkout(t *testing.T, origin string, dirs ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, args := range [][]string{
		{"init", "--quiet", "-b", "main", root},
		{"-C", root, "remote", "add", "origin", origin},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	src := readFile(t, "testdata/stacks/main.tf")
	for _, d := range dirs {
		p := filepath.Join(root, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "main.tf"), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// stackStore is one store kind under test: the --store flag, the
// environment of a run against it, and the test's own reader of it.
type stackStore struct {
	name  string
	flag  string
	env   []string
	check func(t *testing.T) store.Store
}

func stackStores(t *testing.T) []stackStore {
	t.Helper()
	shared := filepath.Join(t.TempDir(), "shared-store")
	bare, gitFlag, gitEnv := gitRemote(t)
	out := []stackStore{
		{name: "file", flag: "--store=file://" + shared, check: func(t *testing.T) store.Store {
			s, err := filestore.Open(shared)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{name: "git", flag: gitFlag, env: gitEnv, check: func(t *testing.T) store.Store { return openBare(t, bare) }},
	}
	p := newPgE2E(t)
	out = append(out, stackStore{name: "postgres", flag: "--store=" + p.url, check: func(*testing.T) store.Store { return p.check }})
	return out
}

// stateObjects returns the names of the fixture objects a stored state
// holds, sorted.
func stateObjects(t *testing.T, state []byte) []string {
	t.Helper()
	var doc struct {
		Resources []struct {
			Type      string `json:"type"`
			Instances []struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(state, &doc); err != nil {
		t.Fatalf("state does not parse: %v\n%s", err, state)
	}
	var names []string
	for _, r := range doc.Resources {
		if r.Type != "fixture_object" {
			continue
		}
		for _, in := range r.Instances {
			names = append(names, in.Attributes["name"].(string))
		}
	}
	sort.Strings(names)
	return names
}

// TestE2EStacksOneRepository: two root modules of one repository apply in
// the same pull request at the same time on one store (file, git and
// PostgreSQL): both succeed, neither waits for the other's lease, each
// state holds only its own resources; a resource declared in both is
// refused naming the other stack; destroying one leaves the other byte for
// byte.
func TestE2EStacksOneRepository(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	fixture, _ := fixtureEnv(t)
	for _, ss := range stackStores(t) {
		t.Run(ss.name, func(t *testing.T) {
			root := checkout(t, "git@github.com:acme/infra.git", "stacks/network", "stacks/app")
			network, app := filepath.Join(root, "stacks", "network"), filepath.Join(root, "stacks", "app")
			const networkStack, appStack = "github.com/acme/infra//stacks/network", "github.com/acme/infra//stacks/app"
			env := append(append([]string{deriveStack}, fixture...), ss.env...)
			st := ss.check(t)
			netKey := store.Key{Stack: networkStack, Environment: "preview", Scope: "pr-42"}
			appKey := store.Key{Stack: appStack, Environment: "preview", Scope: "pr-42"}

			// network's apply is held in its gate, lease taken, while app
			// applies the same pull request from start to end.
			gate := filepath.Join(t.TempDir(), "open")
			netCmd := h.command(network, env, "apply", ss.flag, "--pr", "42", "--json",
				"-var", objectsVar("vpc", ss.name+"-vpc"), "-var", "gate="+gate)
			var netOut, netErr bytes.Buffer
			netCmd.Stdout, netCmd.Stderr = &netOut, &netErr
			if err := netCmd.Start(); err != nil {
				t.Fatal(err)
			}
			netDone := make(chan error, 1)
			go func() { netDone <- netCmd.Wait() }()
			waitLeaseHeld(t, st, netKey, netDone, &netErr)

			r := h.run(app, env, "apply", ss.flag, "--pr", "42", "--json", "-var", objectsVar("web", ss.name+"-web"))
			if r.exit != 0 {
				t.Fatalf("apply of app while network's apply runs: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
			}
			if got := r.envelope(t)["result"].(map[string]any)["stack"]; got != appStack {
				t.Errorf("app's envelope names stack %v, want %s", got, appStack)
			}
			if l, err := st.ReadLease(t.Context(), netKey); err != nil || !l.Live(time.Now()) {
				t.Fatalf("network's lease after app's apply = %+v, %v: app should have run while network held it", l, err)
			}
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := <-netDone; err != nil {
				t.Fatalf("apply of network: %v\n%s\n%s", err, netOut.String(), netErr.String())
			}

			for k, want := range map[store.Key][]string{netKey: {ss.name + "-vpc"}, appKey: {ss.name + "-web"}} {
				state, err := st.ReadState(t.Context(), k)
				if err != nil {
					t.Fatal(err)
				}
				if got := stateObjects(t, state); strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("state of %s holds %v, want only %v", k, got, want)
				}
				rec, err := st.LatestReceipt(t.Context(), k)
				if err != nil || rec == nil || rec.Stack != k.Stack || rec.Status != receipt.StatusApplied {
					t.Errorf("receipt of %s = %+v, %v; want applied, naming its stack", k, rec, err)
				}
			}

			// app declaring network's object is refused, naming network.
			r = h.run(app, env, "apply", ss.flag, "--pr", "42", "--json",
				"-var", objectsVar("web", ss.name+"-web", "vpc", ss.name+"-vpc"))
			if r.exit != 1 || r.code(t) != "OWNED_BY_OTHER_SCOPE" {
				t.Fatalf("app declaring network's object: exit %d %q\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
			}
			e := r.envelope(t)["error"].(map[string]any)
			if msg := e["message"].(string); !strings.Contains(msg, "pr-42 of stack "+networkStack+" owns") {
				t.Errorf("the refusal does not name network's stack and scope:\n%s", msg)
			}
			c := e["details"].(map[string]any)["conflicts"].([]any)[0].(map[string]any)
			if c["ownerStack"] != networkStack || c["owner"] != "pr-42" {
				t.Errorf("conflict details %v, want owner pr-42 of %s", c, networkStack)
			}

			// Destroying app leaves network byte for byte.
			netState, err := st.ReadState(t.Context(), netKey)
			if err != nil {
				t.Fatal(err)
			}
			netRec, err := st.LatestReceipt(t.Context(), netKey)
			if err != nil {
				t.Fatal(err)
			}
			if r := h.run(app, env, "destroy", ss.flag, "--pr", "42", "-var", objectsVar("web", ss.name+"-web")); r.exit != 0 {
				t.Fatalf("destroy of app: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
			}
			after, err := st.ReadState(t.Context(), netKey)
			if err != nil || !bytes.Equal(after, netState) {
				t.Errorf("destroying app changed network's state (%v)", err)
			}
			if rec, err := st.LatestReceipt(t.Context(), netKey); err != nil || rec.RunID != netRec.RunID {
				t.Errorf("destroying app changed network's receipt: %+v, %v", rec, err)
			}
			if rec, err := st.LatestReceipt(t.Context(), appKey); err != nil || rec.Status != receipt.StatusDestroyed {
				t.Errorf("app's receipt after its destroy = %+v, %v", rec, err)
			}
			if state, _ := st.ReadState(t.Context(), appKey); len(stateObjects(t, state)) != 0 {
				t.Errorf("app's state after its destroy still holds %v", stateObjects(t, state))
			}

			// status lists both stacks; --stack filters.
			r = h.run(app, env, "status", ss.flag, "--json")
			var rows []map[string]any
			b, _ := json.Marshal(r.envelope(t)["result"].(map[string]any)["scopes"])
			_ = json.Unmarshal(b, &rows)
			stacks := map[any]bool{}
			for _, row := range rows {
				stacks[row["stack"]] = true
			}
			if !stacks[networkStack] || !stacks[appStack] {
				t.Errorf("status lists stacks %v, want both", stacks)
			}
			r = h.run(app, env, "status", ss.flag, "--json", "--stack", networkStack)
			b, _ = json.Marshal(r.envelope(t)["result"].(map[string]any)["scopes"])
			rows = nil
			_ = json.Unmarshal(b, &rows)
			if len(rows) != 1 || rows[0]["stack"] != networkStack {
				t.Errorf("status --stack %s = %v", networkStack, rows)
			}
		})
	}
}

// waitLeaseHeld waits until key's lease is held, or fails when the run
// that should take it ended first.
func waitLeaseHeld(t *testing.T, st store.Store, key store.Key, done chan error, stderr *bytes.Buffer) {
	t.Helper()
	for {
		select {
		case err := <-done:
			t.Fatalf("the run of %s ended before its lease was seen: %v\n%s", key, err, stderr.String())
		default:
		}
		if l, err := st.ReadLease(t.Context(), key); err == nil && l.Holder != "" {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not a deadline
	}
}

// TestE2EStacksTwoRepositories: two checkouts with different origins and a
// root module at the same path, on one PostgreSQL store, are two stacks:
// the same pull request of each has its own state and lease.
func TestE2EStacksTwoRepositories(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	fixture, _ := fixtureEnv(t)
	p := newPgE2E(t)
	env := append([]string{deriveStack}, fixture...)
	repos := map[string]string{
		"github.com/acme/infra//deploy":       checkout(t, "https://x-access-token:SECRET@github.com/acme/infra.git", "deploy"),
		"gitlab.example.com/ops/edge//deploy": checkout(t, "ssh://git@gitlab.example.com:2222/ops/edge.git", "deploy"),
	}
	for name, root := range repos {
		r := h.run(filepath.Join(root, "deploy"), env, "apply", "--store="+p.url, "--pr", "1", "--json", "-var", objectsVar("o", objectName(name)))
		if r.exit != 0 {
			t.Fatalf("apply in %s: exit %d\n%s\n%s", name, r.exit, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, "SECRET") {
			t.Errorf("the origin's credentials reached the output of %s", name)
		}
	}
	sums, err := p.check.List(t.Context(), "preview")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sums {
		if s.Key.Stack == "" {
			continue // the environment's intent lease, shared by every stack
		}
		got = append(got, s.Key.Stack+" "+s.Key.Scope)
		state, err := p.check.ReadState(t.Context(), s.Key)
		if err != nil {
			t.Fatal(err)
		}
		if objs := stateObjects(t, state); len(objs) != 1 || objs[0] != objectName(s.Key.Stack) {
			t.Errorf("state of %s holds %v, want only its own object", s.Key, objs)
		}
	}
	want := []string{"github.com/acme/infra//deploy pr-1", "gitlab.example.com/ops/edge//deploy pr-1"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("scopes of the store = %v, want %v", got, want)
	}
}

// objectName is a fixture object's name for a stack.
func objectName(stack string) string { return strings.NewReplacer("/", "_", ".", "_").Replace(stack) }

// TestE2EStacksSuccessionStaysInStack: a pull request of one root module
// never inherits from the branch scope of another root module of the same
// repository, and a stack declared in sponson_scope (a literal) is used.
func TestE2EStacksSuccessionStaysInStack(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	fixture, _ := fixtureEnv(t)
	root := checkout(t, "git@github.com:acme/infra.git", "network", "app")
	network, app := filepath.Join(root, "network"), filepath.Join(root, "app")
	// network names its stack in HCL.
	cfg := strings.Replace(string(readFile(t, filepath.Join(network, "main.tf"))), `resource "sponson_scope" "this" {`, `resource "sponson_scope" "this" {
  stack = "acme/network"`, 1)
	if err := os.WriteFile(filepath.Join(network, "main.tf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := "--store=file://" + filepath.Join(t.TempDir(), "store")
	env := append([]string{deriveStack}, fixture...)

	r := h.run(network, env, "apply", shared, "--branch", "feat/x", "--json", "-var", objectsVar("n", "succ-net"))
	if r.exit != 0 {
		t.Fatalf("apply network on feat/x: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if got := r.envelope(t)["result"].(map[string]any)["stack"]; got != "acme/network" {
		t.Fatalf("network's stack = %v, want the declared acme/network", got)
	}
	r = h.run(app, env, "apply", shared, "--pr", "5", "--branch", "feat/x", "--json", "-var", objectsVar("a", "succ-app"))
	if r.exit != 0 {
		t.Fatalf("apply app pr-5: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	res := r.envelope(t)["result"].(map[string]any)
	rec := res["receipt"].(map[string]any)
	if res["stack"] != "github.com/acme/infra//app" || rec["inheritedFrom"] != nil {
		t.Errorf("app's pr-5: stack %v, inherited from %v; want its own stack and nothing inherited", res["stack"], rec["inheritedFrom"])
	}
	if strings.Contains(r.stderr, "inherit") {
		t.Errorf("app's pr-5 speaks of inheriting:\n%s", r.stderr)
	}
	// network's own pull request does inherit its branch scope.
	r = h.run(network, env, "apply", shared, "--pr", "5", "--branch", "feat/x", "--json", "-var", objectsVar("n", "succ-net"))
	if r.exit != 0 {
		t.Fatalf("apply network pr-5: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if got := r.envelope(t)["result"].(map[string]any)["receipt"].(map[string]any)["inheritedFrom"]; got != "branch-feat-x" {
		t.Errorf("network's pr-5 inherited from %v, want branch-feat-x", got)
	}
}
