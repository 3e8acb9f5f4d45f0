package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestE2EOlderCommit: in one scope, an apply of an older commit after a
// newer one is refused before the engine runs, leaving the scope's state and
// receipt unchanged byte for byte; --allow-older-commit rolls it back and
// says so in the receipt; a commit git cannot place warns and proceeds; a
// destroy is never refused.
func TestE2EOlderCommit(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	commit := func(input string) string {
		t.Helper()
		tf := "resource \"terraform_data\" \"app\" {\n  input = \"" + input + "\"\n}\n"
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(tf), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "main.tf", ".gitignore")
		git("commit", "--quiet", "-m", input)
		return git("rev-parse", "HEAD")
	}
	git("init", "--quiet")
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".sponson/\n.terraform/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v1 := commit("v1")
	v2 := commit("v2")
	input := func() any {
		t.Helper()
		return dynamic(stateResources(t, dir, "preview", "pr-1")["terraform_data.app"]["input"])
	}
	scopeFiles := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, name := range []string{"latest.json", "terraform.tfstate"} {
			out[name] = string(readFile(t, filepath.Join(scopeDir(dir, "preview", "pr-1"), name)))
		}
		return out
	}

	// The newer commit applies first (the run that queued later finished
	// first, or the old workflow is re-run afterwards).
	h.mustRun(dir, "apply", "--pr", "1")
	newer := latestReceipt(t, dir, "preview", "pr-1")
	if newer.Commit != v2 || input() != "v2" {
		t.Fatalf("after applying v2: receipt commit %s, input %v", newer.Commit, input())
	}

	git("checkout", "--quiet", "--detach", v1)
	before := scopeFiles()
	r := h.run(dir, nil, "apply", "--pr", "1", "--json")
	if r.exit != 2 || r.code(t) != "OLDER_COMMIT" {
		t.Fatalf("apply of the older commit: exit %d %q\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	msg, _ := r.envelope(t)["error"].(map[string]any)["message"].(string)
	for _, want := range []string{v1[:7], v2[:7], newer.RunID} {
		if !strings.Contains(msg, want) {
			t.Errorf("OLDER_COMMIT message %q does not name %s", msg, want)
		}
	}
	if strings.Contains(r.stderr, "Terraform used the selected providers") || strings.Contains(r.stderr, "OpenTofu used the selected providers") {
		t.Errorf("the engine planned before the refusal:\n%s", r.stderr)
	}
	if diff := cmp.Diff(before, scopeFiles()); diff != "" {
		t.Errorf("the refused run changed the scope (-before +after):\n%s", diff)
	}

	// A plan only warns.
	p := h.mustRun(dir, "plan", "--pr", "1")
	if !strings.Contains(p.stderr, "OLDER_COMMIT") {
		t.Errorf("plan of the older commit does not warn:\n%s", p.stderr)
	}

	// Rolling back on purpose.
	h.mustRun(dir, "apply", "--pr", "1", "--allow-older-commit")
	back := latestReceipt(t, dir, "preview", "pr-1")
	if input() != "v1" || back.Commit != v1 || back.AllowedOlderCommit == nil ||
		back.AllowedOlderCommit.Newer != v2 || back.AllowedOlderCommit.NewerRun != newer.RunID {
		t.Fatalf("after --allow-older-commit: input %v, receipt commit %s, allowOlderCommit %+v", input(), back.Commit, back.AllowedOlderCommit)
	}

	// Forward again: v2 descends from v1.
	git("checkout", "--quiet", "main")
	h.mustRun(dir, "apply", "--pr", "1")
	if input() != "v2" {
		t.Fatalf("forward to v2: input %v", input())
	}

	// A commit the clone does not have: git cannot tell, so warn and go on.
	unknown := strings.Repeat("f", 40)
	u := h.mustRun(dir, "apply", "--pr", "1", "--commit", unknown)
	if !strings.Contains(u.stderr, "cannot tell whether commit") {
		t.Errorf("an unknown commit does not warn:\n%s", u.stderr)
	}

	// A destroy from the older commit is never refused.
	h.mustRun(dir, "apply", "--pr", "1")
	git("checkout", "--quiet", "--detach", v1)
	h.mustRun(dir, "destroy", "--pr", "1")
	if got := latestReceipt(t, dir, "preview", "pr-1"); got.Status != "destroyed" {
		t.Errorf("destroy from the older commit: status %s", got.Status)
	}
}
