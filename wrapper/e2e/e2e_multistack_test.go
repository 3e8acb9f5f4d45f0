package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/comment/commenttest"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// The three-stack repository of the multi-stack tests: stacks/network makes
// a VPC id (a sensitive output beside it, and a FAIL file makes its plan
// fail), stacks/app reads network's outputs through sponson_outputs, and
// stacks/docs depends on nothing.
var multiStack = map[string]string{
	"stacks/network/main.tf": `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
}

variable "cidr" {
  type    = string
  default = "10.0.0.0/16"
}

resource "sponson_scope" "this" {}

resource "terraform_data" "vpc" {
  input = "vpc-${sponson_scope.this.name}-${var.cidr}"
  lifecycle {
    precondition {
      condition     = !fileexists("${path.module}/FAIL")
      error_message = "network is told to fail."
    }
  }
}

output "vpc_id" {
  value = terraform_data.vpc.output
}

output "cidr" {
  value = var.cidr
}

output "secret" {
  value     = "s3cr3t-${sponson_scope.this.name}"
  sensitive = true
}
`,
	"stacks/app/main.tf": `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
}

resource "sponson_scope" "this" {}

data "sponson_outputs" "net" {
  stack = "stacks/network"
}

resource "terraform_data" "app" {
  input = {
    vpc  = data.sponson_outputs.net.values.vpc_id
    cidr = data.sponson_outputs.net.values.cidr
    from = data.sponson_outputs.net.read_scope
  }
}

output "vpc" {
  value = terraform_data.app.output.vpc
}

output "from" {
  value = terraform_data.app.output.from
}

output "secret" {
  value     = data.sponson_outputs.net.sensitive_values.secret
  sensitive = true
}
`,
	"stacks/docs/main.tf": `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
}

resource "sponson_scope" "this" {}

resource "terraform_data" "docs" {
  input = "docs-${sponson_scope.this.name}"
}
`,
	"modules/unused/main.tf": `variable "x" {}
`,
}

// gitIn runs git in dir, failing the test on an error.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repoWith makes a committed git repository (origin github.com/acme/infra,
// branch main) holding files.
func repoWith(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	gitIn(t, root, "init", "--quiet", "-b", "main")
	gitIn(t, root, "remote", "add", "origin", "git@github.com:acme/infra.git")
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte(".sponson/\n.terraform/\nFAIL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "--quiet", "-m", "stacks")
	return root
}

// stackRows are the stacks of a run or a listing, each as its directory
// and the value of field (a list joined with "; ").
func stackRows(t *testing.T, r result, field string) []string {
	t.Helper()
	res, _ := r.envelope(t)["result"].(map[string]any)
	list, _ := res["stacks"].([]any)
	var out []string
	for _, s := range list {
		m := s.(map[string]any)
		var v string
		switch x := m[field].(type) {
		case float64:
			v = strconv.Itoa(int(x))
		case string:
			v = x
		case []any:
			var parts []string
			for _, e := range x {
				parts = append(parts, e.(string))
			}
			v = strings.Join(parts, "; ")
		}
		out = append(out, m["directory"].(string)+" "+v)
	}
	return out
}

// stackResult is the result of one stack's own run in the envelope of a
// run of many.
func stackResult(t *testing.T, r result, dir string) map[string]any {
	t.Helper()
	for _, s := range r.envelope(t)["result"].(map[string]any)["stacks"].([]any) {
		m := s.(map[string]any)
		if m["directory"] == dir {
			res, _ := m["result"].(map[string]any)
			return res
		}
	}
	t.Fatalf("no stack %s in:\n%s", dir, r.stdout)
	return nil
}

// appOutputs reads stacks/app's outputs in scope through `sponson output`.
func appOutputs(t *testing.T, h *harness, root, storeFlag, scope string) map[string]any {
	t.Helper()
	r := h.mustRunEnv(root, []string{deriveStack}, "output", "--json", storeFlag, "--chdir", "stacks/app", "--scope", scope)
	outs := r.envelope(t)["result"].(map[string]any)["outputs"].(map[string]any)
	got := map[string]any{}
	for k, v := range outs {
		got[k] = v.(map[string]any)["value"]
	}
	return got
}

// lineIndex is the index of the first line of out containing s, -1 if none.
func lineIndex(out, s string) int {
	for i, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// TestE2EMultiStack: the three-stack repository on one store (file and
// PostgreSQL).
// `sponson stacks` orders it; apply --all applies network before app (which
// reads network's outputs, the sensitive one staying sensitive) and docs
// beside them; a pull request scope that did not apply network reads
// main's, and its own once it has one; --changed lists a changed stack and
// its dependent, saying why, and plans exactly those; a failing network
// skips app and not docs, with the worst exit code; destroy --all destroys
// app before network.
func TestE2EMultiStack(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	t.Run("file", func(t *testing.T) {
		multiStackScenario(t, h, "--store=file://"+filepath.Join(t.TempDir(), "store"))
	})
	t.Run("postgres", func(t *testing.T) {
		multiStackScenario(t, h, "--store="+newPgE2E(t).url)
	})
}

func multiStackScenario(t *testing.T, h *harness, storeFlag string) {
	root := repoWith(t, multiStack)
	env := []string{deriveStack}

	// Discovery and order.
	r := h.mustRunEnv(root, env, "stacks", "--json")
	if d := cmp.Diff([]string{"stacks/docs 0", "stacks/network 0", "stacks/app 1"}, stackRows(t, r, "depth")); d != "" {
		t.Errorf("stacks (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"stacks/docs ", "stacks/network ", "stacks/app stacks/network"}, stackRows(t, r, "needs")); d != "" {
		t.Errorf("needs (-want +got):\n%s", d)
	}

	// apply --all in main: network before app; app reads network's outputs.
	r = h.mustRunEnv(root, env, "apply", "--all", "--branch", "main", storeFlag, "--json")
	if d := cmp.Diff([]string{"stacks/docs succeeded", "stacks/network succeeded", "stacks/app succeeded"}, stackRows(t, r, "status")); d != "" {
		t.Errorf("apply --all (-want +got):\n%s\n%s", d, r.stderr)
	}
	if done, start := lineIndex(r.stderr, "stacks/network: sponson apply preview/main: applied"), lineIndex(r.stderr, "stacks/app: apply started"); done < 0 || start < done {
		t.Errorf("app started (line %d) before network finished (line %d):\n%s", start, done, r.stderr)
	}
	got := appOutputs(t, h, root, storeFlag, "main")
	if got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" || got["secret"] != "s3cr3t-main" {
		t.Errorf("app's outputs in main = %v, want network's of main", got)
	}
	// app's receipt records the read as a dependency: stack, scope, serial.
	rec := h.mustRunEnv(root, env, "receipt", "--json", storeFlag, "--chdir", "stacks/app", "--branch", "main").envelope(t)["result"].(map[string]any)
	reads, _ := rec["reads"].([]any)
	if len(reads) != 1 {
		t.Fatalf("app's receipt reads = %v, want one", rec["reads"])
	}
	read := reads[0].(map[string]any)
	if read["address"] != "data.sponson_outputs.net" || read["stack"] != "github.com/acme/infra//stacks/network" || read["scope"] != "main" || read["serial"].(float64) < 1 {
		t.Errorf("app's receipt reads %v, want network's main state with its serial", read)
	}
	if strings.Contains(r.stderr, "s3cr3t") {
		t.Errorf("the sensitive output of network shows in the log:\n%s", r.stderr)
	}

	// A plan of many stacks hands network's planned outputs to app's plan:
	// app's plan shows the change network's plan brings, and says which
	// outputs it takes as they are until network's apply.
	netFile := filepath.Join(root, "stacks/network/main.tf")
	orig := readFile(t, netFile)
	// vpc_tag is provisional too, and nobody reads it: nothing names it.
	unread := []byte("\noutput \"vpc_tag\" {\n  value = \"tag-${terraform_data.vpc.output}\"\n}\n")
	if err := os.WriteFile(netFile, append(bytes.Replace(orig, []byte("10.0.0.0/16"), []byte("10.9.0.0/16"), 1), unread...), 0o644); err != nil {
		t.Fatal(err)
	}
	review := filepath.Join(t.TempDir(), "review.md")
	r = h.mustRunEnv(root, env, "plan", "--all", "--branch", "main", storeFlag, "--json", "--summary", review)
	app := stackResult(t, r, "stacks/app")
	// The review says so too, in app's section (issue 49).
	if md := string(readFile(t, review)); !strings.Contains(md, "**Provisional:** `vpc_id` of `github.com/acme/infra//stacks/network` will be known only after that stack's apply") {
		t.Errorf("the review does not mark app's plan provisional:\n%s", md)
	}
	// At the value: app's change, which derives from vpc_id, says so on its
	// own line of the diff; docs's, which reads nothing, does not.
	md := string(readFile(t, review))
	if !regexp.MustCompile(`terraform_data\.app +# update in-place; provisional: derives from another stack's output known only after its apply`).MatchString(md) {
		t.Errorf("the review's diff does not mark app's change provisional:\n%s", md)
	}
	if regexp.MustCompile(`terraform_data\.(docs|vpc) .*provisional`).MatchString(md) {
		t.Errorf("the review marks a change provisional that derives from nothing provisional:\n%s", md)
	}
	if unreadMarked := regexp.MustCompile(`(?i)provisional:[^\n]*vpc_tag`); unreadMarked.MatchString(md) || unreadMarked.MatchString(r.stderr) {
		t.Errorf("network's vpc_tag, which nobody reads, is marked provisional:\n%s\n%s", md, r.stderr)
	}
	if app["status"] != "changes" || fmt.Sprint(app["changes"]) != "[map[action:update address:terraform_data.app]]" {
		t.Errorf("app's plan in plan --all = %v %v, want the update network's new cidr brings\n%s", app["status"], app["changes"], r.stderr)
	}
	if reads := fmt.Sprint(app["reads"]); !strings.Contains(reads, "planned:true") || !strings.Contains(reads, "provisional:[vpc_id]") {
		t.Errorf("app's reads = %s, want network's planned outputs, vpc_id provisional", reads)
	}
	if !strings.Contains(r.stderr, "stacks/app: sponson plan preview/main: 0 to add, 1 to change, 0 to destroy; provisional: vpc_id of github.com/acme/infra//stacks/network known after its apply") {
		t.Errorf("app's line does not say its plan is provisional:\n%s", r.stderr)
	}
	// app's plan alone reads network's applied state: no change.
	alone := h.mustRunEnv(root, env, "plan", "--chdir", "stacks/app", "--branch", "main", storeFlag, "--json")
	if got := alone.envelope(t)["result"].(map[string]any)["status"]; got != "unchanged" {
		t.Errorf("app's plan alone = %v, want unchanged (network is not applied yet)", got)
	}
	if err := os.WriteFile(netFile, orig, 0o644); err != nil {
		t.Fatal(err)
	}

	// A saved plan of app is refused once network's outputs changed,
	// naming the run that changed them.
	saved := filepath.Join(t.TempDir(), "app.tfplan")
	h.mustRunEnv(root, env, "plan", "--chdir", "stacks/app", "--branch", "main", storeFlag, "-out", saved)
	netRun := h.mustRunEnv(root, env, "apply", "--chdir", "stacks/network", "--branch", "main", storeFlag, "-var", "cidr=10.5.0.0/16", "--json")
	netRunID := netRun.envelope(t)["result"].(map[string]any)["runId"].(string)
	r = h.run(root, env, "apply", saved, "--chdir", "stacks/app", "--branch", "main", storeFlag, "--json")
	if r.exit != 2 || r.code(t) != "PLAN_STALE" {
		t.Fatalf("apply of app's saved plan after network changed: exit %d, %s; want 2, PLAN_STALE\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if msg := r.envelope(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "stacks/network") || !strings.Contains(msg, netRunID) {
		t.Errorf("PLAN_STALE does not name network and its run %s: %s", netRunID, msg)
	}
	h.mustRunEnv(root, env, "apply", "--all", "--branch", "main", storeFlag)

	// A pull request that did not apply network reads main's network; once
	// it applies its own network, app reads that.
	h.mustRunEnv(root, env, "apply", "--chdir", "stacks/app", "--pr", "7", storeFlag)
	if got := appOutputs(t, h, root, storeFlag, "pr-7"); got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" {
		t.Errorf("app's outputs in pr-7 without network = %v, want main's network", got)
	}
	h.mustRunEnv(root, env, "apply", "--chdir", "stacks/network", "--pr", "7", storeFlag, "-var", "cidr=10.7.0.0/16")
	h.mustRunEnv(root, env, "apply", "--chdir", "stacks/app", "--pr", "7", storeFlag)
	if got := appOutputs(t, h, root, storeFlag, "pr-7"); got["vpc"] != "vpc-pr-7-10.7.0.0/16" || got["from"] != "pr-7" {
		t.Errorf("app's outputs in pr-7 with its network = %v, want pr-7's", got)
	}
	h.mustRunEnv(root, env, "destroy", "--all", "--pr", "7", storeFlag)

	// --changed: a change of network lists network and app, not docs.
	gitIn(t, root, "checkout", "--quiet", "-b", "feat")
	if err := os.WriteFile(netFile, append(readFile(t, netFile), "\n# a change\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "commit", "--quiet", "-am", "change network")
	r = h.mustRunEnv(root, env, "stacks", "--changed", "--base", "main", "--json")
	want := []string{"stacks/network changed: stacks/network/main.tf", "stacks/app depends on stacks/network, which is listed"}
	if d := cmp.Diff(want, stackRows(t, r, "reasons")); d != "" {
		t.Errorf("stacks --changed (-want +got):\n%s", d)
	}
	human := h.mustRunEnv(root, env, "stacks", "--changed", "--base", "main")
	t.Logf("sponson stacks --changed --base main:\n%s", human.stdout)
	if !strings.Contains(human.stdout, "stacks/network: changed: stacks/network/main.tf") {
		t.Errorf("stacks --changed does not say why network is listed:\n%s", human.stdout)
	}
	r = h.mustRunEnv(root, env, "plan", "--changed", "--base", "main", "--pr", "8", storeFlag, "--json")
	if d := cmp.Diff([]string{"stacks/network succeeded", "stacks/app succeeded"}, stackRows(t, r, "status")); d != "" {
		t.Errorf("plan --changed (-want +got):\n%s\n%s", d, r.stderr)
	}
	// apply --changed applies network's pr-8 first, then app, which reads
	// it; docs, untouched, is not run.
	r = h.mustRunEnv(root, env, "apply", "--changed", "--base", "main", "--pr", "8", storeFlag, "--json")
	if d := cmp.Diff([]string{"stacks/network succeeded", "stacks/app succeeded"}, stackRows(t, r, "status")); d != "" {
		t.Errorf("apply --changed (-want +got):\n%s\n%s", d, r.stderr)
	}
	if got := appOutputs(t, h, root, storeFlag, "pr-8"); got["vpc"] != "vpc-pr-8-10.0.0.0/16" || got["from"] != "pr-8" {
		t.Errorf("app's outputs in pr-8 after apply --changed = %v, want pr-8's network", got)
	}
	h.mustRunEnv(root, env, "destroy", "--all", "--pr", "8", storeFlag)

	// A failing network skips app, which waits for it, and not docs.
	if err := os.WriteFile(filepath.Join(root, "stacks/network/FAIL"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.run(root, env, "plan", "--all", "--branch", "main", storeFlag, "--json")
	if r.exit != 1 || r.code(t) != "ENGINE_FAILED" {
		t.Errorf("plan --all with network failing: exit %d, %s; want 1, ENGINE_FAILED\n%s", r.exit, r.code(t), r.stderr)
	}
	if d := cmp.Diff([]string{"stacks/docs succeeded", "stacks/network failed", "stacks/app skipped"}, stackRows(t, r, "status")); d != "" {
		t.Errorf("plan --all with network failing (-want +got):\n%s\n%s", d, r.stderr)
	}
	if d := cmp.Diff([]string{"stacks/docs ", "stacks/network ", "stacks/app it waits for stacks/network, which failed"}, stackRows(t, r, "because")); d != "" {
		t.Errorf("why (-want +got):\n%s", d)
	}
	if !strings.Contains(r.stderr, "stacks/network | ") || !strings.Contains(r.stderr, "network is told to fail") {
		t.Errorf("the log does not show network's own output:\n%s", r.stderr)
	}
	if err := os.Remove(filepath.Join(root, "stacks/network/FAIL")); err != nil {
		t.Fatal(err)
	}

	// destroy --all of network alone is refused while app, outside the
	// run, still holds state in the scope.
	r = h.run(root, env, "destroy", "--all", "--chdir", "stacks/network", "--branch", "main", storeFlag, "--json")
	if r.exit != 2 || r.code(t) != "STACK_HAS_DEPENDENTS" {
		t.Errorf("destroy --all of network alone: exit %d, %s; want 2, STACK_HAS_DEPENDENTS\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if msg := r.envelope(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "stacks/app (it needs stacks/network)") {
		t.Errorf("the refusal does not name app: %s", msg)
	}

	// destroy --all: app before network.
	r = h.mustRunEnv(root, env, "destroy", "--all", "--branch", "main", storeFlag, "--json")
	if d := cmp.Diff([]string{"stacks/docs succeeded", "stacks/network succeeded", "stacks/app succeeded"}, stackRows(t, r, "status")); d != "" {
		t.Errorf("destroy --all (-want +got):\n%s", d)
	}
	if done, start := lineIndex(r.stderr, "stacks/app: sponson destroy preview/main: destroyed"), lineIndex(r.stderr, "stacks/network: destroy started"); done < 0 || start < done {
		t.Errorf("network's destroy started (line %d) before app's finished (line %d):\n%s", start, done, r.stderr)
	}
	if got := appOutputs(t, h, root, storeFlag, "main"); len(got) != 0 {
		t.Errorf("app still has outputs after destroy --all: %v", got)
	}
}

// TestE2EMultiStackCycle: stacks that wait for each other are refused
// before any engine runs, naming the cycle.
func TestE2EMultiStackCycle(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	root := repoWith(t, map[string]string{
		"a/main.tf": `resource "sponson_scope" "this" {
  after = ["b"]
}
`,
		"b/main.tf": `resource "sponson_scope" "this" {}

data "sponson_outputs" "a" {
  stack = "a"
}
`,
	})
	for _, args := range [][]string{{"stacks", "--json"}, {"plan", "--all", "--json"}} {
		r := h.run(root, []string{deriveStack}, args...)
		if r.exit != 2 || r.code(t) != "STACK_CYCLE" {
			t.Fatalf("%v: exit %d, %s; want 2, STACK_CYCLE\n%s\n%s", args, r.exit, r.code(t), r.stdout, r.stderr)
		}
		if msg := r.envelope(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "a → b → a") {
			t.Errorf("%v: the refusal does not name the cycle: %s", args, msg)
		}
		if strings.Contains(r.stderr, "started") {
			t.Errorf("%v: a stack ran:\n%s", args, r.stderr)
		}
	}
}

// TestE2EMultiStackMatrix: `sponson stacks --json` is what a CI matrix
// needs. Each entry runs as its own process, the entries of one depth at
// the same time and the depths in order, as jobs of a matrix in layers do:
// app, in the second layer, reads the network the first layer applied.
func TestE2EMultiStackMatrix(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	t.Run("file", func(t *testing.T) {
		matrixScenario(t, h, "--store=file://"+filepath.Join(t.TempDir(), "store"))
	})
	t.Run("postgres", func(t *testing.T) {
		matrixScenario(t, h, "--store="+newPgE2E(t).url)
	})
}

func matrixScenario(t *testing.T, h *harness, storeFlag string) {
	root := repoWith(t, multiStack)
	env := []string{deriveStack}
	var matrix struct {
		Result struct {
			Stacks []struct {
				Stack, Directory string
				Depth            int
			}
		}
	}
	r := h.mustRunEnv(root, env, "stacks", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &matrix); err != nil {
		t.Fatal(err)
	}
	layers := map[int][]string{}
	deepest := 0
	for _, s := range matrix.Result.Stacks {
		layers[s.Depth] = append(layers[s.Depth], s.Directory)
		deepest = max(deepest, s.Depth)
	}
	if d := cmp.Diff(map[int][]string{0: {"stacks/docs", "stacks/network"}, 1: {"stacks/app"}}, layers); d != "" {
		t.Fatalf("layers (-want +got):\n%s", d)
	}
	for depth := 0; depth <= deepest; depth++ {
		jobs := layers[depth]
		results := h.parallelEnv(root, len(jobs), env, func(i int) []string {
			return []string{"apply", "--chdir", jobs[i], "--branch", "main", storeFlag}
		})
		for i, r := range results {
			if r.exit != 0 {
				t.Fatalf("job %s of layer %d: exit %d\n%s\n%s", jobs[i], depth, r.exit, r.stdout, r.stderr)
			}
		}
	}
	if got := appOutputs(t, h, root, storeFlag, "main"); got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" {
		t.Errorf("app's outputs after the matrix = %v, want network's of main", got)
	}
}

// TestE2EMultiStackInterrupt: an interrupt of apply --all reaches the
// running stacks as an interrupt (network, waiting for a lease another
// holder keeps, ends INTERRUPTED and takes nothing), starts nothing more
// (app is skipped), and the run still prints its one document.
func TestE2EMultiStackInterrupt(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	root := repoWith(t, multiStack)
	dir := filepath.Join(t.TempDir(), "store")
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	netKey := store.Key{Stack: "github.com/acme/infra//stacks/network", Environment: "preview", Scope: "main"}
	g, err := st.Acquire(t.Context(), netKey, "someone-else", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cmd := h.command(root, []string{deriveStack}, "apply", "--all", "--branch", "main", "--store=file://"+dir, "--wait", "--wait-timeout", "10m", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// docs runs beside network; once it applied and released its lease,
	// network has started.
	docsKey := store.Key{Stack: "github.com/acme/infra//stacks/docs", Environment: "preview", Scope: "main"}
	for {
		rec, err := st.LatestReceipt(t.Context(), docsKey)
		l, lerr := st.ReadLease(t.Context(), docsKey)
		if err == nil && lerr == nil && rec != nil && rec.Status == receipt.StatusApplied && l.Holder == "" {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("apply --all ended before docs applied: %v\n%s\n%s", err, stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond): // polling a condition, not a deadline
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("the interrupted apply --all exited 0")
	}
	r := result{exit: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if r.exit == 0 {
		t.Fatalf("interrupted apply --all exited 0\n%s", r.stderr)
	}
	if d := cmp.Diff([]string{"stacks/docs succeeded", "stacks/network failed", "stacks/app skipped"}, stackRows(t, r, "status")); d != "" {
		t.Errorf("statuses (-want +got):\n%s\n%s", d, r.stderr)
	}
	stacks := r.envelope(t)["result"].(map[string]any)["stacks"].([]any)
	if e, _ := stacks[1].(map[string]any)["error"].(map[string]any); e["code"] != "INTERRUPTED" {
		t.Errorf("network's error = %v, want INTERRUPTED", e)
	}
	if l, err := st.ReadLease(t.Context(), netKey); err != nil || l.Holder != "someone-else" || l.Token != g.Lease.Token {
		t.Errorf("network's lease after the interrupt = %+v, %v; want the other holder's, untouched", l, err)
	}
}

// TestE2EMultiStackReview: a run of many stacks makes one review: one
// sticky comment per pull request, environment and command (a diagram of the
// stacks, a table, each stack's own summary), one step summary, one
// --summary file and one GitLab report of all the stacks; a single-stack
// run beside it keeps its own comment. No sensitive value appears.
func TestE2EMultiStackReview(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	srv := commenttest.New("gh-token")
	defer srv.Close()
	root := repoWith(t, multiStack)
	out := t.TempDir()
	step := filepath.Join(out, "step-summary.md")
	env := []string{deriveStack,
		"GITHUB_ACTIONS=true", rulesFromCheckout, "GITHUB_REPOSITORY=acme/infra", "GITHUB_TOKEN=gh-token", "GITHUB_API_URL=" + srv.URL,
		"GITHUB_SERVER_URL=https://github.example", "GITHUB_RUN_ID=77", "GITHUB_STEP_SUMMARY=" + step,
		"GITHUB_REF_NAME=7/merge", "GITHUB_HEAD_REF=feat-x", "GITHUB_EVENT_NAME=pull_request",
		"SPONSON_STORE=file://" + filepath.Join(t.TempDir(), "store"),
	}
	h.mustRunEnv(root, env, "apply", "--all", "--pr", "7", "--comment", "--summary", filepath.Join(out, "apply.md"))
	r := h.mustRunEnv(root, env, "plan", "--all", "--pr", "7", "--comment", "--summary", filepath.Join(out, "plan.md"),
		"--gitlab-report", filepath.Join(out, "report.json"))
	cs := srv.Comments("acme/infra#7")
	if len(cs) != 2 {
		t.Fatalf("%d comments after apply --all and plan --all, want the apply's and the plan's\n%s", len(cs), r.stderr)
	}
	if !strings.Contains(cs[0].Body, "### sponson apply --all · preview · pr-7: 3 stacks") {
		t.Errorf("the first comment is not the apply's review:\n%s", cs[0].Body)
	}
	body := cs[1].Body
	for _, want := range []string{
		"### sponson plan --all · preview · pr-7: 3 stacks", "```mermaid", "  s1 --> s2\n",
		"| `stacks/app` | succeeded | no changes |",
		"<details><summary><code>stacks/network</code>: no changes</summary>",
		"no changes — sponson plan · ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<!-- sponson-summary stack=github.com") {
		t.Errorf("the review carries a stack's marker:\n%s", body)
	}
	if got := string(readFile(t, filepath.Join(out, "report.json"))); got != `{"create":0,"update":0,"delete":0}`+"\n" {
		t.Errorf("GitLab report of the plan %s", got)
	}
	texts := map[string]string{"step": string(readFile(t, step)), "apply": string(readFile(t, filepath.Join(out, "apply.md"))), "plan": string(readFile(t, filepath.Join(out, "plan.md"))), "comment": body}
	if n := strings.Count(texts["step"], "### sponson apply --all") + strings.Count(texts["step"], "### sponson plan --all"); n != 2 {
		t.Errorf("the step summary holds %d reviews, want the 2 runs:\n%s", n, texts["step"])
	}
	if !strings.HasPrefix(texts["apply"], "### sponson apply --all · preview · pr-7: 3 stacks") || !strings.Contains(texts["apply"], "| `stacks/network` | succeeded | 2 to add, 0 to change, 0 to destroy |") {
		t.Errorf("the --summary of apply --all:\n%s", texts["apply"])
	}
	for name, txt := range texts {
		if strings.Contains(txt, "s3cr3t") {
			t.Errorf("the %s holds network's sensitive output", name)
		}
	}
	// A single-stack run keeps its own comment.
	h.mustRunEnv(root, env, "plan", "--chdir", "stacks/app", "--pr", "7", "--comment")
	if n := len(srv.Comments("acme/infra#7")); n != 3 {
		t.Errorf("%d comments after a single-stack plan, want the two reviews (apply, plan) and the stack's own", n)
	}

	// A change to network's cidr makes its vpc_id known only after its
	// apply: the comment sent to the host marks app's plan provisional, at
	// app's change, and not docs's (issue 49 item 2).
	netFile := filepath.Join(root, "stacks/network/main.tf")
	if err := os.WriteFile(netFile, bytes.Replace(readFile(t, netFile), []byte("10.0.0.0/16"), []byte("10.9.0.0/16"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustRunEnv(root, env, "plan", "--all", "--pr", "7", "--comment")
	body = ""
	for _, c := range srv.Comments("acme/infra#7") {
		if strings.Contains(c.Body, "### sponson plan --all") {
			body = c.Body
		}
	}
	if !strings.Contains(body, "**Provisional:** `vpc_id` of `github.example/acme/infra//stacks/network` will be known only after that stack's apply") ||
		!regexp.MustCompile(`terraform_data\.app +# update in-place; provisional: derives from another stack's output known only after its apply`).MatchString(body) {
		t.Errorf("the plan's comment does not mark app's change provisional:\n%s", body)
	}
	if regexp.MustCompile(`terraform_data\.(docs|vpc) .*provisional`).MatchString(body) {
		t.Errorf("the comment marks a change provisional that derives from nothing provisional:\n%s", body)
	}
}
