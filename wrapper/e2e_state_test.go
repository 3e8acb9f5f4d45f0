package wrapper_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// TestE2EStateRmThenLedger: `state rm` forgets an instance under the
// scope's lease and the scope gives it up (the ledger no longer lists it,
// another scope may import it); `state mv` renames one and the scope keeps
// owning it under the same identity, so the configuration renamed to match
// plans no change.
func TestE2EStateRmThenLedger(t *testing.T) {
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-1", "-var", objectsVar("a", "st-a", "b", "st-b"))

	list := h.mustRunEnv(dir, env, "state", "list", "--scope", "pr-1").stdout
	for _, want := range []string{`fixture_object.o["a"]`, `fixture_object.o["b"]`, "sponson_scope.this"} {
		if !strings.Contains(list, want+"\n") {
			t.Errorf("state list lacks %s:\n%s", want, list)
		}
	}
	show := h.mustRunEnv(dir, env, "state", "show", "--scope", "pr-1", `fixture_object.o["a"]`).stdout
	if !strings.Contains(show, `name = "st-a"`) {
		t.Errorf("state show:\n%s", show)
	}

	rm := h.mustRunEnv(dir, env, "state", "rm", "--scope", "pr-1", `fixture_object.o["b"]`)
	if !strings.Contains(rm.stderr, `fixture_object.o["b"] (id `) || !strings.Contains(rm.stderr, "is released") {
		t.Errorf("state rm gave the object up silently:\n%s", rm.stderr)
	}
	if rel := latestReceipt(t, dir, "preview", "pr-1").Released; len(rel) != 1 || rel[0].Address != `fixture_object.o["b"]` {
		t.Errorf("the receipt of state rm lists released %+v", rel)
	}
	l := ledgerOf(t, dir, "pr-1")
	if _, ok := l[`fixture_object.o["b"]`]; ok || len(l) != 2 {
		t.Fatalf("ledger after state rm: %v", identities(l))
	}
	if _, ok := stateResources(t, dir, "preview", "pr-1")["fixture_object.o"]; !ok {
		t.Fatal("state rm removed the other instance too")
	}
	if _, err := os.Stat(filepath.Join(objects, "objects", "st-b.json")); err != nil {
		t.Fatalf("state rm deleted the object: %v", err)
	}
	// Given up: another scope may now adopt it (as pr-2's configuration
	// would make it).
	pb := filepath.Join(objects, "objects", "st-b.json")
	if err := os.WriteFile(pb, []byte(strings.Replace(string(readFile(t, pb)), "made by pr-1", "made by pr-2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-2")
	h.mustRunEnv(dir, env, "import", "--scope", "pr-2", `fixture_object.o["b"]`, "st-b", "-var", objectsVar("b", "st-b"))
	if e := ledgerOf(t, dir, "pr-2")[`fixture_object.o["b"]`]; e.CreatedBy != receipt.CreatedByAdopted {
		t.Errorf("pr-2 did not adopt the object pr-1 gave up: %+v", e)
	}

	before := ledgerOf(t, dir, "pr-1")[`fixture_object.o["a"]`]
	h.mustRunEnv(dir, env, "state", "mv", "--scope", "pr-1", `fixture_object.o["a"]`, `fixture_object.o["renamed"]`)
	after, ok := ledgerOf(t, dir, "pr-1")[`fixture_object.o["renamed"]`]
	if !ok || after.Identity != before.Identity || after.CreatedBy != before.CreatedBy || after.ID != before.ID {
		t.Fatalf("ledger entry after state mv %+v, was %+v", after, before)
	}
	r := h.mustRunEnv(dir, env, "plan", "--scope", "pr-1", "--json", "-var", objectsVar("renamed", "st-a"))
	if sum := r.envelope(t)["result"].(map[string]any)["summary"].(map[string]any); sum["add"] != 0.0 || sum["destroy"] != 0.0 {
		t.Errorf("plan after state mv: %v", sum)
	}
	if r := h.run(dir, env, "state", "rm", "--scope", "pr-1", "--json", "fixture_object.nope"); r.exit != 2 || r.code(t) != "USAGE" {
		t.Errorf("state rm of nothing: exit %d %q", r.exit, r.code(t))
	}
}
