package runner

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/github"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

// checkCheckout checks that the commit a run checked out is what its event
// runs (runctx.Checkout): a warning, or with strict a refusal
// (CHECKOUT_NOT_HEAD) before anything is read or leased. A comment-triggered
// run asks the GitHub API for the pull request's head; when it cannot,
// that is a warning too, and strict refuses: it was asked to be sure.
func checkCheckout(ctx context.Context, getenv func(string) string, hc *http.Client, src runctx.Sources, c runctx.Context, strict bool) (string, error) {
	co, ok := runctx.CheckoutOf(src)
	if !ok {
		return "", nil
	}
	head, why := co.Head, ""
	if co.Event == runctx.EventIssueComment {
		head, why = pullRequestHead(ctx, getenv, hc, co.PullRequest)
	}
	problem := co.Problem(c.Commit, head)
	if problem == "" && co.Event == runctx.EventIssueComment && (head == "" || c.Commit == "") {
		if c.Commit == "" {
			why = "the checkout's HEAD is unknown (no git)"
		}
		problem = fmt.Sprintf("cannot check that this comment-triggered run (issue_comment) checked out the head of pull request #%d: %s", co.PullRequest, why)
	}
	if problem == "" {
		return "", nil
	}
	if strict {
		return "", errcode.New(errcode.CheckoutNotHead, "%s", problem).
			WithHint("Check out the pull request's head (actions/checkout with ref: refs/pull/N/head) in comment-triggered jobs, and never a fork's head in pull_request_target jobs.").
			With("event", co.Event).With("pullRequest", co.PullRequest).With("commit", c.Commit).With("head", head)
	}
	return problem + " (--strict-checkout refuses it)", nil
}

// pullRequestHead asks the GitHub API for the head commit of pull request n
// of GITHUB_REPOSITORY; on failure it returns "" and why.
func pullRequestHead(ctx context.Context, getenv func(string) string, hc *http.Client, n int) (string, string) {
	repo := strings.TrimSpace(getenv("GITHUB_REPOSITORY"))
	token := strings.TrimSpace(getenv("GITHUB_TOKEN"))
	if repo == "" || token == "" {
		return "", "set GITHUB_TOKEN (pull-requests: read) so that sponson can read the pull request's head"
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, CommentTimeout)
	defer cancel()
	c := &github.Client{BaseURL: getenv("GITHUB_API_URL"), Token: token, HTTP: hc}
	sha, err := c.PullRequestHead(ctx, repo, n)
	if err != nil {
		return "", err.Error()
	}
	return sha, ""
}
