package runctx

import (
	"fmt"
	"strings"
)

// Checkout is what a run must check about its own checkout, for the GitHub
// events whose workflow does not run the pull request's head by itself
// (docs/design.md §2.13):
//
//   - issue_comment (ChatOps): GITHUB_SHA is the default branch's, and the
//     default checkout is the default branch: a job that does not check out
//     the pull request's head applies the default branch's configuration
//     into the pull request's scope. The payload does not name the head, so
//     Head is empty and the caller asks the host (GET pulls/N).
//   - pull_request_target: the base repository's workflow runs with its
//     secrets; checking out the head of a fork runs the fork's code with
//     them. Head is the payload's pull_request.head.sha.
type Checkout struct {
	Event       string
	PullRequest int
	Head        string
	Fork        bool
}

// Events of Checkout.
const (
	EventIssueComment      = "issue_comment"
	EventPullRequestTarget = "pull_request_target"
)

// CheckoutOf returns the checkout rule of the run's event; false when none
// applies (not GitHub Actions, another event, a comment on an issue).
func CheckoutOf(src Sources) (Checkout, bool) {
	if src.Getenv == nil {
		return Checkout{}, false
	}
	env := func(k string) string { return strings.TrimSpace(src.Getenv(k)) }
	if !isTrue(env("GITHUB_ACTIONS")) {
		return Checkout{}, false
	}
	ev := readGitHubEvent(env("GITHUB_EVENT_PATH"), src.ReadFile)
	switch event := env("GITHUB_EVENT_NAME"); {
	case event == EventIssueComment && ev.issuePR > 0:
		return Checkout{Event: event, PullRequest: ev.issuePR}, true
	case event == EventPullRequestTarget && ev.pr > 0:
		return Checkout{Event: event, PullRequest: ev.pr, Head: ev.headSHA, Fork: ev.fork}, true
	}
	return Checkout{}, false
}

// Problem says what is wrong with running commit (the checkout's HEAD) for
// this event, given the pull request's head (prHead; Head when empty), or
// "" when nothing is. An unknown HEAD or head is no problem here: the caller
// says it could not check.
func (c Checkout) Problem(commit, prHead string) string {
	if prHead == "" {
		prHead = c.Head
	}
	switch c.Event {
	case EventIssueComment:
		if commit != "" && prHead != "" && commit != prHead {
			return fmt.Sprintf("HEAD is %s, not %s, the head of pull request #%d: this comment-triggered run (issue_comment) would run another commit's configuration in scope pr-%d; check out the pull request's head (refs/pull/%d/head) first",
				short(commit), short(prHead), c.PullRequest, c.PullRequest, c.PullRequest)
		}
	case EventPullRequestTarget:
		if c.Fork && commit != "" && commit == prHead {
			return fmt.Sprintf("HEAD is %s, the head of pull request #%d from a fork: pull_request_target runs with this repository's secrets, and this checkout runs the fork's code with them; plan fork pull requests with the pull_request event (no secrets) instead",
				short(commit), c.PullRequest)
		}
	}
	return ""
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
