package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/comment/commenttest"
)

// TestE2EChatOpsCheckout: a comment-triggered run (issue_comment) whose
// checkout is the default branch, not the pull request's head (which the
// local API stand-in names), is warned and, with --strict-checkout, refused
// before anything is written (CHECKOUT_NOT_HEAD); once the head is checked
// out it runs without a word and records that commit. A pull_request_target
// run records the commit its checkout holds, not the pull request's head.
func TestE2EChatOpsCheckout(t *testing.T) {
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
	mainSHA := commit("main")
	git("checkout", "--quiet", "-b", "feature")
	headSHA := commit("feature")
	git("checkout", "--quiet", "main")

	srv := commenttest.New("gh-token")
	defer srv.Close()
	srv.SetPullRequest("acme/infra", 9, headSHA)
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{"action": "created", "issue": {"number": 9, "pull_request": {"url": "x"}}, "comment": {"body": "/apply"}, "repository": {"default_branch": "main"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	gh := []string{
		"GITHUB_ACTIONS=true", "GITHUB_REPOSITORY=acme/infra", "GITHUB_TOKEN=gh-token", "GITHUB_API_URL=" + srv.URL, rulesFromCheckout,
		"GITHUB_EVENT_NAME=issue_comment", "GITHUB_EVENT_PATH=" + event, "GITHUB_REF=refs/heads/main", "GITHUB_REF_NAME=main", "GITHUB_SHA=" + mainSHA,
	}

	// The default checkout: main's configuration into pr-9.
	strict := h.run(dir, gh, "apply", "--strict-checkout", "--json")
	if strict.exit != 2 || !strings.Contains(strict.stdout, `"code": "CHECKOUT_NOT_HEAD"`) {
		t.Fatalf("strict apply of main's checkout: exit %d\n%s\n%s", strict.exit, strict.stdout, strict.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sponson")); err == nil {
		if _, err := os.Stat(scopeDir(dir, "preview", "pr-9")); err == nil {
			t.Errorf("the refused apply left a scope behind")
		}
	}
	warned := h.mustRunEnv(dir, gh, "plan")
	if !strings.Contains(warned.stderr, "not "+headSHA[:12]+", the head of pull request #9") {
		t.Errorf("the plan of main's checkout in pr-9 was not warned:\n%s", warned.stderr)
	}

	// The pull request's head checked out, as the template does.
	git("checkout", "--quiet", "--detach", headSHA)
	ok := h.mustRunEnv(dir, gh, "apply", "--strict-checkout", "--json")
	if strings.Contains(ok.stderr, "pull request #9") {
		t.Errorf("a warning with the head checked out:\n%s", ok.stderr)
	}
	if !strings.Contains(ok.stdout, `"commit": "`+headSHA+`"`) || !strings.Contains(ok.stdout, `"scope": "pr-9"`) {
		t.Errorf("the apply did not record the head in pr-9:\n%s", ok.stdout)
	}

	// pull_request_target: the base's configuration runs, and that is the
	// commit recorded, not the payload's head.
	git("checkout", "--quiet", "main")
	target := filepath.Join(t.TempDir(), "target.json")
	if err := os.WriteFile(target, []byte(`{"action": "synchronize", "number": 9, "pull_request": {"number": 9, "head": {"sha": "`+headSHA+`", "ref": "feature", "repo": {"id": 1}}, "base": {"repo": {"id": 1}}}, "repository": {"id": 1, "default_branch": "main"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pt := []string{"GITHUB_ACTIONS=true", "GITHUB_REPOSITORY=acme/infra", rulesFromCheckout, "GITHUB_EVENT_NAME=pull_request_target", "GITHUB_EVENT_PATH=" + target,
		"GITHUB_REF=refs/heads/main", "GITHUB_REF_NAME=main", "GITHUB_HEAD_REF=feature", "GITHUB_SHA=" + mainSHA}
	p := h.mustRunEnv(dir, pt, "plan", "--json")
	if !strings.Contains(p.stdout, `"commit": "`+mainSHA+`"`) {
		t.Errorf("pull_request_target recorded another commit than the checkout's %s:\n%s", mainSHA, p.stdout)
	}
}
