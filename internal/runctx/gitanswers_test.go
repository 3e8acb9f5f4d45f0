package runctx

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitAnswersAsGitWould: the answers a run of many stacks shares are
// git's own in every directory of the repository, failures included (no
// origin remote), and no git runs for them; a directory of another
// repository, or a question not shared, is asked of git.
func TestGitAnswersAsGitWould(t *testing.T) {
	t.Parallel()
	top, git := gitRepo(t, "feat/x")
	git("commit", "-q", "--allow-empty", "-m", "first")
	git("update-ref", "refs/remotes/origin/trunk", "HEAD")
	git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
	sub := filepath.Join(top, "stacks", "app")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	v := GitAnswers(top)
	if v == "" {
		t.Fatal("GitAnswers of a repository's root shared nothing")
	}
	var a gitAnswers
	if err := json.Unmarshal([]byte(v), &a); err != nil {
		t.Fatal(err)
	}
	var asked [][]string
	counting := func(args ...string) (string, error) {
		asked = append(asked, args)
		return "", errors.New("git was asked")
	}
	shared := answered(sub, &a, counting)
	fromGit := askGit(sub)
	for _, q := range repoQuestions {
		wantOut, wantErr := fromGit(q...)
		gotOut, gotErr := shared(q...)
		if gotOut != wantOut || (gotErr == nil) != (wantErr == nil) || (wantErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("git %s in %s: shared %q, %v; git says %q, %v", strings.Join(q, " "), sub, gotOut, gotErr, wantOut, wantErr)
		}
	}
	if len(asked) != 0 {
		t.Errorf("git ran for shared questions: %v", asked)
	}
	if _, err := fromGit("remote", "get-url", "origin"); err == nil {
		t.Fatal("the repository has an origin remote: the failure case is not covered")
	}

	if _, err := shared("rev-parse", "--git-dir"); err == nil || len(asked) != 1 {
		t.Errorf("a question not shared: asked %v, err %v; want it asked of git", asked, err)
	}
	other := t.TempDir()
	if _, err := answered(other, &a, counting)("rev-parse", "HEAD"); err == nil || len(asked) != 2 {
		t.Errorf("a directory outside the repository: asked %v, err %v; want it asked of git", asked, err)
	}
	if GitAnswers(other) != "" {
		t.Error("GitAnswers outside a repository shared answers")
	}
	if GitAnswers(sub) != "" {
		t.Error("GitAnswers below a repository's root shared answers: they are the root's to give")
	}
}
