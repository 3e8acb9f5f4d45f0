package e2e_test

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
)

// TestE2ESavedPlan: plan -out then apply FILE applies exactly that plan; a
// plan made stale by another run of the scope, or by another scope taking
// an object it touches, is refused before anything is written, naming the
// run and scope; a tampered or truncated file is refused.
func TestE2ESavedPlan(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	plans := t.TempDir()
	planFile := func(name string) string { return filepath.Join(plans, name) }
	objs := objectsVar("a", "P1")

	// plan -out, apply FILE, and nothing left to do.
	r := h.mustRunEnv(dir, env, "plan", "--scope", "pr-1", "-out", planFile("p1"), "-var", objs)
	if !strings.Contains(r.stderr, "saved the plan to") {
		t.Errorf("plan -out does not say where the plan is:\n%s", r.stderr)
	}
	fi, err := os.Stat(planFile("p1"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("plan file mode %v, want 0600", fi.Mode().Perm())
	}
	noServerSecrets(t, planFile("p1"))
	if _, err := os.Stat(filepath.Join(objects, "objects", "P1.json")); err == nil {
		t.Fatal("plan -out created the object")
	}
	ap := h.run(dir, env, "apply", "--scope", "pr-1", "--json", planFile("p1"))
	if ap.exit != 0 {
		t.Fatalf("apply FILE: exit %d\n%s\n%s", ap.exit, ap.stdout, ap.stderr)
	}
	if _, err := os.Stat(filepath.Join(objects, "objects", "P1.json")); err != nil {
		t.Fatalf("apply FILE did not create the object: %v", err)
	}
	after := h.run(dir, env, "plan", "--scope", "pr-1", "--json", "-var", objs)
	if s := after.envelope(t)["result"].(map[string]any)["status"]; s != "unchanged" {
		t.Errorf("plan after apply FILE: status %v, want unchanged", s)
	}

	// Another run changes the scope after the plan: refused, naming it.
	h.mustRunEnv(dir, env, "plan", "--scope", "pr-1", "-out", planFile("p2"), "-var", objectsVar("a", "P1", "b", "P1b"))
	other := h.run(dir, env, "apply", "--scope", "pr-1", "--json", "-var", objectsVar("a", "P1", "c", "P1c"))
	otherRun := other.envelope(t)["result"].(map[string]any)["runId"].(string)
	before := snapshot(t, filepath.Join(dir, ".sponson"))
	stale := h.run(dir, env, "apply", "--scope", "pr-1", "--json", planFile("p2"))
	if stale.exit != 2 || stale.code(t) != "PLAN_STALE" {
		t.Fatalf("stale apply FILE: exit %d %q\n%s", stale.exit, stale.code(t), stale.stdout)
	}
	msg := stale.envelope(t)["error"].(map[string]any)["message"].(string)
	for _, want := range []string{"state of pr-1 changed", otherRun, "scope pr-1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}
	assertUnchanged(t, before, snapshot(t, filepath.Join(dir, ".sponson")))
	if _, err := os.Stat(filepath.Join(objects, "objects", "P1b.json")); err == nil {
		t.Error("the stale plan was applied")
	}

	// pr-2 takes an object the plan of pr-1 touches: refused, naming pr-2.
	h.mustRunEnv(dir, env, "plan", "--scope", "pr-1", "-out", planFile("p3"), "-var", objectsVar("a", "P1", "c", "P1c", "d", "SHARED"))
	taker := h.run(dir, env, "apply", "--scope", "pr-2", "--json", "-var", objectsVar("x", "SHARED"))
	takerRun := taker.envelope(t)["result"].(map[string]any)["runId"].(string)
	before = snapshot(t, filepath.Join(dir, ".sponson"))
	stale = h.run(dir, env, "apply", "--scope", "pr-1", "--json", planFile("p3"))
	if stale.exit != 2 || stale.code(t) != "PLAN_STALE" {
		t.Fatalf("apply FILE after pr-2 took SHARED: exit %d %q\n%s", stale.exit, stale.code(t), stale.stdout)
	}
	msg = stale.envelope(t)["error"].(map[string]any)["message"].(string)
	for _, want := range []string{"scope pr-2", takerRun, `fixture_object.o["d"]`, "came to own"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}
	assertUnchanged(t, before, snapshot(t, filepath.Join(dir, ".sponson")))

	// The plan is for pr-1 only.
	h.mustRunEnv(dir, env, "plan", "--scope", "pr-1", "-out", planFile("p4"), "-var", objectsVar("a", "P1", "c", "P1c", "e", "P1e"))
	if r := h.run(dir, env, "apply", "--scope", "pr-3", "--json", planFile("p4")); r.exit != 2 || r.code(t) != "PLAN_STALE" ||
		!strings.Contains(r.stdout, `made for scope \"pr-1\"`) {
		t.Errorf("apply FILE in another scope: exit %d %q\n%s", r.exit, r.code(t), r.stdout)
	}

	// Tampered and truncated files are refused before anything runs.
	data := readFile(t, planFile("p4"))
	for name, bad := range map[string][]byte{
		"tampered":  bytes.Replace(data, []byte(`"scope":"pr-1"`), []byte(`"scope":"pr-3"`), 1),
		"flipped":   flip(data, len(data)/2),
		"truncated": data[:len(data)*2/3],
	} {
		p := planFile(name)
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		before = snapshot(t, filepath.Join(dir, ".sponson"))
		r := h.run(dir, env, "apply", "--scope", "pr-1", "--json", p)
		if r.exit != 2 || r.code(t) != "PLAN_CORRUPT" {
			t.Errorf("%s plan file: exit %d %q\n%s", name, r.exit, r.code(t), r.stdout)
		}
		assertUnchanged(t, before, snapshot(t, filepath.Join(dir, ".sponson")))
	}
	// The untouched file still applies.
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-1", planFile("p4"))
	if _, err := os.Stat(filepath.Join(objects, "objects", "P1e.json")); err != nil {
		t.Errorf("the reviewed plan was not applied: %v", err)
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x20
	return out
}

// assertUnchanged: nothing but the scope's lease (taken for the check,
// then released) changed in the store.
func assertUnchanged(t *testing.T, before, after map[string]string) {
	t.Helper()
	for _, m := range []map[string]string{before, after} {
		for k := range m {
			if filepath.Base(k) == "lease.json" {
				delete(m, k)
			}
		}
	}
	if diff := cmpSnapshots(before, after); diff != "" {
		t.Errorf("a refused apply wrote to the store: %s", diff)
	}
}

// noServerSecrets checks that the engine's plan inside a saved plan holds
// nothing of the state server: not its loopback address, not its user name
// and password (they reach the engine only through its environment).
func noServerSecrets(t *testing.T, path string) {
	t.Helper()
	sp, err := savedplan.Read(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(sp.Plan), int64(len(sp.Plan)))
	if err != nil {
		t.Fatalf("the engine's plan is not a zip: %v", err)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		for _, bad := range []string{"127.0.0.1", "TF_HTTP_PASSWORD", "SPONSON_STATE_KEY"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("the saved plan's %s holds %q", f.Name, bad)
			}
		}
	}
}

// TestE2ESavedPlanSuccession: a pull request's saved plan includes the
// takeover of its head branch's scope; apply FILE does that takeover and
// applies the plan against the inherited state. When the branch scope runs
// again after the plan, the plan is stale, naming that run.
func TestE2ESavedPlanSuccession(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	h.mustRunEnv(dir, env, "apply", "--branch", "feat/search", "-var", branchObjects)
	p := filepath.Join(t.TempDir(), "pr.tfplan")
	vars := objectsVar("a", "A", "b", "B", "c", "C")

	h.mustRunEnv(dir, env, "plan", "--pr", "42", "--branch", "feat/search", "-out", p, "-var", vars)
	again := h.run(dir, env, "apply", "--branch", "feat/search", "--json", "-var", objectsVar("a", "A", "b", "B", "z", "Z"))
	branchRun := again.envelope(t)["result"].(map[string]any)["runId"].(string)
	stale := h.run(dir, env, "apply", "--pr", "42", "--branch", "feat/search", "--json", p)
	if stale.exit != 2 || stale.code(t) != "PLAN_STALE" || !strings.Contains(stale.stdout, branchRun) {
		t.Fatalf("apply FILE after the branch ran again: exit %d %q\n%s", stale.exit, stale.code(t), stale.stdout)
	}

	h.mustRunEnv(dir, env, "plan", "--pr", "42", "--branch", "feat/search", "-out", p, "-var", objectsVar("a", "A", "b", "B", "z", "Z", "c", "C"))
	r := h.mustRunEnv(dir, env, "apply", "--pr", "42", "--branch", "feat/search", p)
	if !strings.Contains(r.stderr, "inherited 4 resources from branch-feat-search") {
		t.Errorf("apply FILE did not take over the branch:\n%s", r.stderr)
	}
	if got := exists(t, objects, "A", "B", "C", "Z"); !got["A"] || !got["B"] || !got["C"] || !got["Z"] {
		t.Errorf("objects after apply FILE: %v", got)
	}
	if rec := latestReceipt(t, dir, "preview", "pr-42"); rec.InheritedFrom != "branch-feat-search" || len(rec.Ledger) != 5 {
		t.Errorf("pr-42: inheritedFrom %q, %d entries", rec.InheritedFrom, len(rec.Ledger))
	}
}

// TestE2ESavedPlanUnauthenticatedInProduction (issue 28 item 5): without
// SPONSON_PLAN_KEY a saved plan of a protected environment is sealed by a
// checksum only; its plan and its apply say so, and with the key neither
// does.
func TestE2ESavedPlanUnauthenticatedInProduction(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/released")
	plan := filepath.Join(t.TempDir(), "prod.tfplan")
	const warning = "is not authenticated"
	p := h.mustRun(dir, "plan", "--env", "production", "--scope", "main", "-out", plan)
	a := h.mustRun(dir, "apply", "--env", "production", "--scope", "main", "--approved-by", "alice", plan)
	for what, r := range map[string]result{"plan": p, "apply": a} {
		if !strings.Contains(r.stderr, warning) {
			t.Errorf("%s of production without a plan key does not warn:\n%s", what, r.stderr)
		}
	}
	key := []string{"SPONSON_PLAN_KEY=" + strings.Repeat("9", 64)}
	p = h.mustRunEnv(dir, key, "plan", "--env", "production", "--scope", "main", "-out", plan)
	if strings.Contains(p.stderr, warning) {
		t.Errorf("a keyed plan warns:\n%s", p.stderr)
	}
}
