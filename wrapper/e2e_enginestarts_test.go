package wrapper_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
// empties the log.
func starts(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestE2EEngineStarts: the engine starts only when needed (docs/design.md
// §8). A second apply of an unchanged configuration neither reads the
// engine's version (it is cached per binary) nor runs init: it starts plan
// and show, an apply with changes plan, show and apply; and a plan
// borrows the scope's initialised data directory; a
// changed configuration (here a new module call) is initialised again, and
// the module it installs is really used.
func TestE2EEngineStarts(t *testing.T) {
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
	if got := apply(); !slices.Equal(got, []string{"plan", "show"}) {
		t.Fatalf("a no-change apply of a scope initialised for this configuration started %v, want plan and show only", got)
	}
	if r := h.run(dir, env, "apply", "--scope", "starts", "-var", "n=4"); r.exit != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	if got := starts(t, log); !slices.Equal(got, []string{"plan", "show", "apply"}) {
		t.Fatalf("an apply with changes started %v, want plan, show and apply only", got)
	}
	plan := func() []string {
		t.Helper()
		if r := h.run(dir, env, "plan", "--scope", "starts", "-var", "n=3"); r.exit != 0 {
			t.Fatalf("plan: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
		}
		return starts(t, log)
	}
	if got := plan(); !slices.Equal(got, []string{"plan", "show"}) {
		t.Fatalf("a plan of a scope initialised for this configuration started %v, want plan and show only", got)
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
