package runctx

import (
	"bytes"
	"encoding/json"
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

// gitHubHost reads GitHub Actions. GITHUB_REF_NAME of a pull_request run is
// "<n>/merge", hence GITHUB_HEAD_REF first; GITHUB_SHA of such a run is a
// merge commit GitHub made, hence the payload's head sha first, which is the
// commit the user pushed. The PR number comes from GITHUB_REF, or from the
// payload for events such as pull_request_target whose GITHUB_REF is the
// base branch.
func gitHubHost(env func(string) string, readFile func(string) ([]byte, error)) layer {
	ev := readGitHubEvent(env("GITHUB_EVENT_PATH"), readFile)
	l := layer{
		name:          SourceGitHub,
		branch:        firstNonBlank(env("GITHUB_HEAD_REF"), env("GITHUB_REF_NAME")),
		commit:        firstNonBlank(ev.headSHA, env("GITHUB_SHA")),
		defaultBranch: ev.defaultBranch,
		pr:            prAnswer{known: true},
	}
	if ref := env("GITHUB_REF"); strings.HasPrefix(ref, "refs/pull/") {
		num, _, _ := strings.Cut(strings.TrimPrefix(ref, "refs/pull/"), "/")
		// Not hostPR: a blank number here is a malformed ref, not "no PR".
		if n, err := parsePR("the pull request number of GITHUB_REF="+ref, num); err != nil {
			l.pr = prAnswer{err: err}
		} else {
			l.pr.n = n
		}
	} else if ev.pr > 0 {
		l.pr.n = ev.pr
	}
	return l
}

// gitHubEvent is what Detect uses of the webhook payload GitHub Actions
// writes to GITHUB_EVENT_PATH.
type gitHubEvent struct {
	pr            int
	headSHA       string
	defaultBranch string
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
	ev.headSHA, _ = field(payload, "pull_request", "head", "sha").(string)
	ev.defaultBranch, _ = field(payload, "repository", "default_branch").(string)
	ev.headSHA = strings.TrimSpace(ev.headSHA)
	ev.defaultBranch = strings.TrimSpace(ev.defaultBranch)
	return ev
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

// gitLabHost reads GitLab CI. In a merge request pipeline CI_COMMIT_BRANCH is
// unset and the source branch is CI_MERGE_REQUEST_SOURCE_BRANCH_NAME; in a
// merged-results pipeline CI_COMMIT_SHA is GitLab's merge commit and
// CI_MERGE_REQUEST_SOURCE_BRANCH_SHA the commit the user pushed (it is empty
// in other pipelines).
func gitLabHost(env func(string) string) layer {
	return layer{
		name:          SourceGitLab,
		branch:        firstNonBlank(env("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"), env("CI_COMMIT_BRANCH"), env("CI_COMMIT_REF_NAME")),
		commit:        firstNonBlank(env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"), env("CI_COMMIT_SHA")),
		defaultBranch: env("CI_DEFAULT_BRANCH"),
		pr:            hostPR("CI_MERGE_REQUEST_IID", env("CI_MERGE_REQUEST_IID")),
	}
}

// circleCIHost reads CircleCI. CIRCLE_PULL_REQUEST is the pull request's URL
// (https://github.com/o/r/pull/12, or a Bitbucket or GitLab equivalent), all
// of which end in the number; CIRCLE_PR_NUMBER is set only for forks.
// CircleCI does not tell the default branch; local git may.
func circleCIHost(env func(string) string) layer {
	l := layer{
		name:   SourceCircleCI,
		branch: env("CIRCLE_BRANCH"),
		commit: env("CIRCLE_SHA1"),
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
// default branch; local git may.
func bitbucketHost(env func(string) string) layer {
	return layer{
		name:   SourceBitbucket,
		branch: env("BITBUCKET_BRANCH"),
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
