package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// TestE2EImport: `sponson import` adopts an existing object into the
// scope (the ledger lists it as adopted, under the policy's identity), and
// refuses, before anything is written, an object another scope owns and an
// import that would change the object.
func TestE2EImport(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-1") // the scope's sponson_scope

	// An object made outside sponson, as the configuration would make it.
	// Its ID begins with a dash, as a random_id's does one time in 64: after
	// ADDR it is the ID, as the engine's `import ADDR ID` reads it.
	obj, _ := json.Marshal(map[string]any{"id": "made-by-hand", "name": "-imp-a", "value": "made by pr-1"})
	if err := os.MkdirAll(filepath.Join(objects, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(objects, "objects", "-imp-a.json"), obj, 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustRunEnv(dir, env, "import", "--scope", "pr-1", `fixture_object.o["a"]`, "-imp-a", "-var", objectsVar("a", "-imp-a"), "-input=false")
	e, ok := ledgerOf(t, dir, "pr-1")[`fixture_object.o["a"]`]
	if !ok || e.CreatedBy != receipt.CreatedByAdopted || !strings.HasSuffix(e.Identity, `|fixture_object|name="-imp-a"`) || e.ID != "made-by-hand" {
		t.Fatalf("ledger entry %+v; want adopted under its name", e)
	}
	if rec := latestReceipt(t, dir, "preview", "pr-1"); rec.Command != "import" || rec.Status != receipt.StatusApplied {
		t.Errorf("the import's receipt says %s %s", rec.Command, rec.Status)
	}
	if got := readFile(t, filepath.Join(objects, "objects", "-imp-a.json")); string(got) != string(obj) {
		t.Errorf("the import changed the object: %s", got)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "sponson_import_*")); len(matches) > 0 {
		t.Errorf("the import block was left behind: %v", matches)
	}

	// An object main owns cannot be imported by another scope.
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", objectsVar("m", "owned-by-main"))
	before := snapshot(t, filepath.Join(dir, ".sponson"))
	r := h.run(dir, env, "import", "--scope", "pr-2", "--json", `fixture_object.o["m"]`, "owned-by-main", "-var", objectsVar("m", "owned-by-main"))
	if r.exit != 1 || r.code(t) != "OWNED_BY_OTHER_SCOPE" {
		t.Fatalf("importing main's object into pr-2: exit %d %q\n%s", r.exit, r.code(t), r.stderr)
	}
	after := snapshot(t, filepath.Join(dir, ".sponson"))
	for p, b := range after {
		if before[p] != b && !strings.Contains(p, "lease") {
			t.Errorf("the refused import wrote %s", p)
		}
	}

	// An import whose plan would also change the object is refused.
	obj2, _ := json.Marshal(map[string]any{"id": "by-hand-2", "name": "imp-b", "value": "something else"})
	if err := os.WriteFile(filepath.Join(objects, "objects", "imp-b.json"), obj2, 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.run(dir, env, "import", "--scope", "pr-1", "--json", `fixture_object.o["b"]`, "imp-b", "-var", objectsVar("a", "-imp-a", "b", "imp-b"))
	if r.exit != 2 || r.code(t) != "USAGE" || !strings.Contains(r.stdout, "would also change") {
		t.Fatalf("import with a change: exit %d %q\n%s", r.exit, r.code(t), r.stdout)
	}
	if _, ok := ledgerOf(t, dir, "pr-1")[`fixture_object.o["b"]`]; ok {
		t.Error("the refused import reached the ledger")
	}
}
