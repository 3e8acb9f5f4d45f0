package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EEmptyDirectory: a directory without configuration files is
// refused by plan, apply and destroy, as both engines refuse it, before
// anything is read or written; before, plan said "no changes" and apply
// would have destroyed what the scope owns.
func TestE2EEmptyDirectory(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-1", "-var", objectsVar("a", "E1"))
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "README.md"), []byte("not a configuration\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := "file://" + filepath.Join(dir, ".sponson")
	before := snapshot(t, filepath.Join(dir, ".sponson"))
	for _, args := range [][]string{
		{"plan", "--scope", "pr-1"},
		{"apply", "--scope", "pr-1"},
		{"destroy", "--scope", "pr-1"},
		{"plan", "--scope", "pr-1", "-chdir=" + empty},
	} {
		where := empty
		if strings.HasPrefix(args[len(args)-1], "-chdir=") {
			where = dir
		}
		r := h.run(where, env, append(args, "--store", store, "--json")...)
		if r.exit != 2 || r.code(t) != "USAGE" || !strings.Contains(r.stdout, "holds no configuration files") {
			t.Errorf("sponson %v in a directory without configuration: exit %d %q\n%s\n%s", args, r.exit, r.code(t), r.stdout, r.stderr)
		}
	}
	assertUnchanged(t, before, snapshot(t, filepath.Join(dir, ".sponson")))
	if _, err := os.Stat(filepath.Join(objects, "objects", "E1.json")); err != nil {
		t.Errorf("the scope's object is gone: %v", err)
	}
}

// TestE2EDriftConfiguredByEnv: a nightly drift job configured the way the
// CI templates configure every job (SPONSON_CHDIR and SPONSON_STORE in the
// workflow's env, run from the checkout's root) checks the scopes of that
// store; an environment in which it finds no scope is DRIFT_CHECK_FAILED
// rather than "in sync", unless --allow-empty.
func TestE2EDriftConfiguredByEnv(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	checkout := t.TempDir()
	infra := filepath.Join(checkout, "infra")
	if err := os.Mkdir(infra, 0o755); err != nil {
		t.Fatal(err)
	}
	src := h.workdir("testdata/fixture")
	for _, name := range []string{"main.tf"} {
		if err := os.WriteFile(filepath.Join(infra, name), readFile(t, filepath.Join(src, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	storeDir := filepath.Join(t.TempDir(), "store")
	jobEnv := append(append([]string{}, env...), "SPONSON_CHDIR=infra", "SPONSON_STORE=file://"+storeDir)
	h.mustRunEnv(checkout, jobEnv, "apply", "--scope", "main", "-var", objectsVar("a", "D1"))

	r := h.run(checkout, jobEnv, "drift", "--json")
	if r.exit != 0 {
		t.Fatalf("drift configured by env: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	res := r.envelope(t)["result"].(map[string]any)
	if scopes := res["scopes"].([]any); len(scopes) != 1 || res["inSync"] != float64(1) {
		t.Errorf("drift found %v (in sync %v); want main in sync", scopes, res["inSync"])
	}
	if !strings.Contains(res["store"].(string), storeDir) {
		t.Errorf("drift read store %v; want SPONSON_STORE's %s", res["store"], storeDir)
	}

	// The same job with a store that holds nothing: refused, not in sync.
	wrong := append(append([]string{}, env...), "SPONSON_CHDIR=infra", "SPONSON_STORE=file://"+filepath.Join(t.TempDir(), "empty"))
	r = h.run(checkout, wrong, "drift", "--json")
	if r.exit != 1 || r.code(t) != "DRIFT_CHECK_FAILED" || !strings.Contains(r.stdout, "--allow-empty") {
		t.Errorf("drift of an empty environment: exit %d %q\n%s", r.exit, r.code(t), r.stdout)
	}
	r = h.run(checkout, wrong, "drift", "--json", "--allow-empty")
	if r.exit != 0 {
		t.Errorf("drift --allow-empty of an empty environment: exit %d\n%s", r.exit, r.stdout)
	}
	// --chdir and --store on the command line win over the variables.
	r = h.run(checkout, wrong, "drift", "--json", "--store", "file://"+storeDir, "--chdir", infra)
	if r.exit != 0 || r.envelope(t)["result"].(map[string]any)["inSync"] != float64(1) {
		t.Errorf("drift --store --chdir: exit %d\n%s", r.exit, r.stdout)
	}
}
