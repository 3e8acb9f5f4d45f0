package runctx

import "strings"

// Job is what a person needs to find the CI job of a run: its URL and who
// started it. Sponson writes it into the lease record (store.HolderInfo), so
// that a run waiting for the lease, LOCK_HELD and `sponson status` can point
// at the job that holds it.
type Job struct {
	URL   string `json:"url,omitempty"`
	Actor string `json:"actor,omitempty"`
}

// DetectJob reads the CI host's variables for the job's URL and actor, from
// the same host Detect would use. Outside CI the actor is the local user
// ($USER) and there is no URL.
//
//   - GitHub Actions: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/
//     $GITHUB_RUN_ID (/attempts/$GITHUB_RUN_ATTEMPT after a re-run), actor
//     GITHUB_TRIGGERING_ACTOR (who re-ran it), else GITHUB_ACTOR;
//   - GitLab CI: CI_JOB_URL, GITLAB_USER_LOGIN;
//   - CircleCI: CIRCLE_BUILD_URL, CIRCLE_USERNAME;
//   - Bitbucket Pipelines: https://bitbucket.org/$BITBUCKET_REPO_FULL_NAME/
//     pipelines/results/$BITBUCKET_BUILD_NUMBER; Bitbucket names no actor.
func DetectJob(getenv func(string) string) Job {
	if getenv == nil {
		return Job{}
	}
	j := detectJob(getenv)
	// SPONSON_ACTOR names who runs, over what the CI system says: an MCP
	// server records itself as the actor of every run it starts.
	if a := strings.TrimSpace(getenv(EnvActor)); a != "" {
		j.Actor = a
	}
	return j
}

// EnvActor overrides the actor DetectJob finds.
const EnvActor = "SPONSON_ACTOR"

func detectJob(getenv func(string) string) Job {
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	switch {
	case isTrue(env("GITHUB_ACTIONS")):
		j := Job{Actor: firstNonBlank(env("GITHUB_TRIGGERING_ACTOR"), env("GITHUB_ACTOR"))}
		if repo, run := env("GITHUB_REPOSITORY"), env("GITHUB_RUN_ID"); repo != "" && run != "" {
			j.URL = strings.TrimRight(firstNonBlank(env("GITHUB_SERVER_URL"), "https://github.com"), "/") + "/" + repo + "/actions/runs/" + run
			if a := env("GITHUB_RUN_ATTEMPT"); a != "" && a != "1" {
				j.URL += "/attempts/" + a
			}
		}
		return j
	case isTrue(env("GITLAB_CI")):
		return Job{URL: env("CI_JOB_URL"), Actor: env("GITLAB_USER_LOGIN")}
	case isTrue(env("CIRCLECI")):
		return Job{URL: env("CIRCLE_BUILD_URL"), Actor: env("CIRCLE_USERNAME")}
	case env("BITBUCKET_BUILD_NUMBER") != "":
		j := Job{}
		if repo := env("BITBUCKET_REPO_FULL_NAME"); repo != "" {
			j.URL = "https://bitbucket.org/" + repo + "/pipelines/results/" + env("BITBUCKET_BUILD_NUMBER")
		}
		return j
	}
	return Job{Actor: env("USER")}
}

// OnCI reports whether the process runs in CI: on a host Detect knows, or
// where CI is set to a true value (as most CI systems set it).
func OnCI(getenv func(string) string) bool {
	if _, ok := detectHost(getenv, nil); ok {
		return true
	}
	return isTrue(strings.TrimSpace(getenv("CI")))
}
