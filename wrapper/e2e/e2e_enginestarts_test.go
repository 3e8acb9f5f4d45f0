package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// tracingEngine writes a script that logs each engine start's command to a
// file, then runs the real engine; it is named as the engine is, so sponson
// recognises which one it is.
func tracingEngine(t *testing.T) (engine, log string) {
	t.Helper()
	target := os.Getenv("SPONSON_TEST_ENGINE")
	dir := t.TempDir()
	log = filepath.Join(dir, "starts.log")
	engine = filepath.Join(dir, filepath.Base(target))
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %q\nexec %q \"$@\"\n", log, target)
	if err := os.WriteFile(engine, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return engine, log
}

// starts returns the engine commands logged since the last call, and
// empties the log. The apply starts while `show -json` runs (docs/design.md
// §8, the early apply): which of the two the log names first is a
// race, so starts gives an apply logged just before a show after it, in the
// order of the run's phases.
func starts(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(b))
	for i := 0; i+1 < len(got); i++ {
		if got[i] == "apply" && got[i+1] == "show" {
			got[i], got[i+1] = got[i+1], got[i]
		}
	}
	return got
}

// TestE2EEngineStarts: the engine starts only when needed (docs/design.md
// §8). A second apply of an unchanged configuration neither reads the
// engine's version (it is cached per binary) nor runs init: it starts the
// plan alone (the fast path, TestE2ENoChangeFastPath), an apply with changes
// plan, show and apply; and a plan
// borrows the scope's initialised data directory; a
// changed configuration (here a new module call) is initialised again, and
// the module it installs is really used.
func TestE2EEngineStarts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	engine, log := tracingEngine(t)
	env := []string{"SPONSON_ENGINE=" + engine}
	dir := h.workdir("testdata/count")
	apply := func() []string {
		t.Helper()
		if r := h.run(dir, env, "apply", "--scope", "starts", "-var", "n=3"); r.exit != 0 {
			t.Fatalf("apply: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
		}
		return starts(t, log)
	}
	if got := apply(); !slices.Contains(got, "init") {
		t.Fatalf("the first apply did not initialise: %v", got)
	}
	if got := apply(); !slices.Equal(got, []string{"plan"}) {
		t.Fatalf("a no-change apply of a scope initialised for this configuration started %v, want plan only", got)
	}
	if r := h.run(dir, env, "apply", "--scope", "starts", "-var", "n=4"); r.exit != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	if got := starts(t, log); !slices.Equal(got, []string{"plan", "show", "apply"}) {
		t.Fatalf("an apply with changes started %v, want plan, show and apply only", got)
	}
	planN := func(n string) []string {
		t.Helper()
		if r := h.run(dir, env, "plan", "--scope", "starts", "-var", "n="+n); r.exit != 0 {
			t.Fatalf("plan: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
		}
		return starts(t, log)
	}
	plan := func() []string { t.Helper(); return planN("3") }
	if got := plan(); !slices.Equal(got, []string{"plan", "show"}) {
		t.Fatalf("a plan with changes of a scope initialised for this configuration started %v, want plan and show only", got)
	}
	// A plan that changes nothing and saves nothing ends with the engine's
	// plan, as a no-change apply does (unchanged.go).
	if got := planN("4"); !slices.Equal(got, []string{"plan"}) {
		t.Fatalf("a no-change plan of a scope initialised for this configuration started %v, want plan only", got)
	}

	mod := filepath.Join(dir, "m")
	if err := os.Mkdir(mod, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "main.tf"), []byte(`resource "terraform_data" "m" {}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m.tf"), []byte(`module "m" { source = "./m" }`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := plan(); !slices.Contains(got, "init") {
		t.Fatalf("a plan of a configuration with a new module call did not initialise: %v", got)
	}
	if got := apply(); !slices.Contains(got, "init") {
		t.Fatalf("a configuration with a new module call was not initialised again: %v", got)
	}
	if got := apply(); slices.Contains(got, "init") {
		t.Fatalf("the configuration with the module was initialised again unchanged: %v", got)
	}
}

// TestE2ENoChangeFastPath: an apply whose plan changes nothing starts the
// engine once, for the plan (no `show -json`, no apply), and writes the
// receipt the full path writes: unchanged, with the same ledger. Everything
// else takes the full path, plan JSON and checks included: one change, a
// root output changing alone, a drift applied with -refresh-only, an
// import block, a moved block and a removed block; after each, the next
// unchanged apply is the fast one again.
func TestE2ENoChangeFastPath(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	engine, log := tracingEngine(t)
	env = append(env, "SPONSON_ENGINE="+engine)
	dir := h.workdir("testdata/fixture")
	apply := func(args ...string) []string {
		t.Helper()
		if r := h.run(dir, env, append([]string{"apply", "--scope", "fast"}, args...)...); r.exit != 0 {
			t.Fatalf("apply %v: exit %d\n%s%s", args, r.exit, r.stdout, r.stderr)
		}
		return starts(t, log)
	}
	full := []string{"plan", "show", "apply"}
	// A new configuration file is initialised first: init stamps hash the
	// root module.
	isFull := func(got []string) bool {
		return slices.Equal(got, full) || slices.Equal(got, append([]string{"init"}, full...))
	}
	unchanged := func(what string, args ...string) {
		t.Helper()
		before := latestReceipt(t, dir, "preview", "fast")
		if got := apply(args...); !slices.Equal(got, []string{"plan"}) && !slices.Equal(got, []string{"init", "plan"}) {
			t.Fatalf("a no-change apply after %s started %v, want plan only (after init, for a changed configuration)", what, got)
		}
		rec := latestReceipt(t, dir, "preview", "fast")
		if rec.RunID == before.RunID || rec.Status != receipt.StatusUnchanged || len(rec.Changes) != 0 {
			t.Fatalf("the no-change apply after %s wrote run %s %s with changes %v", what, rec.RunID, rec.Status, rec.Changes)
		}
		if diff := cmp.Diff(before.Ledger, rec.Ledger); diff != "" {
			t.Fatalf("the no-change apply after %s changed the ledger (-before +after):\n%s", what, diff)
		}
		if rec.Engine.Name != engineName() || rec.Commit != before.Commit {
			t.Errorf("the no-change receipt names engine %v, commit %q (before: %q)", rec.Engine, rec.Commit, before.Commit)
		}
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ab := objectsVar("a", "fast-a", "b", "fast-b")

	if got := apply("-var", objectsVar("a", "fast-a")); !slices.Contains(got, "init") || !slices.Contains(got, "apply") {
		t.Fatalf("the first apply started %v", got)
	}
	unchanged("the first apply", "-var", objectsVar("a", "fast-a"))

	// One change.
	if got := apply("-var", ab); !isFull(got) {
		t.Fatalf("an apply with one change started %v, want %v", got, full)
	}
	if rec := latestReceipt(t, dir, "preview", "fast"); rec.Status != receipt.StatusApplied || len(rec.Ledger) != 3 {
		t.Fatalf("the apply with one change wrote %s with %d entries", rec.Status, len(rec.Ledger))
	}
	unchanged("one change", "-var", ab)

	// A root output that changes alone is a change: the state records it.
	write("extra.tf", `output "extra" { value = "fast" }`+"\n")
	if got := apply("-var", ab); !isFull(got) {
		t.Fatalf("an apply of a new output started %v, want %v", got, full)
	}
	if !strings.Contains(string(readFile(t, filepath.Join(scopeDir(dir, "preview", "fast"), "terraform.tfstate"))), `"extra"`) {
		t.Fatal("the new output is not in the state")
	}
	unchanged("an output change", "-var", ab)

	// A drift, applied with -refresh-only: the state takes the object's
	// new value.
	p := filepath.Join(objects, "objects", "fast-a.json")
	var obj map[string]any
	if err := json.Unmarshal(readFile(t, p), &obj); err != nil {
		t.Fatal(err)
	}
	value := obj["value"]
	obj["value"] = "edited by hand"
	b, _ := json.Marshal(obj)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := apply("-var", ab, "-refresh-only"); !isFull(got) {
		t.Fatalf("a refresh-only apply of a drift started %v, want %v", got, full)
	}
	if !strings.Contains(string(readFile(t, filepath.Join(scopeDir(dir, "preview", "fast"), "terraform.tfstate"))), "edited by hand") {
		t.Fatal("the refresh-only apply did not record the drift in the state")
	}
	unchanged("a refresh-only apply", "-var", ab, "-refresh-only")
	if got := apply("-var", ab); !isFull(got) {
		t.Fatalf("the apply that puts the drifted object back started %v, want %v", got, full)
	}
	unchanged("putting a drift back", "-var", ab)

	// An import block of an object that matches the configuration: the
	// plan changes nothing in the object, and still imports it.
	b, _ = json.Marshal(map[string]any{"id": "fast-c", "name": "fast-c", "value": value})
	if err := os.WriteFile(filepath.Join(objects, "objects", "fast-c.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	abc := objectsVar("a", "fast-a", "b", "fast-b", "c", "fast-c")
	write("import.tf", "import {\n  to = fixture_object.o[\"c\"]\n  id = \"fast-c\"\n}\n")
	if got := apply("-var", abc); !isFull(got) {
		t.Fatalf("an apply of an import block started %v, want %v", got, full)
	}
	rec := latestReceipt(t, dir, "preview", "fast")
	if !slices.ContainsFunc(rec.Ledger, func(e receipt.Entry) bool {
		return e.Address == `fixture_object.o["c"]` && e.CreatedBy == receipt.CreatedByAdopted
	}) {
		t.Fatalf("the import is not in the ledger as adopted: %+v", rec.Ledger)
	}
	if err := os.Remove(filepath.Join(dir, "import.tf")); err != nil {
		t.Fatal(err)
	}
	unchanged("an import", "-var", abc)

	// A moved block.
	moved := objectsVar("a", "fast-a", "b", "fast-b", "cc", "fast-c")
	write("moved.tf", "moved {\n  from = fixture_object.o[\"c\"]\n  to   = fixture_object.o[\"cc\"]\n}\n")
	if got := apply("-var", moved); !isFull(got) {
		t.Fatalf("an apply of a moved block started %v, want %v", got, full)
	}
	if rec := latestReceipt(t, dir, "preview", "fast"); !slices.ContainsFunc(rec.Ledger, func(e receipt.Entry) bool { return e.Address == `fixture_object.o["cc"]` }) {
		t.Fatalf("the moved object is not in the ledger at its new address: %+v", rec.Ledger)
	}
	if err := os.Remove(filepath.Join(dir, "moved.tf")); err != nil {
		t.Fatal(err)
	}
	unchanged("a move", "-var", moved)

	// A removed block: the object leaves the state, and is released.
	write("gone.tf", `resource "terraform_data" "gone" { input = "fast" }`+"\n")
	if got := apply("-var", moved); !isFull(got) {
		t.Fatalf("an apply of a new resource started %v, want %v", got, full)
	}
	write("gone.tf", "removed {\n  from = terraform_data.gone\n  lifecycle {\n    destroy = false\n  }\n}\n")
	if got := apply("-var", moved); !isFull(got) {
		t.Fatalf("an apply of a removed block started %v, want %v", got, full)
	}
	if rec := latestReceipt(t, dir, "preview", "fast"); len(rec.Released) != 1 || rec.Released[0].Address != "terraform_data.gone" {
		t.Fatalf("the removed object is not released: %+v", rec.Released)
	}
	if err := os.Remove(filepath.Join(dir, "gone.tf")); err != nil {
		t.Fatal(err)
	}
	unchanged("a removed block", "-var", moved)
}

// TestE2ENewScopeTakesOverInit: the first apply of a new scope of a
// configuration another scope has initialised starts no init (the new
// scope's data directory takes over the sibling's, installed providers
// included), and so does the first plan of a new scope; the taken-over
// directory is the new scope's own: a changed configuration initialises
// each scope again, and both go on working.
func TestE2ENewScopeTakesOverInit(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	engine, log := tracingEngine(t)
	env = append(env, "SPONSON_ENGINE="+engine)
	dir := h.workdir("testdata/fixture")
	run := func(args ...string) []string {
		t.Helper()
		if r := h.run(dir, env, args...); r.exit != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, r.exit, r.stdout, r.stderr)
		}
		return starts(t, log)
	}
	if got := run("apply", "--scope", "one", "-var", objectsVar("a", "one-a")); !slices.Contains(got, "init") {
		t.Fatalf("the first scope's first apply did not initialise: %v", got)
	}
	if got := run("apply", "--scope", "two", "-var", objectsVar("a", "two-a")); !slices.Equal(got, []string{"plan", "show", "apply"}) {
		t.Fatalf("the first apply of a new scope started %v, want plan, show and apply", got)
	}
	if _, err := os.Stat(filepath.Join(objects, "objects", "two-a.json")); err != nil {
		t.Fatalf("the new scope's apply did not create its object: %v", err)
	}
	// What init installed (OpenTofu installs the fixture provider's
	// mirrored placeholder; Terraform 1.16 installs nothing for a provider
	// under dev_overrides, so its data directory has no providers at all)
	// is the new scope's own copy, never a link to the sibling's.
	dataDir := func(scope string) string { return filepath.Join(dir, ".terraform", "sponson", "preview", scope) }
	if _, err := os.Lstat(filepath.Join(dataDir("one"), "providers")); err == nil {
		if fi, err := os.Lstat(filepath.Join(dataDir("two"), "providers")); err != nil || !fi.IsDir() {
			t.Fatalf("the new scope's data directory has no providers directory of its own: %v", err)
		}
	} else if _, err := os.Lstat(filepath.Join(dataDir("two"), "providers")); err == nil {
		t.Fatal("the new scope's data directory has a providers directory its sibling's lacks")
	}
	if got := run("plan", "--scope", "three", "-var", objectsVar("a", "three-a")); !slices.Equal(got, []string{"plan", "show"}) {
		t.Fatalf("the first plan of a new scope started %v, want plan and show", got)
	}

	if err := os.WriteFile(filepath.Join(dir, "extra.tf"), []byte(`resource "terraform_data" "extra" {}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, scope := range []string{"two", "one"} {
		if got := run("apply", "--scope", scope, "-var", objectsVar("a", scope+"-a")); !slices.Equal(got, []string{"init", "plan", "show", "apply"}) {
			t.Fatalf("scope %s's apply of a changed configuration started %v, want init, plan, show and apply", scope, got)
		}
	}
	if got := run("apply", "--scope", "two", "-var", objectsVar("a", "two-a")); !slices.Equal(got, []string{"plan"}) {
		t.Fatalf("a no-change apply of the new scope started %v, want plan", got)
	}
}

// TestE2ENoChangeReadingOtherStacks: a no-change apply whose engine read
// another stack's outputs (sponson_outputs) takes the full path, plan JSON
// included: its receipt records the read, with the serial it read.
func TestE2ENoChangeReadingOtherStacks(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	root := repoWith(t, multiStack)
	engine, log := tracingEngine(t)
	env := []string{deriveStack, "SPONSON_ENGINE=" + engine}
	storeFlag := "--store=file://" + filepath.Join(t.TempDir(), "store")
	apply := func(stack string) []string {
		t.Helper()
		h.mustRunEnv(root, env, "apply", "--chdir", stack, "--branch", "main", storeFlag)
		return starts(t, log)
	}
	apply("stacks/network")
	apply("stacks/app")
	if got := apply("stacks/docs"); !slices.Contains(got, "apply") {
		t.Fatalf("the first apply of docs started %v", got)
	}
	if got := apply("stacks/docs"); !slices.Equal(got, []string{"plan"}) {
		t.Fatalf("a no-change apply of a stack that reads none started %v, want plan only", got)
	}
	if got := apply("stacks/app"); !slices.Equal(got, []string{"plan", "show"}) {
		t.Fatalf("a no-change apply of a stack that reads another started %v, want plan and show", got)
	}
	rec := h.mustRunEnv(root, env, "receipt", "--json", storeFlag, "--chdir", "stacks/app", "--branch", "main").envelope(t)["result"].(map[string]any)
	reads, _ := rec["reads"].([]any)
	if rec["status"] != "unchanged" || len(reads) != 1 {
		t.Fatalf("app's no-change receipt: status %v, reads %v; want unchanged with one read", rec["status"], rec["reads"])
	}
	if read := reads[0].(map[string]any); read["scope"] != "main" || read["serial"].(float64) < 1 {
		t.Errorf("app's no-change receipt reads %v, want network's main state with its serial", read)
	}
}
