package comment_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/comment"
	"github.com/sponson/terraform-provider-sponson/internal/comment/commenttest"
	"github.com/sponson/terraform-provider-sponson/internal/github"
	"github.com/sponson/terraform-provider-sponson/internal/gitlab"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

const token = "t0ken-never-printed"

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// hosts gives one Host of each kind on srv, for the same pull request 42.
func hosts(t *testing.T, srv *commenttest.Server) map[string]struct {
	host   comment.Host
	thread string
} {
	t.Helper()
	gh, err := comment.FromEnv(comment.Env{PullRequest: 42, Getenv: env(map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/infra", "GITHUB_TOKEN": token,
		"GITHUB_API_URL": srv.URL, "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "99",
	})})
	if err != nil {
		t.Fatal(err)
	}
	gl, err := comment.FromEnv(comment.Env{Getenv: env(map[string]string{
		"GITLAB_CI": "true", "CI_PROJECT_ID": "7", "CI_MERGE_REQUEST_IID": "42", "CI_JOB_TOKEN": token,
		"CI_API_V4_URL": srv.GitLabURL(), "CI_JOB_URL": "https://gitlab.example/acme/infra/-/jobs/5",
	})})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]struct {
		host   comment.Host
		thread string
	}{"github": {gh, "acme/infra#42"}, "gitlab": {gl, "7!42"}}
}

func body(stack, env, text string) string {
	return summary.Run{Command: "plan", Stack: stack, Environment: env, Scope: "pr-42", RunID: "run-1", PlanText: text}.
		Markdown(summary.Options{Marker: true})
}

// TestStickyFlow: the first run posts, the next ones update the same
// comment in place, another stack or environment gets its own, and a
// comment of someone else (even quoting the marker) is left alone.
func TestStickyFlow(t *testing.T) {
	t.Parallel()
	srv := commenttest.New(token)
	defer srv.Close()
	srv.PerPage = 2 // so that finding the marker needs several pages
	for name, h := range hosts(t, srv) {
		t.Run(name, func(t *testing.T) {
			srv.Seed(h.thread, "LGTM")
			srv.Seed(h.thread, "> "+summary.Marker("app", "preview")+"\n> quoted by a reviewer")
			srv.Seed(h.thread, "another comment")
			ctx := context.Background()
			post := func(stack, envName, text string) comment.Outcome {
				t.Helper()
				out, err := comment.Sticky(ctx, h.host, summary.Marker(stack, envName), body(stack, envName, text))
				if err != nil {
					t.Fatalf("Sticky: %v", err)
				}
				return out
			}
			if got := post("app", "preview", "first"); got != comment.Created {
				t.Errorf("first post: %s", got)
			}
			if got := post("app", "preview", "second"); got != comment.Updated {
				t.Errorf("second post: %s", got)
			}
			if got := post("app", "preview", "second"); got != comment.Unchanged {
				t.Errorf("same body again: %s", got)
			}
			if got := post("db", "preview", "other stack"); got != comment.Created {
				t.Errorf("other stack: %s", got)
			}
			if got := post("app", "production", "other env"); got != comment.Created {
				t.Errorf("other environment: %s", got)
			}
			cs := srv.Comments(h.thread)
			if len(cs) != 6 {
				t.Fatalf("%d comments, want 3 of people and 3 sticky ones", len(cs))
			}
			if !strings.Contains(cs[3].Body, "second") || strings.Contains(cs[3].Body, "first") {
				t.Errorf("the sticky comment was not updated in place: %q", cs[3].Body)
			}
			if !strings.HasPrefix(cs[1].Body, "> ") {
				t.Errorf("the reviewer's quote was changed: %q", cs[1].Body)
			}
			if !strings.Contains(cs[4].Body, "other stack") || !strings.Contains(cs[5].Body, "other env") {
				t.Errorf("per-stack and per-environment comments: %q, %q", cs[4].Body, cs[5].Body)
			}
		})
	}
}

// TestSizeCutOff: a plan far past GitHub's 65,536 characters is cut to the
// host's limit and accepted; the stand-in refuses an uncut one as GitHub
// does, so the test would fail without the cut.
func TestSizeCutOff(t *testing.T) {
	t.Parallel()
	srv := commenttest.New(token)
	defer srv.Close()
	h := hosts(t, srv)["github"]
	huge := strings.Repeat("  # terraform_data.x will be created — ünïcödé\n", 4000)
	r := summary.Run{Command: "plan", Stack: "app", Environment: "preview", Scope: "pr-42", RunID: "run-1", PlanText: huge}
	marker := summary.Marker("app", "preview")

	if _, err := comment.Sticky(context.Background(), h.host, marker, r.Markdown(summary.Options{Marker: true})); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("the stand-in took an uncut body of %d bytes (err %v)", len(r.Markdown(summary.Options{})), err)
	}
	md := r.Markdown(summary.Options{Marker: true, Limit: h.host.Limit(), FullPlanAt: h.host.FullPlanAt()})
	if _, err := comment.Sticky(context.Background(), h.host, marker, md); err != nil {
		t.Fatalf("cut summary refused: %v", err)
	}
	got := srv.Comments(h.thread)[0].Body
	if !strings.Contains(got, "full plan is in https://github.com/acme/infra/actions/runs/99") {
		t.Errorf("the cut comment does not say where the full plan is")
	}
	if h.host.Limit() != github.CommentLimit || hosts(t, srv)["gitlab"].host.Limit() != gitlab.NoteLimit {
		t.Errorf("limits")
	}
}

// TestHostFailures: 403 and 5xx are errors naming the status (the caller
// turns them into warnings), never holding the token; nothing is posted.
func TestHostFailures(t *testing.T) {
	t.Parallel()
	for _, status := range []int{403, 500, 502} {
		srv := commenttest.New(token)
		srv.Fail(status)
		for name, h := range hosts(t, srv) {
			_, err := comment.Sticky(context.Background(), h.host, summary.Marker("a", "b"), body("a", "b", "x"))
			if err == nil || !strings.Contains(err.Error(), strconv.Itoa(status)) {
				t.Errorf("%s %d: error %v", name, status, err)
			}
			if err != nil && strings.Contains(err.Error(), token) {
				t.Errorf("%s %d: the error holds the token", name, status)
			}
			if len(srv.Comments(h.thread)) != 0 {
				t.Errorf("%s %d: posted anyway", name, status)
			}
		}
		srv.Close()
	}
}

// TestMissingTokenOrTarget: FromEnv says what is missing, so that the
// caller can warn and go on.
func TestMissingTokenOrTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pr   int
		env  map[string]string
		want error
	}{
		{"github without token", 42, map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/infra"}, comment.ErrNoToken},
		{"github push, no pull request", 0, map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/infra", "GITHUB_TOKEN": "x"}, comment.ErrNoTarget},
		{"gitlab without token", 0, map[string]string{"GITLAB_CI": "true", "CI_PROJECT_ID": "7", "CI_MERGE_REQUEST_IID": "3"}, comment.ErrNoToken},
		{"gitlab branch pipeline", 0, map[string]string{"GITLAB_CI": "true", "CI_PROJECT_ID": "7", "CI_JOB_TOKEN": "x"}, comment.ErrNoTarget},
		{"no CI", 5, map[string]string{}, comment.ErrNoTarget},
	} {
		_, err := comment.FromEnv(comment.Env{PullRequest: tc.pr, Getenv: env(tc.env)})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestGitLabTokens: a token variable is sent as PRIVATE-TOKEN and wins over
// CI_JOB_TOKEN (JOB-TOKEN); a project path is one encoded segment.
func TestGitLabTokens(t *testing.T) {
	t.Parallel()
	srv := commenttest.New(token)
	defer srv.Close()
	h, err := comment.FromEnv(comment.Env{Getenv: env(map[string]string{
		"GITLAB_CI": "true", "CI_PROJECT_ID": "acme/infra", "CI_MERGE_REQUEST_IID": "9",
		"SPONSON_GITLAB_TOKEN": token, "CI_JOB_TOKEN": "wrong", "CI_API_V4_URL": srv.GitLabURL(),
	})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := comment.Sticky(context.Background(), h, summary.Marker("a", "b"), body("a", "b", "x")); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Comments("acme/infra!9")); n != 1 {
		t.Errorf("%d notes on acme/infra!9; requests %v", n, srv.Requests())
	}
}
