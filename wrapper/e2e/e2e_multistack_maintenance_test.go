package e2e_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// maintenanceStacks is the three-stack repository with an object of the
// fixture provider in stacks/docs, which can be changed outside the
// engine: what drift finds.
func maintenanceStacks() map[string]string {
	files := maps.Clone(multiStack)
	files["stacks/docs/main.tf"] = `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    fixture = { source = "sponson/fixture" }
  }
}

resource "sponson_scope" "this" {
  identity = {
    fixture_object = ["name"]
  }
}

resource "fixture_object" "doc" {
  name  = "doc-${sponson_scope.this.name}"
  value = "docs of ${sponson_scope.this.name}"
}
`
	return files
}

// TestE2EMultiStackGCDrift: gc and drift across every stack of an
// environment with --all, on one store (file and PostgreSQL). Without
// --all gc destroys only its own stack's scopes and drift checks only its
// own stack; with it drift checks the scopes of the three stacks and finds
// the one changed by hand, and gc collects a closed pull request's scope in
// every stack, app before the network it reads.
func TestE2EMultiStackGCDrift(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	t.Run("file", func(t *testing.T) {
		gcDriftScenario(t, h, "--store=file://"+filepath.Join(t.TempDir(), "store"))
	})
	t.Run("postgres", func(t *testing.T) {
		gcDriftScenario(t, h, "--store="+newPgE2E(t).url)
	})
}

func gcDriftScenario(t *testing.T, h *harness, storeFlag string) {
	root := repoWith(t, maintenanceStacks())
	fixture, objects := fixtureEnv(t)
	env := append([]string{deriveStack}, fixture...)
	// The remote gc's branch rule asks: main and feat/six exist.
	remote := filepath.Join(t.TempDir(), "remote.git")
	gitIn(t, filepath.Dir(remote), "init", "--quiet", "--bare", remote)
	gitIn(t, root, "push", "--quiet", remote, "HEAD:refs/heads/main", "HEAD:refs/heads/feat/six")

	for _, scope := range [][]string{{"--branch", "main"}, {"--pr", "5", "--branch", "feat/five"}, {"--pr", "6", "--branch", "feat/six"}} {
		h.mustRunEnv(root, env, append([]string{"apply", "--all", storeFlag}, scope...)...)
	}

	// drift --all: the nine scopes of the three stacks, in sync.
	r := h.run(root, env, "drift", "--all", storeFlag, "--json")
	if r.exit != 0 {
		t.Fatalf("drift --all before any change: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	res := r.envelope(t)["result"].(map[string]any)
	if res["inSync"] != float64(9) || res["drifted"] != float64(0) || res["failed"] != float64(0) {
		t.Errorf("drift --all: %v in sync, %v drifted, %v failed; want 9 in sync\n%s", res["inSync"], res["drifted"], res["failed"], r.stderr)
	}
	if d := cmp.Diff([]string{"stacks/docs succeeded", "stacks/network succeeded", "stacks/app succeeded"}, stackRows(t, r, "status")); d != "" {
		t.Errorf("drift --all (-want +got):\n%s", d)
	}

	// docs of pr-5 is changed by hand: drift --all finds it, and only it.
	obj := filepath.Join(objects, "objects", "doc-pr-5.json")
	var o map[string]any
	if err := json.Unmarshal(readFile(t, obj), &o); err != nil {
		t.Fatal(err)
	}
	o["value"] = "edited by hand"
	b, _ := json.Marshal(o)
	if err := os.WriteFile(obj, b, 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(t.TempDir(), "drift.md")
	r = h.run(root, env, "drift", "--all", storeFlag, "--json", "--summary", md)
	if r.exit != 1 || r.code(t) != "DRIFT_DETECTED" {
		t.Fatalf("drift --all after a change by hand: exit %d, %s; want 1, DRIFT_DETECTED\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	res = r.envelope(t)["result"].(map[string]any)
	if res["inSync"] != float64(8) || res["drifted"] != float64(1) {
		t.Errorf("drift --all: %v in sync, %v drifted; want 8 and 1\n%s", res["inSync"], res["drifted"], r.stderr)
	}
	if msg := r.envelope(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "stacks/docs pr-5") {
		t.Errorf("DRIFT_DETECTED does not name docs' pr-5: %s", msg)
	}
	t.Logf("sponson drift --all:\n%s", r.stderr)
	if !strings.Contains(r.stderr, `stacks/docs: drift: 2 in sync, 1 drifted, 0 failed: pr-5 [fixture_object.doc (update)]`) {
		t.Errorf("the log does not say what drifted in docs:\n%s", r.stderr)
	}
	summary := string(readFile(t, md))
	for _, want := range []string{"### sponson drift --all · preview: 8 in sync, 1 drifted, 0 failed in 3 stacks", "#### `stacks/docs`", "#### `stacks/app`", "Refresh-only plan of pr-5"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, summary)
		}
	}
	// drift of one stack checks that stack only.
	one := h.run(root, env, "drift", "--chdir", "stacks/app", storeFlag, "--json")
	if one.exit != 0 || one.envelope(t)["result"].(map[string]any)["inSync"] != float64(3) {
		t.Errorf("drift of app alone: exit %d, %v in sync; want 0 and app's 3 scopes\n%s", one.exit, one.envelope(t)["result"], one.stderr)
	}

	// gc --all, dry run: pr-5 (closed, its branch gone) in each stack,
	// nothing destroyed.
	gcArgs := []string{"gc", "--all", storeFlag, "--open-prs", "6", "--remote", remote, "--json"}
	r = h.mustRunEnv(root, env, gcArgs...)
	res = r.envelope(t)["result"].(map[string]any)
	if res["dryRun"] != true || res["selected"] != float64(3) || res["destroyed"] != float64(0) {
		t.Errorf("gc --all dry run: %v", res)
	}
	for _, dir := range []string{"stacks/docs", "stacks/network", "stacks/app"} {
		if !strings.Contains(r.stderr, dir+": gc: would destroy pr-5\n") {
			t.Errorf("the dry run does not say pr-5 of %s would be destroyed:\n%s", dir, r.stderr)
		}
	}
	if got := appOutputs(t, h, root, storeFlag, "pr-5"); got["vpc"] != "vpc-pr-5-10.0.0.0/16" {
		t.Fatalf("the dry run changed app's pr-5: outputs %v", got)
	}

	// gc of one stack with --yes destroys only that stack's scopes.
	r = h.mustRunEnv(root, env, "gc", "--chdir", "stacks/docs", storeFlag, "--open-prs", "6", "--remote", remote, "--yes", "--json")
	got := map[string]string{}
	for _, s := range r.envelope(t)["result"].(map[string]any)["scopes"].([]any) {
		m := s.(map[string]any)
		reason, _ := m["skipReason"].(string)
		got[m["stack"].(string)+" "+m["scope"].(string)] = m["outcome"].(string) + " " + reason
	}
	if d := cmp.Diff(map[string]string{
		"github.com/acme/infra//stacks/docs pr-5":    "destroyed ",
		"github.com/acme/infra//stacks/network pr-5": "skipped other-stack",
		"github.com/acme/infra//stacks/app pr-5":     "skipped other-stack",
	}, got); d != "" {
		t.Errorf("gc of docs alone (-want +got):\n%s\n%s", d, r.stdout)
	}

	// gc --all --yes of network alone is refused: app, outside the run,
	// reads network.
	r = h.run(root, env, append(gcArgs, "--yes", "--chdir", "stacks/network")...)
	if r.exit != 2 || r.code(t) != "STACK_HAS_DEPENDENTS" {
		t.Errorf("gc --all --yes --chdir stacks/network: exit %d, %s; want 2, STACK_HAS_DEPENDENTS\n%s", r.exit, r.code(t), r.stderr)
	}

	// gc --all --yes: pr-5 of app before pr-5 of network; main and pr-6
	// stay.
	r = h.mustRunEnv(root, env, append(gcArgs, "--yes")...)
	t.Logf("sponson gc --all --yes:\n%s", r.stderr)
	res = r.envelope(t)["result"].(map[string]any)
	if res["destroyed"] != float64(2) || res["failed"] != float64(0) {
		t.Errorf("gc --all --yes: %v\n%s", res, r.stderr)
	}
	if done, start := lineIndex(r.stderr, "stacks/app: gc: destroyed pr-5"), lineIndex(r.stderr, "stacks/network: gc started"); done < 0 || start < done {
		t.Errorf("network's gc started (line %d) before app's destroyed pr-5 (line %d):\n%s", start, done, r.stderr)
	}
	if got := appOutputs(t, h, root, storeFlag, "pr-5"); len(got) != 0 {
		t.Errorf("app's pr-5 still has outputs after gc --all: %v", got)
	}
	if got := appOutputs(t, h, root, storeFlag, "pr-6"); got["vpc"] != "vpc-pr-6-10.0.0.0/16" {
		t.Errorf("app's pr-6 after gc --all = %v, want it kept", got)
	}
	r = h.mustRunEnv(root, env, gcArgs...)
	if res = r.envelope(t)["result"].(map[string]any); res["selected"] != float64(0) {
		t.Errorf("gc --all after collecting: %v selected, want none\n%s", res["selected"], r.stderr)
	}

	// --parallelism needs --all; --all refuses SPONSON_STACK.
	r = h.run(root, env, "drift", "--parallelism", "2", storeFlag, "--json")
	if r.exit != 2 || r.code(t) != "USAGE" {
		t.Errorf("drift --parallelism without --all: exit %d, %s; want 2, USAGE", r.exit, r.code(t))
	}
	r = h.run(root, append(env, "SPONSON_STACK=x"), "gc", "--all", storeFlag, "--json")
	if r.exit != 2 || r.code(t) != "USAGE" {
		t.Errorf("gc --all with SPONSON_STACK: exit %d, %s; want 2, USAGE", r.exit, r.code(t))
	}
}

// TestE2EStacksChangedWorkingTree: --changed counts what the working tree
// changed and has not committed (modified, staged, new), names those files
// "(not committed)", and leaves out what the engine and sponson write
// themselves (.terraform/, .sponson/, a new lock file).
func TestE2EStacksChangedWorkingTree(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	root := repoWith(t, multiStack)
	env := []string{deriveStack}
	gitIn(t, root, "checkout", "--quiet", "-b", "feat")
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stacks/app/main.tf", string(readFile(t, filepath.Join(root, "stacks/app/main.tf")))+"\n# not committed\n")
	write("stacks/docs/README.md", "new, not tracked\n")
	gitIn(t, root, "add", "stacks/docs/README.md")
	write("stacks/network/.terraform.lock.hcl", "# written by init\n")
	write("stacks/network/.terraform/modules/modules.json", "{}\n")
	write("stacks/network/.sponson/x", "")

	r := h.mustRunEnv(root, env, "stacks", "--changed", "--base", "main", "--json")
	want := []string{
		"stacks/app changed: stacks/app/main.tf (not committed)",
		"stacks/docs changed: stacks/docs/README.md (not committed)",
	}
	if d := cmp.Diff(want, stackRows(t, r, "reasons")); d != "" {
		t.Errorf("stacks --changed with a dirty working tree (-want +got):\n%s", d)
	}
	if got := r.envelope(t)["result"].(map[string]any)["uncommitted"]; len(got.([]any)) != 2 {
		t.Errorf("result.uncommitted = %v, want app's main.tf and docs' README.md", got)
	}
	human := h.mustRunEnv(root, env, "stacks", "--changed", "--base", "main")
	t.Logf("sponson stacks --changed --base main, before the commit:\n%s", human.stdout)
	if !strings.Contains(human.stdout, "why each is listed (changes since main, and 2 files of the working tree not committed):") {
		t.Errorf("stacks --changed does not say the working tree counts:\n%s", human.stdout)
	}

	// Committed, the same files are changes of the branch.
	gitIn(t, root, "add", "stacks/app/main.tf")
	gitIn(t, root, "commit", "--quiet", "-m", "app and docs")
	r = h.mustRunEnv(root, env, "stacks", "--changed", "--base", "main", "--json")
	want = []string{"stacks/app changed: stacks/app/main.tf", "stacks/docs changed: stacks/docs/README.md"}
	if d := cmp.Diff(want, stackRows(t, r, "reasons")); d != "" {
		t.Errorf("stacks --changed after the commit (-want +got):\n%s", d)
	}
}

// TestE2EMultiStackStateKey: the stacks of apply --all on an encrypted git
// store get the state key (on a pipe, as the parent holds it in memory
// only): both apply, the dependent reading its upstream's sealed state,
// and no engine of either stack sees the key in its environment.
func TestE2EMultiStackStateKey(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dump := func(stack, extra string) string {
		return `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
}

variable "dir" {
  type = string
}

resource "sponson_scope" "this" {}
` + extra + `
resource "terraform_data" "dump" {
  input = "dumped"
  provisioner "local-exec" {
    command = "env > ${var.dir}/` + stack + `.env"
  }
}

output "input" {
  value = terraform_data.dump.input
}
`
	}
	root := repoWith(t, map[string]string{
		"stacks/a/main.tf": dump("a", ""),
		"stacks/b/main.tf": dump("b", `
data "sponson_outputs" "a" {
  stack = "stacks/a"
}

output "from_a" {
  value = data.sponson_outputs.a.values.input
}
`),
	})
	_, storeFlag, keyEnv := gitRemote(t)
	marks := t.TempDir()
	env := append([]string{deriveStack}, keyEnv...)
	r := h.run(root, env, "apply", "--all", "--branch", "main", storeFlag, "-var", "dir="+marks, "--json")
	if r.exit != 0 {
		t.Fatalf("apply --all with a state key: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	key := strings.TrimPrefix(keyEnv[0], "SPONSON_STATE_KEY=")
	for _, s := range []string{"a", "b"} {
		dumped := string(readFile(t, filepath.Join(marks, s+".env")))
		if strings.Contains(dumped, key) || strings.Contains(dumped, "SPONSON_STATE_KEY") {
			t.Errorf("the engine of stacks/%s saw the state key", s)
		}
	}
	out := h.mustRunEnv(root, env, "output", storeFlag, "--chdir", "stacks/b", "--branch", "main", "from_a")
	if !strings.Contains(out.stdout, "dumped") {
		t.Errorf("b's from_a = %q, want a's output", out.stdout)
	}
	if r := h.run(root, []string{deriveStack}, "output", storeFlag, "--chdir", "stacks/b", "--branch", "main", "from_a"); r.exit == 0 {
		t.Errorf("b's state was read without the key: it is not sealed\n%s", r.stdout)
	}
}
