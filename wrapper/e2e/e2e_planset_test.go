package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// planSetNetworkTF is the upstream of the plan-set tests: a local_file and
// an output whose value the configuration gives (known at plan time), and
// a random_id whose hex is known only after its apply when it is replaced
// (keepers.gen).
func planSetNetworkTF(name, gen string) string {
	return `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    local   = { source = "hashicorp/local", version = "2.9.0" }
    random  = { source = "hashicorp/random", version = "3.9.0" }
  }
}

variable "out" { type = string }

resource "sponson_scope" "this" {}

resource "random_id" "net" {
  byte_length = 4
  keepers     = { gen = "` + gen + `" }
}

resource "local_file" "net" {
  filename = "${var.out}/network-${sponson_scope.this.name}.txt"
  content  = "` + name + `"
}

output "name" {
  value = "` + name + `"
}

output "id" {
  value = random_id.net.hex
}
`
}

// planSetAppTF reads network's outputs through sponson_outputs: the known
// name, and with readID the id (provisional when network replaces it).
func planSetAppTF(readID bool) string {
	content := `"app on ${data.sponson_outputs.net.values.name}"`
	if readID {
		content = `"app on ${data.sponson_outputs.net.values.name} ${data.sponson_outputs.net.values.id}"`
	}
	return `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    local   = { source = "hashicorp/local", version = "2.9.0" }
  }
}

variable "out" { type = string }

resource "sponson_scope" "this" {}

data "sponson_outputs" "net" {
  stack = "stacks/network"
}

resource "local_file" "app" {
  filename = "${var.out}/app-${sponson_scope.this.name}.txt"
  content  = ` + content + `
}
`
}

// commitFiles writes files into the repository at root and commits them.
func commitFiles(t *testing.T, root, msg string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		writeFile(t, filepath.Join(root, filepath.FromSlash(name)), content)
	}
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "--quiet", "-m", msg)
}

// TestE2EPlanSetAppliesAsReviewed: `plan --all -out DIR` saves one sealed
// plan per stack and a manifest; `apply DIR` applies exactly those plans in
// order. The dependent's plan read the upstream's planned (known) output,
// so the upstream's apply of its own plan in DIR does not make it stale,
// and what it applies is what the review showed. A plan whose upstream was
// applied by another run in between is refused (PLAN_STALE) and its
// dependent skipped; a dependent that read a value known only after the
// upstream's apply (provisional) is refused after that apply; a plan file
// swapped after the review is refused before anything runs (PLAN_CORRUPT).
// Real hashicorp/local and random providers.
func TestE2EPlanSetAppliesAsReviewed(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, out := removedStacksEnv(t)
	root := monorepo(t, map[string]string{
		"stacks/network/main.tf": planSetNetworkTF("net-v1", "1"),
		"stacks/app/main.tf":     planSetAppTF(false),
	})
	h.mustRunEnv(root, env, "apply", "--all")
	if got := string(readFile(t, filepath.Join(out, "app-main.txt"))); got != "app on net-v1" {
		t.Fatalf("app's file after apply --all = %q", got)
	}

	// The change: network's output changes, app's file with it.
	commitFiles(t, root, "v2", map[string]string{"stacks/network/main.tf": planSetNetworkTF("net-v2", "1")})
	plans := filepath.Join(t.TempDir(), "plans")
	r := h.mustRunEnv(root, env, "plan", "--all", "-out", plans)
	if !strings.Contains(r.stdout, "saved the plans of 2 stacks to "+plans) {
		t.Errorf("plan --all -out does not say where the plans went:\n%s", r.stdout)
	}
	for _, f := range []string{"sponson-plans", "stacks_2fnetwork.tfplan", "stacks_2fapp.tfplan"} {
		fi, err := os.Stat(filepath.Join(plans, f))
		if err != nil {
			t.Fatalf("plan --all -out wrote no %s: %v", f, err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if got := string(readFile(t, filepath.Join(out, "app-main.txt"))); got != "app on net-v1" {
		t.Fatalf("plan --all -out changed app's file: %q", got)
	}

	r = h.mustRunEnv(root, env, "apply", plans, "--json")
	for _, d := range []string{"stacks/network", "stacks/app"} {
		if e := stackEntry(t, r, d); e["status"] != "succeeded" {
			t.Errorf("apply DIR ran %s as %v", d, e)
		}
	}
	if got := string(readFile(t, filepath.Join(out, "app-main.txt"))); got != "app on net-v2" {
		t.Errorf("app's file after apply DIR = %q, want the reviewed %q", got, "app on net-v2")
	}
	if got := string(readFile(t, filepath.Join(out, "network-main.txt"))); got != "net-v2" {
		t.Errorf("network's file after apply DIR = %q", got)
	}

	// Another run applies network between the plan and its apply.
	commitFiles(t, root, "v3", map[string]string{"stacks/network/main.tf": planSetNetworkTF("net-v3", "1")})
	stale := filepath.Join(t.TempDir(), "plans")
	h.mustRunEnv(root, env, "plan", "--all", "-out", stale)
	h.mustRunEnv(filepath.Join(root, "stacks", "network"), env, "apply")
	r = h.run(root, env, "apply", stale, "--json")
	if r.exit != 2 || r.code(t) != "PLAN_STALE" {
		t.Fatalf("apply DIR after another run applied network: exit %d code %q, want 2 PLAN_STALE\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if e := stackEntry(t, r, "stacks/app"); e["status"] != "skipped" {
		t.Errorf("app after network's stale plan: %v, want skipped", e)
	}
	if got := string(readFile(t, filepath.Join(out, "app-main.txt"))); got != "app on net-v2" {
		t.Errorf("a refused plan set changed app's file: %q", got)
	}
	h.mustRunEnv(root, env, "apply", "--all")

	// A dependent that read a provisional value: network replaces its
	// random_id, whose new hex app reads.
	commitFiles(t, root, "provisional", map[string]string{
		"stacks/network/main.tf": planSetNetworkTF("net-v3", "2"),
		"stacks/app/main.tf":     planSetAppTF(true),
	})
	prov := filepath.Join(t.TempDir(), "plans")
	review := filepath.Join(t.TempDir(), "review.md")
	h.mustRunEnv(root, env, "plan", "--all", "-out", prov, "--summary", review)
	// The review marks app's change, which derives from the id, at its line
	// (issue 49 item 2), and not network's own.
	md := string(readFile(t, review))
	if !regexp.MustCompile(`local_file\.app +# [^\n]*; provisional: derives from another stack's output known only after its apply`).MatchString(md) ||
		regexp.MustCompile(`(random_id|local_file)\.net +# [^\n]*provisional`).MatchString(md) {
		t.Errorf("the review does not mark app's change alone provisional:\n%s", md)
	}
	r = h.run(root, env, "apply", prov, "--json")
	if r.exit != 2 || r.code(t) != "PLAN_STALE" {
		t.Fatalf("apply DIR with a provisional read: exit %d code %q, want 2 PLAN_STALE\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if e := stackEntry(t, r, "stacks/network"); e["status"] != "succeeded" {
		t.Errorf("network's plan was not applied: %v", e)
	}
	if e := stackEntry(t, r, "stacks/app"); e["status"] != "failed" || !strings.Contains(r.stdout, "changed since the plan was made") {
		t.Errorf("app's provisional plan: %v, want refused as stale\n%s", e, r.stdout)
	}

	// A plan swapped after the review: nothing runs.
	commitFiles(t, root, "v4", map[string]string{"stacks/network/main.tf": planSetNetworkTF("net-v4", "2")})
	swapped := filepath.Join(t.TempDir(), "plans")
	h.mustRunEnv(root, env, "plan", "--all", "-out", swapped)
	other := filepath.Join(t.TempDir(), "one.tfplan")
	h.mustRunEnv(filepath.Join(root, "stacks", "network"), env, "plan", "-out", other)
	if err := os.Rename(other, filepath.Join(swapped, "stacks_2fnetwork.tfplan")); err != nil {
		t.Fatal(err)
	}
	r = h.run(root, env, "apply", swapped, "--json")
	if r.exit != 2 || r.code(t) != "PLAN_CORRUPT" || !strings.Contains(r.stdout, "is not the one the manifest lists") {
		t.Fatalf("apply DIR with a swapped plan: exit %d code %q, want 2 PLAN_CORRUPT\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if got := string(readFile(t, filepath.Join(out, "network-main.txt"))); got != "net-v3" {
		t.Errorf("a refused plan set changed network's file: %q", got)
	}

	// -out into a directory that holds files is refused before any plan.
	r = h.run(root, env, "plan", "--all", "-out", swapped, "--json")
	if r.exit != 2 || r.code(t) != "USAGE" || !strings.Contains(r.stdout, "is not empty") {
		t.Errorf("plan --all -out into a used directory: exit %d code %q\n%s", r.exit, r.code(t), r.stdout)
	}
}
