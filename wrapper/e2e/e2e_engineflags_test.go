package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// End-to-end tests of the engine's own flags, spelled as the engine spells
// them, against the real engine.

// ledgerOf returns a scope's latest ledger by address.
func ledgerOf(t *testing.T, dir, scope string) map[string]receipt.Entry {
	t.Helper()
	out := map[string]receipt.Entry{}
	for _, e := range latestReceipt(t, dir, "preview", scope).Ledger {
		if _, dup := out[e.Address]; dup {
			t.Fatalf("ledger of %s lists %s twice", scope, e.Address)
		}
		out[e.Address] = e
	}
	return out
}

// identities returns address -> identity of a ledger, with the provider
// source part replaced by "P", since it names the engine's registry host.
func identities(l map[string]receipt.Entry) map[string]string {
	out := map[string]string{}
	for a, e := range l {
		id := strings.TrimPrefix(e.Identity, e.Provider)
		if strings.HasPrefix(a, "sponson_scope.") {
			id = "scope" // identified by its random id
		}
		out[a] = "P" + id + " " + e.CreatedBy
	}
	return out
}

func isOpenTofu() bool {
	return strings.Contains(filepath.Base(os.Getenv("SPONSON_TEST_ENGINE")), "tofu")
}

// testEngineName is the engine's name as receipts and summaries give it.
func testEngineName() string {
	if isOpenTofu() {
		return "opentofu"
	}
	return "terraform"
}

// needsEngineBackend skips a test that uses one of the engine's own
// remote-state backends the HashiCorp Terraform test build of `make tools`
// leaves out (README: they are nested Go modules the module zip lacks).
func needsEngineBackend(t *testing.T, name string) {
	t.Helper()
	if !isOpenTofu() {
		t.Skipf("the Terraform test build of make tools has no %q backend (see README); this test runs on OpenTofu", name)
	}
}

// TestE2ETargetThenFullApply: a targeted apply records exactly what the
// scope then owns, under the identities of its policy even when the target
// leaves sponson_scope out of the plan, and drops nothing it did not target;
// the full apply after it adds the rest and keeps every earlier entry as it
// was.
func TestE2ETargetThenFullApply(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	vars := []string{"-var", objectsVar("a", "tgt-a", "b", "tgt-b"), "-var", `entries={x={list="l1",entry="x"},y={list="l1",entry="y"}}`}

	// 1. One object (and the sponson_scope it depends on), in the engine's
	// spelling of a CI line.
	h.mustRunEnv(dir, env, append([]string{"apply", "--scope", "pr-1", "-auto-approve", "-input=false", "-target", `fixture_object.o["a"]`}, vars...)...)
	want := map[string]string{
		"sponson_scope.this":    "Pscope created",
		`fixture_object.o["a"]`: `P|fixture_object|name="tgt-a" created`,
	}
	if diff := cmp.Diff(want, identities(ledgerOf(t, dir, "pr-1"))); diff != "" {
		t.Fatalf("ledger after -target (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(objects, "objects", "tgt-b.json")); err == nil {
		t.Fatal("the targeted apply created an untargeted object")
	}

	// 2. A target that does not depend on sponson_scope: the plan leaves it
	// out, yet the entry gets the policy's identity, and nothing
	// untargeted leaves the ledger.
	h.mustRunEnv(dir, env, append([]string{"apply", "--scope", "pr-1", "-target=fixture_list_entry.e[\"x\"]"}, vars...)...)
	want[`fixture_list_entry.e["x"]`] = `P|fixture_list_entry|list="l1",entry="x" created`
	step2 := ledgerOf(t, dir, "pr-1")
	if diff := cmp.Diff(want, identities(step2)); diff != "" {
		t.Fatalf("ledger after the second -target (-want +got):\n%s", diff)
	}

	// 3. The full apply adds the rest; earlier entries stay as they were.
	h.mustRunEnv(dir, env, append([]string{"apply", "--scope", "pr-1"}, vars...)...)
	want[`fixture_object.o["b"]`] = `P|fixture_object|name="tgt-b" created`
	want[`fixture_list_entry.e["y"]`] = `P|fixture_list_entry|list="l1",entry="y" created`
	full := ledgerOf(t, dir, "pr-1")
	if diff := cmp.Diff(want, identities(full)); diff != "" {
		t.Fatalf("ledger after the full apply (-want +got):\n%s", diff)
	}
	for a, e := range step2 {
		if diff := cmp.Diff(e, full[a]); diff != "" {
			t.Errorf("%s changed in the ledger (-was +now):\n%s", a, diff)
		}
	}
	if len(stateResources(t, dir, "preview", "pr-1")) != 3 { // scope, o, e (by type.name)
		t.Errorf("state resources %v", stateResources(t, dir, "preview", "pr-1"))
	}

	// 4. A targeted destroy leaves the scope owning the rest.
	h.mustRunEnv(dir, env, append([]string{"destroy", "--scope", "pr-1", "-auto-approve", "-target", `fixture_object.o["b"]`}, vars...)...)
	delete(want, `fixture_object.o["b"]`)
	if diff := cmp.Diff(want, identities(ledgerOf(t, dir, "pr-1"))); diff != "" {
		t.Fatalf("ledger after a targeted destroy (-want +got):\n%s", diff)
	}
	if rec := latestReceipt(t, dir, "preview", "pr-1"); rec.Status == receipt.StatusDestroyed {
		t.Errorf("a targeted destroy recorded the scope as destroyed")
	}
}

// TestE2EReplaceOne: -replace recreates exactly one resource; the ledger
// keeps it as created by sponson under its new id.
func TestE2EReplaceOne(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	vars := []string{"-var", objectsVar("a", "rep-a", "b", "rep-b")}
	h.mustRunEnv(dir, env, append([]string{"apply", "--scope", "pr-2"}, vars...)...)
	before := ledgerOf(t, dir, "pr-2")

	r := h.mustRunEnv(dir, env, append([]string{"apply", "--scope", "pr-2", "--json", "-replace", `fixture_object.o["a"]`}, vars...)...)
	sum := r.envelope(t)["result"].(map[string]any)["summary"].(map[string]any)
	if sum["add"] != 1.0 || sum["destroy"] != 1.0 || sum["change"] != 0.0 {
		t.Errorf("summary %v; want 1 to add, 1 to destroy", sum)
	}
	after := ledgerOf(t, dir, "pr-2")
	a, b := after[`fixture_object.o["a"]`], after[`fixture_object.o["b"]`]
	if a.ID == before[`fixture_object.o["a"]`].ID || a.CreatedBy != receipt.CreatedBySponson || a.Identity != before[`fixture_object.o["a"]`].Identity {
		t.Errorf("replaced entry %+v, was %+v: want a new id, the same identity, created by sponson", a, before[`fixture_object.o["a"]`])
	}
	if diff := cmp.Diff(before[`fixture_object.o["b"]`], b); diff != "" {
		t.Errorf("untouched entry changed (-was +now):\n%s", diff)
	}
}

// TestE2ERefreshOnlyAfterOutOfBandChange: after an object is deleted and
// another changed outside sponson, -refresh-only brings state and ledger in
// line with what exists, and creates nothing.
func TestE2ERefreshOnlyAfterOutOfBandChange(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	vars := []string{"-var", objectsVar("a", "ref-a", "b", "ref-b")}
	h.mustRunEnv(dir, env, append([]string{"apply", "--scope", "pr-3"}, vars...)...)

	if err := os.Remove(filepath.Join(objects, "objects", "ref-b.json")); err != nil {
		t.Fatal(err)
	}
	pa := filepath.Join(objects, "objects", "ref-a.json")
	var obj map[string]any
	if err := json.Unmarshal(readFile(t, pa), &obj); err != nil {
		t.Fatal(err)
	}
	obj["value"] = "changed by hand"
	b, _ := json.Marshal(obj)
	if err := os.WriteFile(pa, b, 0o644); err != nil {
		t.Fatal(err)
	}

	h.mustRunEnv(dir, env, append([]string{"apply", "--scope", "pr-3", "-refresh-only", "-auto-approve"}, vars...)...)
	l := ledgerOf(t, dir, "pr-3")
	if _, ok := l[`fixture_object.o["b"]`]; ok || len(l) != 2 {
		t.Errorf("ledger %v; want the scope and o[\"a\"] only", identities(l))
	}
	if _, err := os.Stat(filepath.Join(objects, "objects", "ref-b.json")); err == nil {
		t.Error("-refresh-only recreated the deleted object")
	}
	if got := stateResources(t, dir, "preview", "pr-3")["fixture_object.o"]["value"]; got != "changed by hand" {
		t.Errorf("state value %v; want the out-of-band value", got)
	}
}

// TestE2EVarOrderAndPassThrough: -var and -var-file reach the engine in
// their command-line order (the later wins), with TF_CLI_ARGS_apply read
// first as the engine would; the engine's cosmetic flags are accepted, and
// TF_LOG with TF_LOG_PATH reaches the engine.
func TestE2EVarOrderAndPassThrough(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	file := filepath.Join(t.TempDir(), "o.tfvars")
	if err := os.WriteFile(file, []byte(`objects = { a = "from-file" }`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "engine.log")
	env = append(env, "TF_CLI_ARGS_apply=-var 'objects={a=\"from-env\"}'", "TF_LOG=DEBUG", "TF_LOG_PATH="+logFile)
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-4", "-var", objectsVar("a", "from-flag"), "-var-file", file,
		"-parallelism=2", "-compact-warnings", "-no-color", "-lock-timeout=30s", "-refresh=true", "-lock=true")
	for name, want := range map[string]bool{"from-env": false, "from-flag": false, "from-file": true} {
		if _, err := os.Stat(filepath.Join(objects, "objects", name+".json")); (err == nil) != want {
			t.Errorf("object %s exists: %v; want %v (the last -var-file wins)", name, err == nil, want)
		}
	}
	if b, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(b), "[DEBUG]") {
		t.Errorf("TF_LOG_PATH %s: %v, %d bytes; want the engine's debug log", logFile, err, len(b))
	}
}

// TestE2EExclude: -exclude works on OpenTofu and is refused on Terraform,
// which has no such flag.
func TestE2EExclude(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	args := []string{"apply", "--scope", "pr-5", "--json", "-var", objectsVar("a", "exc-a", "b", "exc-b"), "-exclude", `fixture_object.o["b"]`}
	r := h.run(dir, env, args...)
	if !isOpenTofu() {
		if r.exit != 2 || r.code(t) != "USAGE" || !strings.Contains(r.stdout, "OpenTofu") {
			t.Fatalf("-exclude on Terraform: exit %d %q\n%s", r.exit, r.code(t), r.stdout)
		}
		return
	}
	if r.exit != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	for name, want := range map[string]bool{"exc-a": true, "exc-b": false} {
		if _, err := os.Stat(filepath.Join(objects, "objects", name+".json")); (err == nil) != want {
			t.Errorf("object %s exists: %v; want %v", name, err == nil, want)
		}
	}
	if _, ok := ledgerOf(t, dir, "pr-5")[`fixture_object.o["a"]`]; !ok {
		t.Error("the ledger lacks the object the excluded apply created")
	}
}

// TestE2EDetailedExitcode: plan -detailed-exitcode exits 2 with changes, 0
// without, and 1 when refused, as the engine's.
func TestE2EDetailedExitcode(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	vars := []string{"-var", objectsVar("a", "dx-a")}
	if r := h.run(dir, env, append([]string{"plan", "--scope", "pr-6", "-detailed-exitcode"}, vars...)...); r.exit != 2 {
		t.Fatalf("plan with changes: exit %d\n%s", r.exit, r.stderr)
	}
	h.mustRunEnv(dir, env, append([]string{"apply", "--scope", "pr-6"}, vars...)...)
	if r := h.run(dir, env, append([]string{"plan", "--scope", "pr-6", "-detailed-exitcode"}, vars...)...); r.exit != 0 {
		t.Fatalf("plan without changes: exit %d\n%s", r.exit, r.stderr)
	}
	// Another scope planning to change pr-6's object is refused: 1, not 2.
	r := h.run(dir, env, append([]string{"plan", "--scope", "pr-7", "-detailed-exitcode", "--json"}, vars...)...)
	if r.exit != 1 || r.code(t) != "OWNED_BY_OTHER_SCOPE" {
		t.Fatalf("refused plan: exit %d %q", r.exit, r.code(t))
	}
}
