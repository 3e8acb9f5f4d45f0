package runctx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// detectHost reads the CI host the process runs on, if it is one Sponson
// knows, from that host's own variables. Only one host is asked, the first
// detected in the order GitHub Actions, GitLab CI, CircleCI, Bitbucket
// Pipelines, so that leftovers of another host (a runner image that exports
// CIRCLECI, say) never mix into the answer.
//
// A known host always answers the pull request, with "no pull request" when
// its variables name none: the host knows, and a guess from local git could
// only be wrong. A pull request variable that is set but is not a number is
// an error, for the same reason.
func detectHost(getenv func(string) string, readFile func(string) ([]byte, error)) (layer, bool) {
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	switch {
	case isTrue(env("GITHUB_ACTIONS")):
		return gitHubHost(env, readFile), true
	case isTrue(env("GITLAB_CI")):
		return gitLabHost(env), true
	case isTrue(env("CIRCLECI")):
		return circleCIHost(env), true
	case env("BITBUCKET_BUILD_NUMBER") != "":
		return bitbucketHost(env), true
	}
	return layer{}, false
}

// gitHubHost reads GitHub Actions: the variables GitHub sets in every job,
// and the webhook payload of the event at GITHUB_EVENT_PATH. Event by event
// (docs/design.md §2.13):
//
//   - pull_request, pull_request_target, pull_request_review...: pr-<n>.
//     GITHUB_REF_NAME of a pull_request run is "<n>/merge", hence
//     GITHUB_HEAD_REF first; GITHUB_SHA is a merge commit GitHub made, hence
//     the payload's head sha first, which is the commit the user pushed. The
//     number comes from GITHUB_REF, or from the payload for events such as
//     pull_request_target whose GITHUB_REF is the base branch. A head in
//     another repository (a fork: pull_request.head.repo differs from
//     pull_request.base.repo, or is null because the fork was deleted) is
//     marked Fork, so that the scope never inherits the base repository's
//     branch of the same name.
//   - pull_request_target: pr-<n> as above, but the workflow and the default
//     checkout are the base branch's, so the commit is the one the checkout
//     holds (local git), else GITHUB_SHA: the commit that actually ran,
//     never the pull request's head.
//   - issue_comment on a pull request (ChatOps): pr-<issue.number> when the
//     payload's issue has a pull_request object. GITHUB_REF and GITHUB_SHA of
//     this event are the default branch's, not the pull request's, so branch
//     and commit are left to the checkout the job made (local git) or to
//     SPONSON_CTX_*.
//   - a tag (push or create of refs/tags/..., release): no branch at all, see
//     tagRule.
//   - merge_group, and the push of a gh-readonly-queue/<base>/pr-<n>-<sha>
//     branch that creates it: the scope of the base branch, plan only, see
//     mergeQueueRule.
//   - anything else: the branch of GITHUB_REF_NAME, with the default branch
//     from the payload's repository.default_branch.
func gitHubHost(env func(string) string, readFile func(string) ([]byte, error)) layer {
	ev := readGitHubEvent(env("GITHUB_EVENT_PATH"), readFile)
	l := layer{
		name:          SourceGitHub,
		branch:        firstNonBlank(env("GITHUB_HEAD_REF"), env("GITHUB_REF_NAME")),
		commit:        firstNonBlank(ev.headSHA, env("GITHUB_SHA")),
		defaultBranch: ev.defaultBranch,
		fork:          ev.fork,
		pr:            prAnswer{known: true},
	}
	ref := env("GITHUB_REF")
	event := env("GITHUB_EVENT_NAME")
	switch {
	case strings.HasPrefix(ref, "refs/pull/"):
		num, _, _ := strings.Cut(strings.TrimPrefix(ref, "refs/pull/"), "/")
		// Not hostPR: a blank number here is a malformed ref, not "no PR".
		if n, err := parsePR("the pull request number of GITHUB_REF="+ref, num); err != nil {
			l.pr = prAnswer{err: err}
		} else {
			l.pr.n = n
		}
	case event == "issue_comment" && ev.issuePR > 0:
		l.pr.n = ev.issuePR
		l.branch, l.commit = "", ""
	case ev.pr > 0:
		l.pr.n = ev.pr
		if event == "pull_request_target" {
			// The base repository's configuration runs (the default
			// checkout is the base branch), not the pull request's head:
			// the commit is the checkout's, else GITHUB_SHA (the base
			// branch's commit this event runs).
			l.commit = ""
			l.commitAfterGit = env("GITHUB_SHA")
		}
	case strings.HasPrefix(ref, "refs/tags/") || env("GITHUB_REF_TYPE") == "tag":
		l.tag = firstNonBlank(strings.TrimPrefix(ref, "refs/tags/"), env("GITHUB_REF_NAME"))
		l.branch = ""
	}
	if base, ok := mergeQueueBase(event, ev.mergeGroupBase, l.branch); ok {
		l.branch = base
		l.planOnly = mergeQueueRule
	}
	return l
}

// mergeQueueRule is why a merge queue run is plan only. The merge queue runs
// the required checks on a temporary branch holding the target branch plus
// one or more queued pull requests: a merge that has not happened yet and may
// never happen (a later entry fails, the group is invalidated). Giving each
// queue entry a scope of its own would create and abandon real
// infrastructure per entry; applying it to the target's scope would deploy
// unmerged code to main. So the run plans against the target branch's scope,
// which shows what the merge would change there, and never applies; the push
// to the target branch after the merge applies.
const mergeQueueRule = "a merge queue run (merge_group, or a gh-readonly-queue/ or merge train pipeline) tests a merge that has not happened yet: it plans against the target branch's scope and never applies; the push to the target branch after the merge applies"

// mergeQueueBase returns the target branch of a GitHub merge queue run: the
// payload's merge_group.base_ref, or else the <base> of a branch named
// gh-readonly-queue/<base>/pr-<n>-<sha> (GITHUB_REF_NAME of merge_group runs,
// and of the push event GitHub also sends when it creates that branch).
func mergeQueueBase(event, payloadBase, branch string) (string, bool) {
	rest, isQueue := strings.CutPrefix(branch, "gh-readonly-queue/")
	if event != "merge_group" && !isQueue {
		return "", false
	}
	if b := strings.TrimPrefix(payloadBase, "refs/heads/"); b != "" {
		return b, true
	}
	if i := strings.LastIndex(rest, "/pr-"); isQueue && i > 0 {
		return rest[:i], true
	}
	// A merge_group run whose target cannot be read: no branch, so the run is
	// refused (CTX_NULL) rather than given a scope per queue entry.
	return "", true
}

// gitHubEvent is what Detect uses of the webhook payload GitHub Actions
// writes to GITHUB_EVENT_PATH.
type gitHubEvent struct {
	pr             int  // pull_request.number, or the top-level number
	issuePR        int  // issue.number when issue.pull_request is present
	fork           bool // pull_request.head.repo is another repository
	headSHA        string
	defaultBranch  string
	mergeGroupBase string // merge_group.base_ref, refs/heads/<target>
}

// readGitHubEvent reads the payload leniently: a missing, unreadable or
// malformed payload, or a field of an unexpected type, is no answer rather
// than an error, because the variables alone suffice for push runs and
// GitHub's payloads vary by event.
func readGitHubEvent(path string, readFile func(string) ([]byte, error)) gitHubEvent {
	var ev gitHubEvent
	if path == "" || readFile == nil {
		return ev
	}
	data, err := readFile(path)
	if err != nil {
		return ev
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var payload map[string]any
	if dec.Decode(&payload) != nil {
		return ev
	}
	ev.pr = positiveNumber(field(payload, "pull_request", "number"))
	if ev.pr == 0 {
		ev.pr = positiveNumber(field(payload, "number"))
	}
	if issue, ok := field(payload, "issue").(map[string]any); ok {
		if _, isPR := issue["pull_request"].(map[string]any); isPR {
			ev.issuePR = positiveNumber(issue["number"])
		}
	}
	ev.fork = isFork(payload)
	ev.headSHA, _ = field(payload, "pull_request", "head", "sha").(string)
	ev.defaultBranch, _ = field(payload, "repository", "default_branch").(string)
	ev.mergeGroupBase, _ = field(payload, "merge_group", "base_ref").(string)
	ev.headSHA = strings.TrimSpace(ev.headSHA)
	ev.defaultBranch = strings.TrimSpace(ev.defaultBranch)
	ev.mergeGroupBase = strings.TrimSpace(ev.mergeGroupBase)
	return ev
}

// isFork reports whether a pull request payload's head is in another
// repository than its base: head.repo differs by id (or, without ids, by
// full_name), or is null, which GitHub sends when the fork was deleted. A
// payload without head.repo at all says nothing, and is not a fork.
func isFork(payload map[string]any) bool {
	head, ok := field(payload, "pull_request", "head").(map[string]any)
	if !ok {
		return false
	}
	headRepo, present := head["repo"]
	if !present {
		return false
	}
	if headRepo == nil {
		return true
	}
	base := field(payload, "pull_request", "base", "repo")
	if base == nil {
		base = field(payload, "repository")
	}
	for _, k := range []string{"id", "full_name"} {
		h, b := field(headRepo, k), field(base, k)
		if h != nil && b != nil {
			return fmt.Sprint(h) != fmt.Sprint(b)
		}
	}
	return false
}

// field walks nested JSON objects; nil when any step is missing.
func field(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func positiveNumber(v any) int {
	num, ok := v.(json.Number)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(num.String())
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// gitLabHost reads GitLab CI's predefined variables, pipeline by pipeline:
//
//   - merge request pipeline: pr-<CI_MERGE_REQUEST_IID>. CI_COMMIT_BRANCH is
//     unset and the source branch is CI_MERGE_REQUEST_SOURCE_BRANCH_NAME; in a
//     merged-results pipeline CI_COMMIT_SHA is GitLab's merge commit and
//     CI_MERGE_REQUEST_SOURCE_BRANCH_SHA the commit the user pushed (it is
//     empty in other pipelines). A source project other than the target
//     (CI_MERGE_REQUEST_SOURCE_PROJECT_ID against CI_MERGE_REQUEST_PROJECT_ID)
//     is a fork. A merge train pipeline (CI_MERGE_REQUEST_EVENT_TYPE
//     merge_train) follows the merge queue rule: the target branch's scope,
//     plan only.
//   - external pull request pipeline (a GitHub repository run by GitLab CI):
//     pr-<CI_EXTERNAL_PULL_REQUEST_IID>, branch and commit from
//     CI_EXTERNAL_PULL_REQUEST_SOURCE_BRANCH_NAME and _SHA, a fork when
//     _SOURCE_REPOSITORY differs from _TARGET_REPOSITORY.
//   - tag pipeline (CI_COMMIT_TAG set): no branch, see tagRule.
//   - branch pipeline: CI_COMMIT_BRANCH, with CI_DEFAULT_BRANCH.
func gitLabHost(env func(string) string) layer {
	l := layer{
		name:          SourceGitLab,
		branch:        firstNonBlank(env("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"), env("CI_COMMIT_BRANCH"), env("CI_COMMIT_REF_NAME")),
		commit:        firstNonBlank(env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"), env("CI_COMMIT_SHA")),
		defaultBranch: env("CI_DEFAULT_BRANCH"),
		pr:            hostPR("CI_MERGE_REQUEST_IID", env("CI_MERGE_REQUEST_IID")),
		fork:          differ(env("CI_MERGE_REQUEST_SOURCE_PROJECT_ID"), env("CI_MERGE_REQUEST_PROJECT_ID")),
	}
	switch {
	case env("CI_MERGE_REQUEST_IID") != "":
		if env("CI_MERGE_REQUEST_EVENT_TYPE") == "merge_train" {
			// What is planned is the train's merge result, CI_COMMIT_SHA.
			l.branch = env("CI_MERGE_REQUEST_TARGET_BRANCH_NAME")
			l.commit = env("CI_COMMIT_SHA")
			l.pr = prAnswer{known: true}
			l.fork = false
			l.planOnly = mergeQueueRule
		}
	case env("CI_EXTERNAL_PULL_REQUEST_IID") != "":
		l.pr = hostPR("CI_EXTERNAL_PULL_REQUEST_IID", env("CI_EXTERNAL_PULL_REQUEST_IID"))
		l.branch = firstNonBlank(env("CI_EXTERNAL_PULL_REQUEST_SOURCE_BRANCH_NAME"), l.branch)
		l.commit = firstNonBlank(env("CI_EXTERNAL_PULL_REQUEST_SOURCE_BRANCH_SHA"), l.commit)
		l.fork = differ(env("CI_EXTERNAL_PULL_REQUEST_SOURCE_REPOSITORY"), env("CI_EXTERNAL_PULL_REQUEST_TARGET_REPOSITORY"))
	case env("CI_COMMIT_TAG") != "":
		// CI_COMMIT_REF_NAME of a tag pipeline is the tag, not a branch.
		l.tag = env("CI_COMMIT_TAG")
		l.branch = ""
	}
	return l
}

// differ reports whether two identifiers are both known and not the same.
func differ(a, b string) bool { return a != "" && b != "" && a != b }

// circleCIHost reads CircleCI. CIRCLE_PULL_REQUEST is the pull request's URL
// (https://github.com/o/r/pull/12, or a Bitbucket or GitLab equivalent), all
// of which end in the number; CIRCLE_PR_NUMBER is set only for forks.
// CircleCI does not tell the default branch; local git may. A tag build
// (CIRCLE_TAG) has no CIRCLE_BRANCH.
func circleCIHost(env func(string) string) layer {
	l := layer{
		name:   SourceCircleCI,
		branch: env("CIRCLE_BRANCH"),
		commit: env("CIRCLE_SHA1"),
		// CIRCLE_PR_USERNAME and CIRCLE_PR_REPONAME are set only for pull
		// requests from forks, naming the fork.
		fork: differ(env("CIRCLE_PR_USERNAME")+"/"+env("CIRCLE_PR_REPONAME"), env("CIRCLE_PROJECT_USERNAME")+"/"+env("CIRCLE_PROJECT_REPONAME")) &&
			env("CIRCLE_PR_REPONAME") != "",
		tag: env("CIRCLE_TAG"),
	}
	if url := env("CIRCLE_PULL_REQUEST"); url != "" {
		trimmed := strings.TrimRight(url, "/")
		l.pr = hostPR("the last part of CIRCLE_PULL_REQUEST="+url, trimmed[strings.LastIndexByte(trimmed, '/')+1:])
	} else {
		l.pr = hostPR("CIRCLE_PR_NUMBER", env("CIRCLE_PR_NUMBER"))
	}
	return l
}

// bitbucketHost reads Bitbucket Pipelines, which sets no boolean marker;
// BITBUCKET_BUILD_NUMBER is set in every pipeline. It does not tell the
// default branch; local git may. A tag pipeline (BITBUCKET_TAG) has no
// BITBUCKET_BRANCH.
func bitbucketHost(env func(string) string) layer {
	return layer{
		name:   SourceBitbucket,
		branch: env("BITBUCKET_BRANCH"),
		tag:    env("BITBUCKET_TAG"),
		commit: env("BITBUCKET_COMMIT"),
		pr:     hostPR("BITBUCKET_PR_ID", env("BITBUCKET_PR_ID")),
	}
}

// hostPR reads a CI host's pull request value: blank is a final "no pull
// request", anything else must be a number.
func hostPR(what, raw string) prAnswer {
	if raw == "" {
		return prAnswer{known: true}
	}
	n, err := parsePR(what, raw)
	if err != nil {
		return prAnswer{err: err}
	}
	return prAnswer{n: n, known: true}
}

func isTrue(v string) bool { return strings.EqualFold(v, "true") }

func firstNonBlank(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
