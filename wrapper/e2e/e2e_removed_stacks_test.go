package e2e_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/stackmove"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// removedStackTF is a stack that writes one local_file named after its
// directory and scope into var.out, with a random_id in its content, after
// the stacks in after.
func removedStackTF(name, scopeAttrs string) string {
	return `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    local   = { source = "hashicorp/local", version = "2.9.0" }
    random  = { source = "hashicorp/random", version = "3.9.0" }
  }
}

variable "out" { type = string }

resource "sponson_scope" "this" {` + scopeAttrs + `}

resource "random_id" "tag" {
  byte_length = 4
}

resource "local_file" "out" {
  filename = "${var.out}/` + name + `-${sponson_scope.this.name}.txt"
  content  = "` + name + ` ${random_id.tag.hex}"
}

output "tag" {
  value = random_id.tag.hex
}
`
}

// removedStacksRepo is main of the monorepo of the removed-stack tests:
// network, queue and docs after it, worker after queue.
var removedStacksRepo = map[string]string{
	// A root module being migrated: no sponson_scope, so no stack.
	"legacy/main.tf":         "resource \"terraform_data\" \"x\" {}\n",
	"stacks/network/main.tf": removedStackTF("network", ""),
	"stacks/queue/main.tf":   removedStackTF("queue", "\n  after = [\"stacks/network\"]\n"),
	"stacks/docs/main.tf":    removedStackTF("docs", "\n  after = [\"stacks/network\"]\n"),
	"stacks/worker/main.tf":  removedStackTF("worker", "\n  after = [\"stacks/queue\"]\n"),
}

// monorepo is a clone of a bare repository (the remote, origin, whose HEAD
// is main) holding files on main, pushed.
func monorepo(t *testing.T, files map[string]string) string {
	t.Helper()
	base := t.TempDir()
	remote := filepath.Join(base, "remote.git")
	gitIn(t, base, "init", "--quiet", "--bare", "-b", "main", remote)
	root := filepath.Join(base, "work")
	gitIn(t, base, "clone", "--quiet", remote, root)
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte(".sponson/\n.terraform/\n.terraform.lock.hcl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "checkout", "--quiet", "-b", "main")
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "--quiet", "-m", "stacks")
	gitIn(t, root, "push", "--quiet", "-u", "origin", "main")
	gitIn(t, root, "remote", "set-head", "origin", "main")
	return root
}

// removedStacksEnv is the environment of the removed-stack tests: real
// providers (hashicorp/local and random from the mirror), stacks named
// from git, the store in SPONSON_STORE, the files in out.
func removedStacksEnv(t *testing.T) (env []string, out string) {
	t.Helper()
	mirror := realproviders.Install(t)
	cli, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	out = t.TempDir()
	return []string{deriveStack, "TF_CLI_CONFIG_FILE=" + cli, "TF_VAR_out=" + out,
		"SPONSON_STORE=file://" + filepath.Join(t.TempDir(), "store")}, out
}

// removedEntry is the entry of dir in the envelope's result.removed.
func removedEntry(t *testing.T, r result, dir string) map[string]any {
	t.Helper()
	res, _ := r.envelope(t)["result"].(map[string]any)
	list, _ := res["removed"].([]any)
	for _, e := range list {
		if m, _ := e.(map[string]any); m["directory"] == dir {
			return m
		}
	}
	t.Fatalf("%s is not in result.removed:\n%s", dir, r.stdout)
	return nil
}

// stackEntry is one stack's entry in the envelope of a run of many.
func stackEntry(t *testing.T, r result, dir string) map[string]any {
	t.Helper()
	for _, s := range r.envelope(t)["result"].(map[string]any)["stacks"].([]any) {
		if m := s.(map[string]any); m["directory"] == dir {
			return m
		}
	}
	t.Fatalf("no stack %s in:\n%s", dir, r.stdout)
	return nil
}

// TestE2ERemovedStack: a pull request deletes a stack's directory. `stacks
// --changed` lists it as removed with the scope its state holds; `plan
// --changed` plans its destroy from the base's configuration and the
// review shows it; a plan --all after the merge warns of the stack with
// state and no directory; `apply --changed` on main after the merge
// destroys it (its file is gone, its receipt a destroy, the other stacks
// untouched), and nothing warns any more; status names no stack whose
// directory is gone.
func TestE2ERemovedStack(t *testing.T) {
	h := e2e(t)
	env, out := removedStacksEnv(t)
	root := monorepo(t, removedStacksRepo)

	r := h.mustRunEnv(root, env, "apply", "--all", "--json")
	if !strings.Contains(r.stdout, "apply --all skipped 1 root module that declare no sponson_scope, so are no stacks: legacy") {
		t.Errorf("apply --all does not name the root module it skipped:\n%s", r.stdout)
	}
	queueFile := filepath.Join(out, "queue-main.txt")
	docsBefore := string(readFile(t, filepath.Join(out, "docs-main.txt")))
	if _, err := os.Stat(queueFile); err != nil {
		t.Fatalf("apply --all on main did not write queue's file: %v", err)
	}

	// The pull request: a branch that deletes stacks/queue and
	// stacks/worker, which reads it.
	gitIn(t, root, "checkout", "--quiet", "-b", "drop-queue")
	gitIn(t, root, "rm", "--quiet", "-r", "stacks/queue", "stacks/worker")
	gitIn(t, root, "commit", "--quiet", "-m", "drop queue")

	r = h.mustRunEnv(root, env, "stacks", "--changed", "--json")
	q := removedEntry(t, r, "stacks/queue")
	if fmt.Sprint(q["scopes"]) != "[main]" || q["environment"] != "preview" || !strings.Contains(fmt.Sprint(q["reasons"]), "its directory stacks/queue was deleted") {
		t.Errorf("stacks --changed lists queue as %v, want removed, its state in preview/main", q)
	}
	if !strings.Contains(r.stdout, "2 stacks removed since origin/main (result.removed) have no job of a CI matrix or child pipeline") {
		t.Errorf("stacks --changed --json does not warn that a matrix leaves the removed stacks out:\n%s", r.stdout)
	}
	human := h.mustRunEnv(root, env, "stacks", "--changed")
	if !strings.Contains(human.stdout, "removed since origin/main") || !strings.Contains(human.stdout, "preview: main") {
		t.Errorf("stacks --changed does not name the removed stack:\n%s", human.stdout)
	}

	review := filepath.Join(t.TempDir(), "review.md")
	r = h.mustRunEnv(root, env, "plan", "--changed", "--json", "--summary", review)
	qr := stackEntry(t, r, "stacks/queue")
	if qr["removed"] != true || qr["status"] != "succeeded" {
		t.Fatalf("plan --changed ran queue as %v, want its removal planned\n%s", qr, r.stderr)
	}
	qres, _ := qr["result"].(map[string]any)
	if qres["scope"] != "main" || !strings.Contains(fmt.Sprint(qres["changes"]), "action:delete address:local_file.out") {
		t.Errorf("queue's plan = scope %v changes %v, want the destroy of its main scope", qres["scope"], qres["changes"])
	}
	md := string(readFile(t, review))
	if !strings.Contains(md, "removed: its directory stacks/queue was deleted; destroy, from the base's configuration") || !strings.Contains(md, "to destroy") {
		t.Errorf("the review does not show queue's destroy:\n%s", md)
	}
	if _, err := os.Stat(queueFile); err != nil {
		t.Errorf("a plan destroyed queue's file: %v", err)
	}

	// The merge, on main.
	gitIn(t, root, "checkout", "--quiet", "main")
	gitIn(t, root, "merge", "--quiet", "--no-ff", "-m", "merge drop-queue", "drop-queue")
	gitIn(t, root, "push", "--quiet", "origin", "main")

	r = h.mustRunEnv(root, env, "plan", "--all", "--json")
	for _, d := range []string{"queue", "worker"} {
		if !strings.Contains(r.stdout, "stacks/"+d+" holds state in preview (scopes main) and its directory stacks/"+d+" is gone") {
			t.Errorf("plan --all does not warn of %s's state:\n%s", d, r.stdout)
		}
	}

	r = h.mustRunEnv(root, env, "gc", "--all", "--json")
	if !strings.Contains(r.stdout, "stacks/queue holds state in preview (scopes main) and its directory stacks/queue is gone") {
		t.Errorf("gc --all does not warn of queue's state:\n%s\n%s", r.stdout, r.stderr)
	}
	st := h.mustRunEnv(root, env, "status")
	if !strings.Contains(st.stdout, "its directory stacks/queue is gone from this checkout and it holds state") {
		t.Errorf("status does not name queue's gone directory:\n%s", st.stdout)
	}

	r = h.mustRunEnv(root, env, "apply", "--changed", "--base", "HEAD~1", "--json")
	qr = stackEntry(t, r, "stacks/queue")
	if qr["removed"] != true || qr["status"] != "succeeded" {
		t.Fatalf("apply --changed ran queue as %v\n%s", qr, r.stderr)
	}
	if qres, _ := qr["result"].(map[string]any); qres["scope"] != "main" || qres["status"] != "destroyed" {
		t.Errorf("queue's run after the merge = %v, want its main scope destroyed", qres)
	}
	if _, err := os.Stat(queueFile); !os.IsNotExist(err) {
		t.Errorf("queue's file is still there after apply --changed on main: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "worker-main.txt")); !os.IsNotExist(err) {
		t.Errorf("worker's file is still there after apply --changed on main: %v", err)
	}
	// Dependents first: worker is destroyed before queue starts.
	if done, start := lineIndex(r.stderr, "stacks/worker: sponson destroy preview/main: destroyed"), lineIndex(r.stderr, "stacks/queue: destroy started"); done < 0 || start < done {
		t.Errorf("queue's destroy started (line %d) before worker's ended (line %d):\n%s", start, done, r.stderr)
	}
	if got := string(readFile(t, filepath.Join(out, "docs-main.txt"))); got != docsBefore {
		t.Errorf("docs' file changed: %q, was %q", got, docsBefore)
	}

	// Nothing is left behind: no warning, status names no gone stack.
	r = h.mustRunEnv(root, env, "plan", "--all", "--json")
	if strings.Contains(r.stdout, "is gone") {
		t.Errorf("plan --all still warns after the destroy:\n%s", r.stdout)
	}
	st = h.mustRunEnv(root, env, "status")
	if strings.Contains(st.stdout, "is gone") || strings.Contains(st.stdout, "no directory") {
		t.Errorf("status names a gone stack after its destroy:\n%s", st.stdout)
	}
	// The worktree of the base is removed.
	if wt := gitIn(t, root, "worktree", "list"); strings.Count(wt, "\n") != 0 {
		t.Errorf("a checkout of the base is left registered:\n%s", wt)
	}
}

// TestE2ERenamedStack: a pull request moves a stack's directory with its
// configuration unchanged (its name, derived from the directory, changes).
// `stacks --changed` lists the old stack as renamed to the new directory,
// with its scope; plan --changed shows the move of its state in the review
// (N resources, no changes) and plans no destroy; apply --changed on main
// after the merge moves the state to the new stack before planning it, so
// that its plan changes nothing: the new stack's state holds the same
// objects (the same ids, random_id's hex unchanged), nothing was destroyed
// or created, the old stack's scope holds nothing, status names no stack
// whose directory is gone, and a plan under the old name is refused. A
// second apply finds the move done.
func TestE2ERenamedStack(t *testing.T) {
	h := e2e(t)
	env, out := removedStacksEnv(t)
	root := monorepo(t, removedStacksRepo)

	h.mustRunEnv(root, env, "apply", "--all", "--json")
	docsFile := filepath.Join(out, "docs-main.txt")
	before := string(readFile(t, docsFile))
	var oldName string
	for _, s := range h.mustRunEnv(root, env, "stacks", "--json").envelope(t)["result"].(map[string]any)["stacks"].([]any) {
		if m := s.(map[string]any); m["directory"] == "stacks/docs" {
			oldName = m["stack"].(string)
		}
	}
	newName := strings.TrimSuffix(oldName, "stacks/docs") + "stacks/documentation"
	oldObjects := movedStateObjects(t, env, "preview", oldName)
	if len(oldObjects) != 3 || !strings.Contains(before, oldObjects["random_id.tag"]) {
		t.Fatalf("docs' state before the move: %v (file %q)", oldObjects, before)
	}

	gitIn(t, root, "checkout", "--quiet", "-b", "move-docs")
	gitIn(t, root, "mv", "stacks/docs", "stacks/documentation")
	gitIn(t, root, "commit", "--quiet", "-m", "move docs")

	r := h.mustRunEnv(root, env, "stacks", "--changed", "--json")
	d := removedEntry(t, r, "stacks/docs")
	if d["renamedDirectory"] != "stacks/documentation" || fmt.Sprint(d["scopes"]) != "[main]" {
		t.Errorf("stacks --changed lists docs as %v, want renamed to stacks/documentation, its state in main", d)
	}

	// The pull request's review shows the move, and no destroy.
	review := filepath.Join(t.TempDir(), "review.md")
	r = h.mustRunEnv(root, env, "plan", "--changed", "--json", "--summary", review)
	dr := stackEntry(t, r, "stacks/docs")
	moved, _ := dr["moved"].(map[string]any)
	if dr["removed"] != true || dr["status"] != "succeeded" || dr["result"] != nil || moved["applied"] != false || moved["to"] != newName ||
		fmt.Sprint(moved["scopes"]) != "[map[action:planned resources:3 scope:main]]" {
		t.Errorf("plan --changed ran docs as %v, want its move shown (3 resources of main), no run", dr)
	}
	md := string(readFile(t, review))
	if !strings.Contains(md, "| `stacks/docs` | succeeded | moved from stacks/docs to stacks/documentation: 3 resources, no changes") || regexp.MustCompile(`[1-9][0-9]* to destroy`).MatchString(md) {
		t.Errorf("the review does not show docs' move, or shows a destroy:\n%s", md)
	}
	if strings.Contains(r.stderr, "plan -destroy") || strings.Contains(r.stderr, "docs: destroy") {
		t.Errorf("plan --changed planned docs' destroy:\n%s", r.stderr)
	}
	if got := movedStateObjects(t, env, "preview", oldName); !maps.Equal(got, oldObjects) {
		t.Errorf("the plan moved docs' state: %v", got)
	}

	// The merge, on main: the move, then the new stack's apply.
	gitIn(t, root, "checkout", "--quiet", "main")
	gitIn(t, root, "merge", "--quiet", "--no-ff", "-m", "merge move-docs", "move-docs")
	r = h.mustRunEnv(root, env, "apply", "--changed", "--base", "HEAD~1", "--json")
	dr = stackEntry(t, r, "stacks/docs")
	if moved, _ := dr["moved"].(map[string]any); dr["status"] != "succeeded" || moved["applied"] != true || fmt.Sprint(moved["scopes"]) != "[map[action:start resources:3 scope:main]]" {
		t.Errorf("apply --changed ran docs as %v, want its main scope moved", dr)
	}
	applied := stackResult(t, r, "stacks/documentation")
	if applied["scope"] != "main" || applied["stack"] != newName || applied["status"] != "unchanged" || (applied["changes"] != nil && fmt.Sprint(applied["changes"]) != "[]") {
		t.Errorf("the new stack's apply after the move: scope %v stack %v status %v changes %v, want main of %s unchanged", applied["scope"], applied["stack"], applied["status"], applied["changes"], newName)
	}
	if after := string(readFile(t, docsFile)); after != before {
		t.Errorf("docs' file is %q after the move, was %q", after, before)
	}
	if got := movedStateObjects(t, env, "preview", newName); !maps.Equal(got, oldObjects) {
		t.Errorf("the new stack's state holds %v, want the old stack's objects %v", got, oldObjects)
	}
	if got := movedStateObjects(t, env, "preview", oldName); len(got) != 0 {
		t.Errorf("the old stack's state still holds %v", got)
	}
	rec := h.mustRunEnv(root, env, "receipt", "--json", "--scope", "main", "--stack", oldName).envelope(t)["result"].(map[string]any)
	if rec["command"] != "stack move" {
		t.Errorf("the old stack's last receipt is a %v, want the move", rec["command"])
	}
	if st := h.mustRunEnv(root, env, "status"); strings.Contains(st.stdout, "is gone") || strings.Contains(st.stdout, "no directory") ||
		!strings.Contains(st.stdout, "moved to stack "+newName) || !strings.Contains(st.stdout, "moved from stack "+oldName) {
		t.Errorf("status after the move: want no gone stack, and the old scope's and the new one's move named:\n%s", st.stdout)
	}
	// The old name owns nothing any more: a run under it is refused
	// rather than creating the resources again.
	if r := h.run(root, env, "plan", "--chdir", "stacks/documentation", "--stack", oldName, "--scope", "main", "--json"); r.exit == 0 || r.code(t) != "USAGE" || !strings.Contains(r.stdout, "was moved to stack "+newName) {
		t.Errorf("a plan under the old name after the move: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if r := h.mustRunEnv(root, env, "plan", "--all", "--json"); strings.Contains(r.stdout, "is gone") {
		t.Errorf("plan --all warns of a gone stack after the move:\n%s", r.stdout)
	}
	// Run again, the change finds nothing left to move.
	r = h.mustRunEnv(root, env, "apply", "--changed", "--base", "HEAD~1", "--json")
	if moved, _ := stackEntry(t, r, "stacks/docs")["moved"].(map[string]any); fmt.Sprint(moved["scopes"]) != "[]" {
		t.Errorf("the second apply --changed moved %v, want nothing", moved["scopes"])
	}
	if got := movedStateObjects(t, env, "preview", newName); !maps.Equal(got, oldObjects) {
		t.Errorf("after a second apply the new stack's state holds %v", got)
	}
}

// movedStateObjects reads, from the store of env (SPONSON_STORE), the state of
// stack's main scope in environment: the id of each object by address (for
// random_id its hex).
func movedStateObjects(t *testing.T, env []string, environment, stack string) map[string]string {
	t.Helper()
	var url string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SPONSON_STORE="); ok {
			url = v
		}
	}
	st, _, err := storeurl.OpenFor(url, t.TempDir(), environment)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	state, err := st.ReadState(t.Context(), store.Key{Stack: stack, Environment: environment, Scope: "main"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ownership.StateObjects(state)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range objs {
		out[o.Address] = o.ID
		if hex, ok := o.Attributes["hex"].(string); ok {
			out[o.Address] = hex
		}
	}
	return out
}

// TestE2ERenamedStackApproval: the move of a renamed stack's state in a
// protected environment (production) needs its approver as a destroy there
// does: apply --changed after the merge without one fails for the stack
// (ENV_NOT_APPROVED), moves nothing and does not run the new stack; with
// --approved-by it moves the state, the new stack plans no change, and the
// move's receipt names the approver.
func TestE2ERenamedStackApproval(t *testing.T) {
	h := e2e(t)
	env, out := removedStacksEnv(t)
	root := monorepo(t, removedStacksRepo)
	h.mustRunEnv(root, env, "apply", "--all", "--env", "production", "--approved-by", "Ada Lovelace", "--json")
	docsFile := filepath.Join(out, "docs-main.txt")
	before := string(readFile(t, docsFile))
	var oldName string
	for _, s := range h.mustRunEnv(root, env, "stacks", "--json").envelope(t)["result"].(map[string]any)["stacks"].([]any) {
		if m := s.(map[string]any); m["directory"] == "stacks/docs" {
			oldName = m["stack"].(string)
		}
	}
	newName := strings.TrimSuffix(oldName, "stacks/docs") + "stacks/documentation"
	oldObjects := movedStateObjects(t, env, "production", oldName)
	gitIn(t, root, "mv", "stacks/docs", "stacks/documentation")
	gitIn(t, root, "commit", "--quiet", "-m", "move docs")

	r := h.run(root, env, "apply", "--changed", "--base", "HEAD~1", "--env", "production", "--json")
	if e := stackEntry(t, r, "stacks/docs"); r.exit == 0 || e["status"] != "failed" || !strings.Contains(fmt.Sprint(e["error"]), "ENV_NOT_APPROVED") {
		t.Errorf("the move of docs in production without an approver: exit %d, %v", r.exit, e)
	}
	if e := stackEntry(t, r, "stacks/documentation"); e["status"] != "failed" || e["result"] != nil {
		t.Errorf("the new stack ran although its state was not moved: %v", e)
	}
	if got := movedStateObjects(t, env, "production", oldName); !maps.Equal(got, oldObjects) {
		t.Errorf("an unapproved run moved docs' state: %v, was %v", got, oldObjects)
	}
	if got := movedStateObjects(t, env, "production", newName); len(got) != 0 {
		t.Errorf("an unapproved run wrote the new stack's state: %v", got)
	}

	r = h.mustRunEnv(root, env, "apply", "--changed", "--base", "HEAD~1", "--env", "production", "--approved-by", "Ada Lovelace", "--json")
	if res := stackResult(t, r, "stacks/documentation"); res["status"] != "unchanged" || res["environment"] != "production" {
		t.Errorf("the new stack's run with the approver = %v", res)
	}
	if got := movedStateObjects(t, env, "production", newName); !maps.Equal(got, oldObjects) {
		t.Errorf("the new stack's state holds %v, want %v", got, oldObjects)
	}
	if after := string(readFile(t, docsFile)); after != before {
		t.Errorf("docs' file is %q after the move, was %q", after, before)
	}
	rec := h.mustRunEnv(root, env, "receipt", "--json", "--env", "production", "--scope", "main", "--stack", oldName).envelope(t)["result"].(map[string]any)
	if rec["approvedBy"] != "Ada Lovelace" || rec["command"] != "stack move" {
		t.Errorf("the old stack's receipt: command %v approvedBy %v, want the move approved by Ada Lovelace", rec["command"], rec["approvedBy"])
	}
}

// TestE2ERenamedStackKilledAtEveryStep kills apply --changed (SIGKILL, a
// failpoints build) at each step of the move of a renamed stack's state.
// After each, the old stack's receipt has promised the resources to the
// new stack and one of the two states holds them (never neither); a rerun
// waits for the dead run's leases and finishes the move: the new stack
// holds the same objects, plans no change, and the old one holds nothing.
func TestE2ERenamedStackKilledAtEveryStep(t *testing.T) {
	h := e2eFailpoints(t)
	for _, step := range []string{stackmove.StepPromised, stackmove.StepCopied, stackmove.StepClaimed, stackmove.StepRetired} {
		t.Run(step, func(t *testing.T) {
			var env []string
			var root, oldName, newName string
			var oldObjects map[string]string
			untilKilled(t, step, func() result {
				env, _ = removedStacksEnv(t)
				root = monorepo(t, removedStacksRepo)
				h.mustRunEnv(root, env, "apply", "--all", "--json")
				for _, s := range h.mustRunEnv(root, env, "stacks", "--json").envelope(t)["result"].(map[string]any)["stacks"].([]any) {
					if m := s.(map[string]any); m["directory"] == "stacks/docs" {
						oldName = m["stack"].(string)
					}
				}
				newName = strings.TrimSuffix(oldName, "stacks/docs") + "stacks/documentation"
				oldObjects = movedStateObjects(t, env, "preview", oldName)
				gitIn(t, root, "mv", "stacks/docs", "stacks/documentation")
				gitIn(t, root, "commit", "--quiet", "-m", "move docs")
				return h.run(root, append(env, "SPONSON_FAILPOINT="+step), "apply", "--changed", "--base", "HEAD~1", "--lease-ttl", "2s", "--json")
			})
			rec := h.mustRunEnv(root, env, "receipt", "--json", "--scope", "main", "--stack", oldName).envelope(t)["result"].(map[string]any)
			if rec["movedTo"] != newName {
				t.Errorf("killed at %s, the old stack's receipt promises nothing: %v", step, rec)
			}
			oldHas, newHas := movedStateObjects(t, env, "preview", oldName), movedStateObjects(t, env, "preview", newName)
			if !maps.Equal(oldHas, oldObjects) && !maps.Equal(newHas, oldObjects) {
				t.Errorf("killed at %s, neither state holds the objects: old %v, new %v", step, oldHas, newHas)
			}

			r := h.mustRunEnv(root, env, "apply", "--changed", "--base", "HEAD~1", "--wait", "--wait-timeout", "1m", "--json")
			if res := stackResult(t, r, "stacks/documentation"); res["status"] != "unchanged" {
				t.Errorf("after the rerun the new stack's apply = %v %v, want unchanged", res["status"], res["changes"])
			}
			if got := movedStateObjects(t, env, "preview", newName); !maps.Equal(got, oldObjects) {
				t.Errorf("after the rerun the new stack's state holds %v, want %v", got, oldObjects)
			}
			if got := movedStateObjects(t, env, "preview", oldName); len(got) != 0 {
				t.Errorf("after the rerun the old stack's state holds %v", got)
			}
		})
	}
}

// TestE2ERemovedStackApproval: the destroy of a removed stack in a
// protected environment (production) needs its approver as any destroy
// does: apply --changed after the merge without one fails for the stack
// (ENV_NOT_APPROVED) and leaves its file; with --approved-by it destroys it
// and the receipt names the approver.
func TestE2ERemovedStackApproval(t *testing.T) {
	h := e2e(t)
	env, out := removedStacksEnv(t)
	root := monorepo(t, removedStacksRepo)
	h.mustRunEnv(root, env, "apply", "--all", "--env", "production", "--approved-by", "Ada Lovelace", "--json")
	queueFile := filepath.Join(out, "queue-main.txt")
	if _, err := os.Stat(queueFile); err != nil {
		t.Fatalf("apply --all in production did not write queue's file: %v", err)
	}
	gitIn(t, root, "rm", "--quiet", "-r", "stacks/queue", "stacks/worker")
	gitIn(t, root, "commit", "--quiet", "-m", "drop queue")

	r := h.run(root, env, "apply", "--changed", "--base", "HEAD~1", "--env", "production", "--json")
	if e := stackEntry(t, r, "stacks/worker"); r.exit == 0 || e["removed"] != true || fmt.Sprint(e["error"]) == "<nil>" || !strings.Contains(fmt.Sprint(e["error"]), "ENV_NOT_APPROVED") {
		t.Errorf("the removed worker's destroy in production without an approver: exit %d, %v", r.exit, e)
	}
	if e := stackEntry(t, r, "stacks/queue"); e["status"] != "skipped" {
		t.Errorf("queue ran although worker, which reads it, was not destroyed: %v", e)
	}
	if _, err := os.Stat(queueFile); err != nil {
		t.Errorf("an unapproved run destroyed queue's file: %v", err)
	}

	r = h.mustRunEnv(root, env, "apply", "--changed", "--base", "HEAD~1", "--env", "production", "--approved-by", "Ada Lovelace", "--json")
	q := stackEntry(t, r, "stacks/queue")
	if res, _ := q["result"].(map[string]any); res["status"] != "destroyed" || res["environment"] != "production" {
		t.Errorf("queue's run with the approver = %v", q)
	}
	if _, err := os.Stat(queueFile); !os.IsNotExist(err) {
		t.Errorf("queue's file is still there: %v", err)
	}
	rec := h.mustRunEnv(root, env, "receipt", "--json", "--env", "production", "--scope", "main", "--stack", fmt.Sprint(q["stack"])).envelope(t)["result"].(map[string]any)
	if rec["approvedBy"] != "Ada Lovelace" || rec["command"] != "destroy" {
		t.Errorf("queue's receipt: command %v approvedBy %v, want destroy by Ada Lovelace", rec["command"], rec["approvedBy"])
	}
}
