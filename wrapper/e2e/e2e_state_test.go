package e2e_test

import (
	"encoding/json"
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
	t.Parallel()
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

// TestE2EStatePush: `state push` replaces the scope's state under its lease
// and the ledger follows, as an edit outside a run (scopeedit): an instance
// the pushed state lacks is released, the others stay owned as they were.
// A state of another lineage, an older serial, or objects another scope
// owns are refused before anything is written.
func TestE2EStatePush(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-1", "-var", objectsVar("a", "push-a", "b", "push-b"))
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-2", "-var", objectsVar("c", "push-c"))
	before := ledgerOf(t, dir, "pr-1")

	pulled := []byte(h.mustRunEnv(dir, env, "state", "pull", "--scope", "pr-1").stdout)
	var doc map[string]any
	if err := json.Unmarshal(pulled, &doc); err != nil {
		t.Fatalf("state pull: %v\n%s", err, pulled)
	}
	serial := doc["serial"].(float64)
	for _, r := range doc["resources"].([]any) {
		res := r.(map[string]any)
		if res["type"] != "fixture_object" {
			continue
		}
		var keep []any
		for _, i := range res["instances"].([]any) {
			if i.(map[string]any)["index_key"] != "b" {
				keep = append(keep, i)
			}
		}
		res["instances"] = keep
	}
	edited := filepath.Join(t.TempDir(), "edited.tfstate")
	if b, err := json.Marshal(doc); err != nil || os.WriteFile(edited, b, 0o600) != nil {
		t.Fatalf("writing the edited state: %v", err)
	}
	old := filepath.Join(t.TempDir(), "old.tfstate")
	if err := os.WriteFile(old, pulled, 0o600); err != nil {
		t.Fatal(err)
	}

	push := h.mustRunEnv(dir, env, "state", "push", "--scope", "pr-1", edited)
	if !strings.Contains(push.stderr, `fixture_object.o["b"] (id `) || !strings.Contains(push.stderr, "is released") {
		t.Errorf("state push gave the object up silently:\n%s", push.stderr)
	}
	rec := latestReceipt(t, dir, "preview", "pr-1")
	if rec.Command != "state push" || len(rec.Released) != 1 || rec.Released[0].Address != `fixture_object.o["b"]` {
		t.Errorf("the receipt of state push: command %q, released %+v", rec.Command, rec.Released)
	}
	after := ledgerOf(t, dir, "pr-1")
	if _, ok := after[`fixture_object.o["b"]`]; ok || len(after) != len(before)-1 {
		t.Fatalf("ledger after state push: %v, was %v", identities(after), identities(before))
	}
	if a := after[`fixture_object.o["a"]`]; a.Identity != before[`fixture_object.o["a"]`].Identity || a.CreatedBy != before[`fixture_object.o["a"]`].CreatedBy {
		t.Errorf("o[\"a\"] after state push %+v, was %+v", a, before[`fixture_object.o["a"]`])
	}
	var now map[string]any
	if err := json.Unmarshal([]byte(h.mustRunEnv(dir, env, "state", "pull", "--scope", "pr-1").stdout), &now); err != nil || now["serial"].(float64) <= serial {
		t.Errorf("the pushed state has serial %v (%v), want more than %v", now["serial"], err, serial)
	}
	if _, err := os.Stat(filepath.Join(objects, "objects", "push-b.json")); err != nil {
		t.Fatalf("state push deleted the object: %v", err)
	}

	// Refused, writing nothing: the state as it was before (an older
	// serial), another scope's state (another lineage), and another scope's
	// objects pushed into a scope without a state.
	if r := h.run(dir, env, "state", "push", "--scope", "pr-1", "--json", old); r.exit != 2 || r.code(t) != "USAGE" || !strings.Contains(r.stdout+r.stderr, "older than") {
		t.Errorf("state push of an older serial: exit %d %q\n%s%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	theirs := filepath.Join(t.TempDir(), "pr-2.tfstate")
	if err := os.WriteFile(theirs, []byte(h.mustRunEnv(dir, env, "state", "pull", "--scope", "pr-2").stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run(dir, env, "state", "push", "--scope", "pr-1", "--json", theirs); r.exit != 2 || r.code(t) != "USAGE" || !strings.Contains(r.stdout+r.stderr, "lineage") {
		t.Errorf("state push of another lineage: exit %d %q\n%s%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if r := h.run(dir, env, "state", "push", "--scope", "pr-3", "--json", theirs); r.code(t) != "OWNED_BY_OTHER_SCOPE" || !strings.Contains(r.stdout+r.stderr, "pr-2") {
		t.Errorf("state push of pr-2's objects into pr-3: exit %d %q\n%s%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if got := latestReceipt(t, dir, "preview", "pr-1"); got.RunID != rec.RunID {
		t.Errorf("a refused push wrote receipt %s", got.RunID)
	}
	if _, err := os.Stat(filepath.Join(scopeDir(dir, "preview", "pr-3"), "terraform.tfstate")); !os.IsNotExist(err) {
		t.Errorf("a refused push wrote pr-3's state: %v", err)
	}
}
