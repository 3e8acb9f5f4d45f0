package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EDrift: three scopes, one of whose objects is changed outside the
// engine and one deleted: drift reports the two drifted scopes with what
// changed and the third in sync, exits 1 with DRIFT_DETECTED, and changes
// nothing: not the store, not the objects.
func TestE2EDrift(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	for _, s := range []struct{ scope, name string }{{"main", "M"}, {"pr-1", "P1"}, {"pr-2", "P2"}} {
		h.mustRunEnv(dir, env, "apply", "--scope", s.scope, "-var", objectsVar("a", s.name, "b", s.name+"-b"))
	}
	clean := h.run(dir, env, "drift", "--json")
	if clean.exit != 0 {
		t.Fatalf("drift before any change: exit %d\n%s\n%s", clean.exit, clean.stdout, clean.stderr)
	}

	// Out of band: P1's value is edited, P2-b deleted.
	p1 := filepath.Join(objects, "objects", "P1.json")
	var obj map[string]any
	if err := json.Unmarshal(readFile(t, p1), &obj); err != nil {
		t.Fatal(err)
	}
	obj["value"] = "edited by hand"
	b, _ := json.Marshal(obj)
	if err := os.WriteFile(p1, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(objects, "objects", "P2-b.json")); err != nil {
		t.Fatal(err)
	}
	storeBefore := snapshot(t, filepath.Join(dir, ".sponson"))
	objectsBefore := snapshot(t, objects)
	md := filepath.Join(t.TempDir(), "drift.md")

	r := h.run(dir, env, "drift", "--json", "--summary", md)
	if r.exit != 1 || r.code(t) != "DRIFT_DETECTED" {
		t.Fatalf("drift: exit %d %q\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	res := r.envelope(t)["result"].(map[string]any)
	got := map[string]string{}
	for _, s := range res["scopes"].([]any) {
		s := s.(map[string]any)
		got[s["scope"].(string)] = fmt.Sprint(s["status"], " ", s["changes"])
	}
	want := map[string]string{
		"main": "in-sync []",
		"pr-1": `drifted [map[action:update address:fixture_object.o["a"]]]`,
		"pr-2": `drifted [map[action:delete address:fixture_object.o["b"]]]`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("drift found\n%v\nwant\n%v", got, want)
	}
	if diff := cmpSnapshots(storeBefore, snapshot(t, filepath.Join(dir, ".sponson"))); diff != "" {
		t.Errorf("drift wrote to the store: %s", diff)
	}
	if diff := cmpSnapshots(objectsBefore, snapshot(t, objects)); diff != "" {
		t.Errorf("drift changed objects: %s", diff)
	}
	summary := string(readFile(t, md))
	for _, w := range []string{"1 in sync, 2 drifted, 0 failed", "| `pr-1` | drifted | 1 changed outside the engine |", "Refresh-only plan of pr-1"} {
		if !strings.Contains(summary, w) {
			t.Errorf("the summary lacks %q:\n%s", w, summary)
		}
	}

	// Named scopes only; an unknown scope fails, and alone it is a failed
	// check, not drift.
	r = h.run(dir, env, "drift", "--json", "main", "pr-9")
	if r.exit != 1 || r.code(t) != "DRIFT_CHECK_FAILED" {
		t.Errorf("drift main pr-9: exit %d %q\n%s", r.exit, r.code(t), r.stdout)
	}
}
