package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// fixtureEnv returns the environment that makes the engine find the
// fixture provider, with its objects in a fresh directory.
func fixtureEnv(t *testing.T) (env []string, objects string) {
	t.Helper()
	bin := fixtureprovider.Build(t)
	cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	objects = t.TempDir()
	return []string{"TF_CLI_CONFIG_FILE=" + cfg, "FIXTURE_DIR=" + objects}, objects
}

func objectsVar(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
	}
	return "objects={" + strings.Join(parts, ",") + "}"
}

// snapshot reads every file under dir, for "nothing changed" checks.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestE2EForeignChangeRefused: pr-2 changing an object that main owns is
// refused at plan and at apply, before the engine writes anything; reading
// it with a data source is allowed.
func TestE2EForeignChangeRefused(t *testing.T) {
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	if r := h.run(dir, env, "apply", "--scope", "main", "-var", objectsVar("a", "shared")); r.exit != 0 {
		t.Fatalf("apply main: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	mainReceipt := readFile(t, filepath.Join(scopeDir(dir, "preview", "main"), "latest.json"))
	before := snapshot(t, objects)
	storeBefore := snapshot(t, filepath.Join(dir, ".sponson"))

	for _, cmd := range []string{"plan", "apply"} {
		// Another address, the same object: the identity collides.
		r := h.run(dir, env, cmd, "--scope", "pr-2", "--json", "-var", objectsVar("mine", "shared"))
		if r.exit != 1 || r.code(t) != "OWNED_BY_OTHER_SCOPE" {
			t.Fatalf("%s pr-2 creating main's object: exit %d %q\n%s\n%s", cmd, r.exit, r.code(t), r.stdout, r.stderr)
		}
		e := r.envelope(t)["error"].(map[string]any)
		msg := e["message"].(string)
		for _, want := range []string{`fixture_object.o["mine"]`, "scope main owns", "run run-"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the refusal does not say %q:\n%s", cmd, want, msg)
			}
		}
		conflicts := e["details"].(map[string]any)["conflicts"].([]any)
		if c := conflicts[0].(map[string]any); c["owner"] != "main" || !strings.Contains(c["identity"].(string), `name="shared"`) {
			t.Errorf("%s: conflict details %v", cmd, c)
		}
		if !strings.Contains(e["hint"].(string), "data source") {
			t.Errorf("%s: hint %q", cmd, e["hint"])
		}
		// The apply the engine started while sponson checked the plan
		// (docs/design.md §8) was stopped without a word of its own.
		if out := r.stdout + r.stderr; strings.Contains(out, "state lock") || strings.Contains(out, "sponson: this run did not let the engine apply") {
			t.Errorf("%s: the stopped engine's output reached the run's:\n%s", cmd, out)
		}
	}
	if diff := snapshot(t, objects); fmt.Sprint(diff) != fmt.Sprint(before) {
		t.Errorf("a refused run changed the fixture objects")
	}
	// Nothing of pr-2 in the store: a refused apply writes nothing.
	storeAfter := snapshot(t, filepath.Join(dir, ".sponson"))
	for p := range storeAfter {
		if strings.Contains(p, string(filepath.Separator)+"pr-2"+string(filepath.Separator)) && !strings.HasSuffix(p, "lease.json") && !strings.HasSuffix(p, ".mutex") {
			t.Errorf("the refused apply wrote %s", p)
		}
	}
	if !bytes.Equal(readFile(t, filepath.Join(scopeDir(dir, "preview", "main"), "latest.json")), mainReceipt) || storeBefore[filepath.Join(scopeDir(dir, "preview", "main"), "terraform.tfstate")] != storeAfter[filepath.Join(scopeDir(dir, "preview", "main"), "terraform.tfstate")] {
		t.Error("the refused run changed main's receipt or state")
	}

	// Reading main's object is fine.
	r := h.run(dir, env, "apply", "--scope", "pr-2", "--json", "-var", `read=["shared"]`)
	if r.exit != 0 {
		t.Fatalf("pr-2 reading main's object: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	for _, e := range latestReceipt(t, dir, "preview", "pr-2").Ledger {
		if strings.Contains(e.Identity, "shared") {
			t.Errorf("pr-2's ledger claims main's object: %+v", e)
		}
	}

	// pr-1 with an overlapping configuration is refused; its destroy never
	// touches main's object.
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-1", "-var", objectsVar("own", "pr1-object"))
	if r := h.run(dir, env, "apply", "--scope", "pr-1", "-var", objectsVar("own", "pr1-object", "a", "shared")); r.exit != 1 {
		t.Fatalf("pr-1 overlapping main: exit %d", r.exit)
	}
	h.mustRunEnv(dir, env, "destroy", "--scope", "pr-1", "-var", objectsVar("own", "pr1-object"))
	if _, err := os.Stat(filepath.Join(objects, "objects", "shared.json")); err != nil {
		t.Errorf("destroying pr-1 removed main's object: %v", err)
	}
	if _, err := os.Stat(filepath.Join(objects, "objects", "pr1-object.json")); err == nil {
		t.Error("destroying pr-1 left its own object")
	}
}

// TestE2EIntentOfAKilledRunBlocks: an object pr-1 was creating when it was
// killed is off limits to pr-2: the intent counts as ownership.
func TestE2EIntentOfAKilledRunBlocks(t *testing.T) {
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	victim := h.command(dir, env, "apply", "--scope", "pr-1", "--lease-ttl", "5s", "-var", "slow=30", "-var", objectsVar("x", "contested"))
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pr-1's checkpoint", func() bool {
		b, err := os.ReadFile(filepath.Join(scopeDir(dir, "preview", "pr-1"), "latest.json"))
		return err == nil && bytes.Contains(b, []byte(`"status": "running"`))
	})
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait() // "signal: killed": the kill above

	r := h.run(dir, env, "apply", "--scope", "pr-2", "--json", "-var", objectsVar("y", "contested"))
	if r.exit != 1 || r.code(t) != "OWNED_BY_OTHER_SCOPE" || !strings.Contains(r.stdout, "is creating") {
		t.Fatalf("pr-2 creating what pr-1 intended: exit %d %q\n%s", r.exit, r.code(t), r.stdout)
	}
}

// TestE2ESameObjectAtOnce: two scopes create the same object at the same
// moment, again and again: each time exactly one proceeds and the other is
// refused, and the object is created once.
func TestE2ESameObjectAtOnce(t *testing.T) {
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	for round := range 4 {
		name := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		results := make([]result, 2)
		for i, scope := range []string{"pr-a", "pr-b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = h.run(dir, env, "apply", "--scope", scope, "--json", "-var", objectsVar(fmt.Sprintf("r%d", round), name))
			}()
		}
		wg.Wait()
		var won, refused int
		for _, r := range results {
			switch {
			case r.exit == 0:
				won++
			case r.exit == 1 && r.code(t) == "OWNED_BY_OTHER_SCOPE":
				refused++
			default:
				t.Errorf("round %d: exit %d %q\n%s\n%s", round, r.exit, r.code(t), r.stdout, r.stderr)
			}
		}
		if won != 1 || refused != 1 {
			t.Fatalf("round %d: %d proceeded and %d were refused; want exactly one of each", round, won, refused)
		}
		if _, err := os.Stat(filepath.Join(objects, "objects", name+".json")); err != nil {
			t.Fatalf("round %d: the object was not created: %v", round, err)
		}
		// The loser forgot nothing it owned before and holds no intent.
		for _, scope := range []string{"pr-a", "pr-b"} {
			if _, err := os.Stat(filepath.Join(scopeDir(dir, "preview", scope), "latest.json")); err != nil {
				continue
			}
			for _, e := range latestReceipt(t, dir, "preview", scope).Ledger {
				if e.CreatedBy == receipt.CreatedByIntent {
					t.Errorf("round %d: %s still holds intent %s", round, scope, e.Identity)
				}
			}
		}
	}
}

// TestE2EMovedAndFailedKeepOwnership: a moved block keeps ownership under
// the new address, and a failed apply keeps the ledger.
func TestE2EMovedAndFailedKeepOwnership(t *testing.T) {
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", objectsVar("a", "kept"))
	first := latestReceipt(t, dir, "preview", "main")

	moved := `moved {
  from = fixture_object.o["a"]
  to   = fixture_object.o["b"]
}
`
	if err := os.WriteFile(filepath.Join(dir, "moved.tf"), []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", objectsVar("b", "kept"))
	if !strings.Contains(r.stderr, `fixture_object.o["a"] moved to fixture_object.o["b"]`) {
		t.Errorf("the move was not reported:\n%s", r.stderr)
	}
	after := latestReceipt(t, dir, "preview", "main")
	byAddr := func(rec *receipt.Receipt, addr string) receipt.Entry {
		for _, e := range rec.Ledger {
			if e.Address == addr {
				return e
			}
		}
		t.Fatalf("no ledger entry %s in %+v", addr, rec.Ledger)
		return receipt.Entry{}
	}
	a, b := byAddr(first, `fixture_object.o["a"]`), byAddr(after, `fixture_object.o["b"]`)
	if a.Identity != b.Identity || b.CreatedBy != receipt.CreatedBySponson || a.ID != b.ID {
		t.Errorf("ownership did not follow the move: before %+v, after %+v", a, b)
	}
	if r := h.run(dir, env, "plan", "--scope", "pr-9", "--json", "-var", objectsVar("c", "kept")); r.code(t) != "OWNED_BY_OTHER_SCOPE" {
		t.Errorf("after the move, another scope may claim the object: exit %d %q", r.exit, r.code(t))
	}

	// An object created outside Sponson makes the next create fail: the
	// run fails and the ledger keeps what main owned.
	if err := os.WriteFile(filepath.Join(objects, "objects", "squatted.json"), []byte(`{"id":"x","name":"squatted","value":""}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.run(dir, env, "apply", "--scope", "main", "--json", "-var", objectsVar("b", "kept", "c", "squatted"))
	if r.exit != 1 || r.code(t) != "ENGINE_FAILED" {
		t.Fatalf("apply over an existing object: exit %d %q\n%s", r.exit, r.code(t), r.stderr)
	}
	failed := latestReceipt(t, dir, "preview", "main")
	if failed.Status != receipt.StatusFailed || byAddr(failed, `fixture_object.o["b"]`).Identity != b.Identity {
		t.Errorf("the failed apply lost the ledger: %+v", failed)
	}
}
