package runctx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckout(t *testing.T) {
	t.Parallel()
	fork := `{"number": 5, "pull_request": {"number": 5, "head": {"sha": "` + shaHead + `", "repo": {"id": 2}}, "base": {"repo": {"id": 1}}}}`
	same := `{"number": 5, "pull_request": {"number": 5, "head": {"sha": "` + shaHead + `", "repo": {"id": 1}}, "base": {"repo": {"id": 1}}}}`
	comment := `{"issue": {"number": 9, "pull_request": {"url": "x"}}}`
	onIssue := `{"issue": {"number": 9}}`
	for _, tc := range []struct {
		name, event, payload string
		commit, prHead       string
		applies              bool
		problem              string // a part of it; "" none
	}{
		{"comment, head checked out", "issue_comment", comment, shaHead, shaHead, true, ""},
		{"comment, default branch checked out", "issue_comment", comment, shaMerge, shaHead, true, "not aaaaaaaaaaaa, the head of pull request #9"},
		{"comment, head unknown", "issue_comment", comment, shaMerge, "", true, ""},
		{"comment on an issue", "issue_comment", onIssue, shaMerge, "", false, ""},
		{"target, base checked out", "pull_request_target", fork, shaMerge, "", true, ""},
		{"target, fork's head checked out", "pull_request_target", fork, shaHead, "", true, "from a fork"},
		{"target, own branch's head", "pull_request_target", same, shaHead, "", true, ""},
		{"pull_request", "pull_request", fork, shaHead, "", false, ""},
	} {
		path := filepath.Join(t.TempDir(), "event.json")
		if err := os.WriteFile(path, []byte(tc.payload), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": tc.event, "GITHUB_EVENT_PATH": path}
		c, ok := CheckoutOf(fakeSources(env, nil))
		if ok != tc.applies {
			t.Errorf("%s: applies %v, want %v", tc.name, ok, tc.applies)
			continue
		}
		if !ok {
			continue
		}
		got := c.Problem(tc.commit, tc.prHead)
		if (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
			t.Errorf("%s: problem %q, want one with %q", tc.name, got, tc.problem)
		}
	}
	if _, ok := CheckoutOf(fakeSources(map[string]string{"GITHUB_EVENT_NAME": "issue_comment"}, nil)); ok {
		t.Errorf("a rule outside GitHub Actions")
	}
}
