package runctx

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// gitRepo creates a repository in a temporary directory with git isolated
// from the user's and the system's configuration, and returns a function
// that runs git in it.
func gitRepo(t *testing.T, branch string) (string, func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "gitconfig"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", branch)
	return dir, run
}

// TestProcessSourcesGit runs Detect against real repositories. Only Git is
// real: the environment stays an empty fake, since CI sets GITHUB_* and the
// like.
func TestProcessSourcesGit(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }

	t.Run("branch with commits and origin/HEAD", func(t *testing.T) {
		t.Parallel()
		dir, git := gitRepo(t, "feat/x")
		git("commit", "-q", "--allow-empty", "-m", "first")
		head := git("rev-parse", "HEAD")
		git("update-ref", "refs/remotes/origin/trunk", "HEAD")
		git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")

		src := ProcessSources(dir)
		src.Getenv = noEnv
		got, err := Detect(Flags{}, src)
		if err != nil {
			t.Fatal(err)
		}
		want := Context{
			Environment: "preview", Scope: "branch-feat-x", Branch: "feat/x", Commit: head,
			DefaultBranch: "trunk", Source: "git",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Detect() mismatch (-want +got):\n%s", diff)
		}
		if len(head) != 40 {
			t.Errorf("commit %q is not a full sha", head)
		}
	})

	t.Run("unborn branch", func(t *testing.T) {
		t.Parallel()
		dir, _ := gitRepo(t, "feat/new")
		src := ProcessSources(dir)
		src.Getenv = noEnv
		got, err := Detect(Flags{}, src)
		if err != nil {
			t.Fatal(err)
		}
		want := Context{Environment: "preview", Scope: "branch-feat-new", Branch: "feat/new", Source: "git"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Detect() mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("detached HEAD", func(t *testing.T) {
		t.Parallel()
		dir, git := gitRepo(t, "main")
		git("commit", "-q", "--allow-empty", "-m", "first")
		git("checkout", "-q", "--detach")
		src := ProcessSources(dir)
		src.Getenv = noEnv
		_, err := Detect(Flags{}, src)
		if !errcode.Is(err, errcode.CtxNull) {
			t.Fatalf("Detect() error = %v, want CTX_NULL", err)
		}
		if !strings.Contains(err.Error(), "detached") {
			t.Errorf("error %q does not say HEAD is detached", err)
		}
	})

	t.Run("not a repository", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		dir := t.TempDir()
		if out, err := ProcessSources(dir).Git("rev-parse", "HEAD"); err == nil {
			t.Fatalf("Git(rev-parse HEAD) outside a repository = %q, want an error", out)
		}
		src := ProcessSources(dir)
		src.Getenv = noEnv
		if _, err := Detect(Flags{}, src); !errcode.Is(err, errcode.CtxNull) {
			t.Fatalf("Detect() error = %v, want CTX_NULL", err)
		}
	})
}

// TestLocalGitStarts: git is started only for what it can answer: once
// outside a repository, once for the branch and commit of a checkout, and
// once more for the remote's default branch (docs/design.md §8).
func TestLocalGitStarts(t *testing.T) {
	count := func(git map[string]string) []string {
		t.Helper()
		s := fakeSources(map[string]string{}, git)
		inner := s.Git
		var calls []string
		s.Git = func(args ...string) (string, error) {
			calls = append(calls, strings.Join(args, " "))
			return inner(args...)
		}
		if _, err := Detect(Flags{Environment: "preview", Scope: "s"}, s); err != nil {
			t.Fatal(err)
		}
		return calls
	}
	if calls := count(map[string]string{}); len(calls) != 1 {
		t.Errorf("outside a repository git started %d times: %q", len(calls), calls)
	}
	if calls := count(gitOn("main", "abc123", "main")); len(calls) != 2 {
		t.Errorf("in a checkout git started %d times: %q", len(calls), calls)
	}
}
