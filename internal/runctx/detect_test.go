package runctx

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Commits used by the tests; distinct so that a test shows which one won.
var (
	shaHead  = strings.Repeat("a", 40)
	shaMerge = strings.Repeat("b", 40)
	shaGit   = strings.Repeat("c", 40)
	shaEnv   = strings.Repeat("d", 40)
	shaFlag  = strings.Repeat("e", 40)
)

// detectCase is one Detect scenario. env is the whole process environment
// (the real one is never read); a non-empty payload is written to a temporary
// file that GITHUB_EVENT_PATH names; git maps the joined arguments of a git
// command to its output, a missing command failing as outside a repository,
// and nil meaning no git at all.
type detectCase struct {
	name    string
	flags   Flags
	env     map[string]string
	payload string
	git     map[string]string
	want    Context
	wantErr errcode.Code
}

func runDetectCases(t *testing.T, cases []detectCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := maps.Clone(tc.env)
			if tc.payload != "" {
				path := filepath.Join(t.TempDir(), "event.json")
				if err := os.WriteFile(path, []byte(tc.payload), 0o600); err != nil {
					t.Fatal(err)
				}
				env["GITHUB_EVENT_PATH"] = path
			}
			got, err := Detect(tc.flags, fakeSources(env, tc.git))
			if tc.wantErr != "" {
				if !errcode.Is(err, tc.wantErr) {
					t.Fatalf("Detect() error = %v, want code %s (context %+v)", err, tc.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Detect() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Detect() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func fakeSources(env map[string]string, git map[string]string) Sources {
	s := Sources{
		Getenv:   func(k string) string { return env[k] },
		ReadFile: os.ReadFile,
	}
	if git != nil {
		s.Git = func(args ...string) (string, error) {
			if out, ok := git[strings.Join(args, " ")]; ok {
				return out, nil
			}
			return "", errors.New("fatal: not a git repository (or any of the parent directories): .git")
		}
	}
	return s
}

// gitOn is a local checkout of branch at sha; defaultBranch "" means the
// clone did not record origin/HEAD, and branch "HEAD" is a detached HEAD.
func gitOn(branch, sha, defaultBranch string) map[string]string {
	ref := "refs/heads/" + branch
	if branch == "HEAD" {
		ref = "HEAD"
	}
	g := map[string]string{
		"rev-parse HEAD --symbolic-full-name HEAD": sha + "\n" + ref,
		"rev-parse HEAD": sha,
	}
	if defaultBranch != "" {
		g["symbolic-ref --short refs/remotes/origin/HEAD"] = "origin/" + defaultBranch
	}
	return g
}

// with returns base plus extra; an empty value in extra sets the variable to
// the empty string, as CI hosts do for variables that do not apply.
func with(base map[string]string, extra map[string]string) map[string]string {
	m := maps.Clone(base)
	maps.Copy(m, extra)
	return m
}

var gitHubBase = map[string]string{
	"CI":                "true",
	"GITHUB_ACTIONS":    "true",
	"GITHUB_REPOSITORY": "o/r",
	"GITHUB_RUN_ID":     "1234",
	"GITHUB_WORKSPACE":  "/home/runner/work/r/r",
}

const gitHubPullRequestPayload = `{
  "action": "synchronize",
  "number": 42,
  "pull_request": {
    "number": 42,
    "head": {"ref": "feat/search", "sha": "` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `"},
    "base": {"ref": "main", "sha": "0000000000000000000000000000000000000000"}
  },
  "repository": {"full_name": "o/r", "default_branch": "main"}
}`

func TestDetectGitHubActions(t *testing.T) {
	t.Parallel()
	pullRequest := with(gitHubBase, map[string]string{
		"GITHUB_EVENT_NAME": "pull_request",
		"GITHUB_REF":        "refs/pull/42/merge",
		"GITHUB_REF_NAME":   "42/merge",
		"GITHUB_HEAD_REF":   "feat/search",
		"GITHUB_BASE_REF":   "main",
		"GITHUB_SHA":        shaMerge,
	})
	push := func(branch, sha string) map[string]string {
		return with(gitHubBase, map[string]string{
			"GITHUB_EVENT_NAME": "push",
			"GITHUB_REF":        "refs/heads/" + branch,
			"GITHUB_REF_NAME":   branch,
			"GITHUB_REF_TYPE":   "branch",
			"GITHUB_HEAD_REF":   "",
			"GITHUB_BASE_REF":   "",
			"GITHUB_SHA":        sha,
		})
	}
	pushPayload := func(branch, defaultBranch string) string {
		return `{"ref":"refs/heads/` + branch + `","after":"` + shaHead + `","repository":{"default_branch":"` + defaultBranch + `"}}`
	}
	// actions/checkout of a pull request leaves a detached HEAD at the merge
	// commit: git must never decide anything here.
	ciCheckout := gitOn("HEAD", shaMerge, "")

	runDetectCases(t, []detectCase{
		{
			name:    "pull_request event",
			env:     pullRequest,
			payload: gitHubPullRequestPayload,
			git:     ciCheckout,
			want: Context{
				Environment: "preview", Scope: "pr-42", Branch: "feat/search", PullRequest: 42,
				Commit: shaHead, DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			name: "pull_request event without a readable payload",
			env:  with(pullRequest, map[string]string{"GITHUB_EVENT_PATH": "/nonexistent/event.json"}),
			git:  ciCheckout,
			want: Context{
				Environment: "preview", Scope: "pr-42", Branch: "feat/search", PullRequest: 42,
				Commit: shaMerge, Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			name:    "pull_request event with a malformed payload",
			env:     pullRequest,
			payload: `{"pull_request": {"number": "forty-two", "head": 7}`,
			want: Context{
				Environment: "preview", Scope: "pr-42", Branch: "feat/search", PullRequest: 42,
				Commit: shaMerge, Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			// The commit is what ran: without a checkout to ask, GITHUB_SHA
			// (the base's), never the payload's head.
			name: "pull_request_target: GITHUB_REF is the base branch, the number is in the payload",
			env: with(pullRequest, map[string]string{
				"GITHUB_EVENT_NAME": "pull_request_target",
				"GITHUB_REF":        "refs/heads/main",
				"GITHUB_REF_NAME":   "main",
			}),
			payload: gitHubPullRequestPayload,
			want: Context{
				Environment: "preview", Scope: "pr-42", Branch: "feat/search", PullRequest: 42,
				Commit: shaMerge, DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			name: "pull_request_target records the commit of the checkout, not the pull request's head",
			env: with(pullRequest, map[string]string{
				"GITHUB_EVENT_NAME": "pull_request_target",
				"GITHUB_REF":        "refs/heads/main",
				"GITHUB_REF_NAME":   "main",
			}),
			payload: gitHubPullRequestPayload,
			git:     gitOn("HEAD", shaGit, ""),
			want: Context{
				Environment: "preview", Scope: "pr-42", Branch: "feat/search", PullRequest: 42,
				Commit: shaGit, DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			name:    "top-level number when pull_request has none",
			env:     with(pullRequest, map[string]string{"GITHUB_REF": "refs/heads/main"}),
			payload: `{"number": 7, "repository": {"default_branch": "main"}}`,
			want: Context{
				Environment: "preview", Scope: "pr-7", Branch: "feat/search", PullRequest: 7,
				Commit: shaMerge, DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			name:    "push to main",
			env:     push("main", shaHead),
			payload: pushPayload("main", "main"),
			git:     gitOn("HEAD", shaHead, ""),
			want: Context{
				Environment: "preview", Scope: "main", Branch: "main", Commit: shaHead,
				DefaultBranch: "main", Source: "github",
			},
		},
		{
			name:    "push to a feature branch",
			env:     push("feat/search", shaHead),
			payload: pushPayload("feat/search", "main"),
			git:     gitOn("HEAD", shaHead, ""),
			want: Context{
				Environment: "preview", Scope: "branch-feat-search", Branch: "feat/search", Commit: shaHead,
				DefaultBranch: "main", Source: "github",
			},
		},
		{
			name:    "push to a default branch not called main",
			env:     push("develop", shaHead),
			payload: pushPayload("develop", "develop"),
			want: Context{
				Environment: "preview", Scope: "main", Branch: "develop", Commit: shaHead,
				DefaultBranch: "develop", Source: "github",
			},
		},
		{
			name: "no PR on GitHub is final: SPONSON-less push stays a branch scope",
			env:  push("feat/x", shaHead),
			git:  gitOn("feat/other", shaGit, "main"),
			want: Context{
				Environment: "preview", Scope: "branch-feat-x", Branch: "feat/x", Commit: shaHead,
				DefaultBranch: "main", Source: "github",
			},
		},
		{
			name:    "malformed refs/pull ref",
			env:     with(pullRequest, map[string]string{"GITHUB_REF": "refs/pull/abc/merge"}),
			wantErr: errcode.CtxNull,
		},
		{
			name: "GITHUB_ACTIONS not true is not GitHub",
			env:  with(pullRequest, map[string]string{"GITHUB_ACTIONS": "false"}),
			git:  gitOn("feat/local", shaGit, ""),
			want: Context{
				Environment: "preview", Scope: "branch-feat-local", Branch: "feat/local", Commit: shaGit, Source: "git",
			},
		},
	})
}

var gitLabBase = map[string]string{
	"CI":                  "true",
	"GITLAB_CI":           "true",
	"CI_PROJECT_PATH":     "o/r",
	"CI_PIPELINE_ID":      "555",
	"CI_DEFAULT_BRANCH":   "main",
	"CI_PROJECT_DIR":      "/builds/o/r",
	"CI_SERVER_URL":       "https://gitlab.com",
	"CI_PIPELINE_SOURCE":  "push",
	"CI_COMMIT_REF_SLUG":  "unused",
	"CI_COMMIT_SHORT_SHA": "unused",
}

func TestDetectGitLabCI(t *testing.T) {
	t.Parallel()
	mergeRequest := with(gitLabBase, map[string]string{
		"CI_PIPELINE_SOURCE":                   "merge_request_event",
		"CI_MERGE_REQUEST_IID":                 "17",
		"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME":  "feat/search",
		"CI_MERGE_REQUEST_TARGET_BRANCH_NAME":  "main",
		"CI_MERGE_REQUEST_SOURCE_BRANCH_SHA":   "", // empty outside merged-results pipelines
		"CI_COMMIT_REF_NAME":                   "feat/search",
		"CI_COMMIT_SHA":                        shaHead,
		"CI_MERGE_REQUEST_EVENT_TYPE":          "detached",
		"CI_MERGE_REQUEST_TARGET_BRANCH_SHA":   "",
		"CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": "o/r",
	})
	// GitLab's runner checks out a detached HEAD.
	ciCheckout := gitOn("HEAD", shaHead, "")

	runDetectCases(t, []detectCase{
		{
			name: "merge request pipeline",
			env:  mergeRequest,
			git:  ciCheckout,
			want: Context{
				Environment: "preview", Scope: "pr-17", Branch: "feat/search", PullRequest: 17,
				Commit: shaHead, DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "gitlab",
			},
		},
		{
			name: "merged-results pipeline: the source branch sha, not the merge commit",
			env: with(mergeRequest, map[string]string{
				"CI_MERGE_REQUEST_EVENT_TYPE":        "merged_result",
				"CI_COMMIT_SHA":                      shaMerge,
				"CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": shaHead,
			}),
			git: gitOn("HEAD", shaMerge, ""),
			want: Context{
				Environment: "preview", Scope: "pr-17", Branch: "feat/search", PullRequest: 17,
				Commit: shaHead, DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "gitlab",
			},
		},
		{
			name: "branch pipeline",
			env: with(gitLabBase, map[string]string{
				"CI_COMMIT_BRANCH":   "feat/x",
				"CI_COMMIT_REF_NAME": "feat/x",
				"CI_COMMIT_SHA":      shaHead,
			}),
			git: ciCheckout,
			want: Context{
				Environment: "preview", Scope: "branch-feat-x", Branch: "feat/x", Commit: shaHead,
				DefaultBranch: "main", Source: "gitlab",
			},
		},
		{
			name: "branch pipeline on a default branch called trunk",
			env: with(gitLabBase, map[string]string{
				"CI_DEFAULT_BRANCH":  "trunk",
				"CI_COMMIT_BRANCH":   "trunk",
				"CI_COMMIT_REF_NAME": "trunk",
				"CI_COMMIT_SHA":      shaHead,
			}),
			want: Context{
				Environment: "preview", Scope: "main", Branch: "trunk", Commit: shaHead,
				DefaultBranch: "trunk", Source: "gitlab",
			},
		},
		{
			name: "tag pipeline gives no branch (CI_COMMIT_REF_NAME is the tag)",
			env: with(gitLabBase, map[string]string{
				"CI_COMMIT_TAG":      "v1.2.0",
				"CI_COMMIT_REF_NAME": "v1.2.0",
				"CI_COMMIT_SHA":      shaHead,
			}),
			git:     gitOn("main", shaHead, "main"),
			wantErr: errcode.CtxNull,
		},
		{
			name:    "malformed merge request IID",
			env:     with(mergeRequest, map[string]string{"CI_MERGE_REQUEST_IID": "!17"}),
			wantErr: errcode.CtxNull,
		},
	})
}

var circleCIBase = map[string]string{
	"CI":                       "true",
	"CIRCLECI":                 "true",
	"CIRCLE_PROJECT_USERNAME":  "o",
	"CIRCLE_PROJECT_REPONAME":  "r",
	"CIRCLE_BUILD_NUM":         "88",
	"CIRCLE_WORKING_DIRECTORY": "~/project",
}

func TestDetectCircleCI(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{
			name: "pull request URL",
			env: with(circleCIBase, map[string]string{
				"CIRCLE_PULL_REQUEST": "https://github.com/o/r/pull/12",
				"CIRCLE_BRANCH":       "feat/search",
				"CIRCLE_SHA1":         shaHead,
			}),
			// CircleCI checks out the branch, and the clone knows origin/HEAD.
			git: gitOn("feat/search", shaHead, "main"),
			want: Context{
				Environment: "preview", Scope: "pr-12", Branch: "feat/search", PullRequest: 12,
				Commit: shaHead, DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "circleci",
			},
		},
		{
			name: "pull request URL with a trailing slash",
			env: with(circleCIBase, map[string]string{
				"CIRCLE_PULL_REQUEST": "https://github.com/o/r/pull/12/",
				"CIRCLE_BRANCH":       "feat/search",
				"CIRCLE_SHA1":         shaHead,
			}),
			want: Context{
				Environment: "preview", Scope: "pr-12", Branch: "feat/search", PullRequest: 12,
				Commit: shaHead, Predecessor: "branch-feat-search", Source: "circleci",
			},
		},
		{
			name: "CIRCLE_PR_NUMBER without a URL",
			env: with(circleCIBase, map[string]string{
				"CIRCLE_PR_NUMBER": "13",
				"CIRCLE_BRANCH":    "feat/fork",
				"CIRCLE_SHA1":      shaHead,
			}),
			want: Context{
				Environment: "preview", Scope: "pr-13", Branch: "feat/fork", PullRequest: 13,
				Commit: shaHead, Predecessor: "branch-feat-fork", Source: "circleci",
			},
		},
		{
			name: "branch build: the default branch comes from local git",
			env: with(circleCIBase, map[string]string{
				"CIRCLE_BRANCH": "develop",
				"CIRCLE_SHA1":   shaHead,
			}),
			git: gitOn("develop", shaHead, "develop"),
			want: Context{
				Environment: "preview", Scope: "main", Branch: "develop", Commit: shaHead,
				DefaultBranch: "develop", Source: "circleci",
			},
		},
		{
			name: "pull request from a fork: CIRCLE_PR_REPONAME names the fork, no predecessor",
			env: with(circleCIBase, map[string]string{
				"CIRCLE_PULL_REQUEST": "https://github.com/o/r/pull/14",
				"CIRCLE_PR_NUMBER":    "14",
				"CIRCLE_PR_USERNAME":  "carol",
				"CIRCLE_PR_REPONAME":  "r",
				"CIRCLE_BRANCH":       "pull/14",
				"CIRCLE_SHA1":         shaHead,
			}),
			want: Context{
				Environment: "preview", Scope: "pr-14", Branch: "pull/14", PullRequest: 14,
				Commit: shaHead, Fork: true, Source: "circleci",
			},
		},
		{
			name:    "tag build",
			env:     with(circleCIBase, map[string]string{"CIRCLE_TAG": "v1.2.3", "CIRCLE_SHA1": shaHead}),
			git:     gitOn("main", shaHead, "main"),
			wantErr: errcode.CtxNull,
		},
		{
			name: "pull request URL without a number",
			env: with(circleCIBase, map[string]string{
				"CIRCLE_PULL_REQUEST": "https://github.com/o/r/pulls",
				"CIRCLE_BRANCH":       "feat/search",
			}),
			wantErr: errcode.CtxNull,
		},
	})
}

var bitbucketBase = map[string]string{
	"CI":                       "true",
	"BITBUCKET_BUILD_NUMBER":   "321",
	"BITBUCKET_REPO_FULL_NAME": "o/r",
	"BITBUCKET_CLONE_DIR":      "/opt/atlassian/pipelines/agent/build",
}

func TestDetectBitbucketPipelines(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{
			name: "pull request pipeline",
			env: with(bitbucketBase, map[string]string{
				"BITBUCKET_PR_ID":                 "5",
				"BITBUCKET_PR_DESTINATION_BRANCH": "main",
				"BITBUCKET_BRANCH":                "feat/x",
				"BITBUCKET_COMMIT":                shaHead,
			}),
			git: gitOn("HEAD", shaHead, ""),
			want: Context{
				Environment: "preview", Scope: "pr-5", Branch: "feat/x", PullRequest: 5,
				Commit: shaHead, Predecessor: "branch-feat-x", Source: "bitbucket",
			},
		},
		{
			name: "branch pipeline",
			env: with(bitbucketBase, map[string]string{
				"BITBUCKET_BRANCH": "feat/x",
				"BITBUCKET_COMMIT": shaHead,
			}),
			git: gitOn("feat/x", shaHead, ""),
			want: Context{
				Environment: "preview", Scope: "branch-feat-x", Branch: "feat/x", Commit: shaHead, Source: "bitbucket",
			},
		},
		{
			name: "branch pipeline on master",
			env: with(bitbucketBase, map[string]string{
				"BITBUCKET_BRANCH": "master",
				"BITBUCKET_COMMIT": shaHead,
			}),
			want: Context{
				Environment: "preview", Scope: "main", Branch: "master", Commit: shaHead, Source: "bitbucket",
			},
		},
		{
			name:    "tag pipeline",
			env:     with(bitbucketBase, map[string]string{"BITBUCKET_TAG": "v1.2.3", "BITBUCKET_COMMIT": shaHead}),
			git:     gitOn("main", shaHead, "main"),
			wantErr: errcode.CtxNull,
		},
		{
			name:    "malformed PR id",
			env:     with(bitbucketBase, map[string]string{"BITBUCKET_PR_ID": "5a", "BITBUCKET_BRANCH": "feat/x"}),
			wantErr: errcode.CtxNull,
		},
	})
}

// TestDetectPrecedence checks, field by field, that flags beat SPONSON_CTX_*
// which beat the CI host which beats local git.
func TestDetectPrecedence(t *testing.T) {
	t.Parallel()
	hostPush := with(gitHubBase, map[string]string{
		"GITHUB_REF": "refs/heads/feat/host", "GITHUB_REF_NAME": "feat/host", "GITHUB_SHA": shaHead,
	})
	envVars := map[string]string{EnvBranch: "feat/env", EnvCommit: shaEnv}
	local := gitOn("feat/git", shaGit, "")

	runDetectCases(t, []detectCase{
		{
			name:  "flags beat env, host and git",
			flags: Flags{Branch: "feat/flag", Commit: shaFlag},
			env:   with(hostPush, envVars),
			git:   local,
			want: Context{
				Environment: "preview", Scope: "branch-feat-flag", Branch: "feat/flag", Commit: shaFlag, Source: "flags",
			},
		},
		{
			name: "env beats host and git",
			env:  with(hostPush, envVars),
			git:  local,
			want: Context{
				Environment: "preview", Scope: "branch-feat-env", Branch: "feat/env", Commit: shaEnv, Source: "env",
			},
		},
		{
			name: "host beats git",
			env:  hostPush,
			git:  local,
			want: Context{
				Environment: "preview", Scope: "branch-feat-host", Branch: "feat/host", Commit: shaHead, Source: "github",
			},
		},
		{
			name: "git last",
			git:  gitOn("feat/git", shaGit, "main"),
			want: Context{
				Environment: "preview", Scope: "branch-feat-git", Branch: "feat/git", Commit: shaGit,
				DefaultBranch: "main", Source: "git",
			},
		},
		{
			name: "git on its default branch",
			git:  gitOn("trunk", shaGit, "trunk"),
			want: Context{
				Environment: "preview", Scope: "main", Branch: "trunk", Commit: shaGit, DefaultBranch: "trunk", Source: "git",
			},
		},
		{
			name:  "each field on its own: flag PR, env commit, git branch",
			flags: Flags{PullRequest: "9"},
			env:   map[string]string{EnvCommit: shaEnv},
			git:   local,
			want: Context{
				Environment: "preview", Scope: "pr-9", Branch: "feat/git", PullRequest: 9, Commit: shaEnv,
				Predecessor: "branch-feat-git", Source: "flags",
			},
		},
		{
			name:  "flag PR beats env PR beats host",
			flags: Flags{PullRequest: "3"},
			env:   with(hostPush, map[string]string{EnvPullRequest: "4", "GITHUB_REF": "refs/pull/5/merge"}),
			want: Context{
				Environment: "preview", Scope: "pr-3", Branch: "feat/host", PullRequest: 3, Commit: shaHead,
				Predecessor: "branch-feat-host", Source: "flags",
			},
		},
		{
			name: "env PR beats host's no PR",
			env:  with(hostPush, map[string]string{EnvPullRequest: "4"}),
			want: Context{
				Environment: "preview", Scope: "pr-4", Branch: "feat/host", PullRequest: 4, Commit: shaHead,
				Predecessor: "branch-feat-host", Source: "env",
			},
		},
		{
			name:  "flag scope beats env scope and derivation",
			flags: Flags{Scope: "sandbox-1"},
			env:   with(hostPush, map[string]string{EnvScope: "other"}),
			want: Context{
				Environment: "preview", Scope: "sandbox-1", Branch: "feat/host", Commit: shaHead, Source: "flags",
			},
		},
		{
			name: "env scope beats derivation",
			env:  with(hostPush, map[string]string{EnvScope: "other"}),
			want: Context{
				Environment: "preview", Scope: "other", Branch: "feat/host", Commit: shaHead, Source: "env",
			},
		},
		{
			name:  "explicit scope needs no branch",
			flags: Flags{Scope: "nightly"},
			want:  Context{Environment: "preview", Scope: "nightly", Source: "flags"},
		},
		{
			name:  "flag env beats SPONSON_CTX_ENV",
			flags: Flags{Environment: "staging"},
			env:   map[string]string{EnvEnvironment: "production"},
			git:   local,
			want: Context{
				Environment: "staging", Scope: "branch-feat-git", Branch: "feat/git", Commit: shaGit, Source: "git",
			},
		},
		{
			name: "SPONSON_CTX_ENV",
			env:  map[string]string{EnvEnvironment: "production"},
			git:  local,
			want: Context{
				Environment: "production", Scope: "branch-feat-git", Branch: "feat/git", Commit: shaGit, Source: "git",
			},
		},
		{
			name: "the environment is never inferred from main on a CI host",
			env: with(gitHubBase, map[string]string{
				"GITHUB_REF": "refs/heads/main", "GITHUB_REF_NAME": "main", "GITHUB_SHA": shaHead,
			}),
			want: Context{Environment: "preview", Scope: "main", Branch: "main", Commit: shaHead, Source: "github"},
		},
		{
			name:  "an invalid env PR under a valid flag PR is never consulted",
			flags: Flags{PullRequest: "3", Branch: "feat/x"},
			env:   map[string]string{EnvPullRequest: "abc"},
			want: Context{
				Environment: "preview", Scope: "pr-3", Branch: "feat/x", PullRequest: 3,
				Predecessor: "branch-feat-x", Source: "flags",
			},
		},
		{
			name: "only the first detected host is asked",
			env: with(hostPush, map[string]string{
				"GITLAB_CI": "true", "CI_MERGE_REQUEST_IID": "8", "CI_COMMIT_BRANCH": "feat/gitlab",
			}),
			want: Context{
				Environment: "preview", Scope: "branch-feat-host", Branch: "feat/host", Commit: shaHead, Source: "github",
			},
		},
	})
}

// TestDetectPredecessor checks that a pull request inherits its head
// branch's scope, and never main.
func TestDetectPredecessor(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{
			name:  "feature branch",
			flags: Flags{PullRequest: "7", Branch: "feat/a b"},
			want: Context{
				Environment: "preview", Scope: "pr-7", Branch: "feat/a b", PullRequest: 7,
				// The space is replaced, so the scope carries a hash of the
				// branch name (BranchScope).
				Predecessor: "branch-feat-a-b-dd9856d5", Source: "flags",
			},
		},
		{
			name:  "PR from main has no predecessor",
			flags: Flags{PullRequest: "7", Branch: "main"},
			want:  Context{Environment: "preview", Scope: "pr-7", Branch: "main", PullRequest: 7, Source: "flags"},
		},
		{
			name:  "PR from master has no predecessor",
			flags: Flags{PullRequest: "7", Branch: "master"},
			want:  Context{Environment: "preview", Scope: "pr-7", Branch: "master", PullRequest: 7, Source: "flags"},
		},
		{
			name: "PR from the default branch has no predecessor",
			env: with(gitLabBase, map[string]string{
				"CI_DEFAULT_BRANCH":                   "develop",
				"CI_MERGE_REQUEST_IID":                "21",
				"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "develop",
				"CI_COMMIT_SHA":                       shaHead,
			}),
			want: Context{
				Environment: "preview", Scope: "pr-21", Branch: "develop", PullRequest: 21, Commit: shaHead,
				DefaultBranch: "develop", Source: "gitlab",
			},
		},
		{
			name:    "GitHub PR whose head is main",
			env:     with(gitHubBase, map[string]string{"GITHUB_REF": "refs/pull/9/merge", "GITHUB_HEAD_REF": "main", "GITHUB_SHA": shaMerge}),
			payload: `{"number": 9, "pull_request": {"number": 9, "head": {"sha": "` + shaHead + `"}}, "repository": {"default_branch": "main"}}`,
			want: Context{
				Environment: "preview", Scope: "pr-9", Branch: "main", PullRequest: 9, Commit: shaHead,
				DefaultBranch: "main", Source: "github",
			},
		},
		{
			name:  "PR without a known head branch",
			flags: Flags{PullRequest: "7"},
			want:  Context{Environment: "preview", Scope: "pr-7", PullRequest: 7, Source: "flags"},
		},
		{
			name:  "explicit scope other than pr-<n> has no predecessor",
			flags: Flags{PullRequest: "7", Branch: "feat/x", Scope: "custom"},
			want:  Context{Environment: "preview", Scope: "custom", Branch: "feat/x", PullRequest: 7, Source: "flags"},
		},
		{
			name:  "head branch too long for its name alone",
			flags: Flags{PullRequest: "7", Branch: strings.Repeat("x", 200)},
			want: Context{Environment: "preview", Scope: "pr-7", Branch: strings.Repeat("x", 200), PullRequest: 7, Source: "flags",
				Predecessor: "branch-" + strings.Repeat("x", 112) + "-aa20c23e"},
		},
	})
}

func TestDetectInvalidPullRequest(t *testing.T) {
	t.Parallel()
	var cases []detectCase
	for _, v := range []string{"abc", "0", "-3", "+4", "1.5", "4 2", "0x10", "99999999999999999999"} {
		cases = append(cases,
			detectCase{name: "flag " + v, flags: Flags{PullRequest: v, Branch: "feat/x"}, wantErr: errcode.CtxNull},
			detectCase{name: "env " + v, env: map[string]string{EnvPullRequest: v, EnvBranch: "feat/x"}, wantErr: errcode.CtxNull},
		)
	}
	runDetectCases(t, cases)
}

func TestDetectBlankValues(t *testing.T) {
	t.Parallel()
	local := gitOn("feat/git", shaGit, "")
	runDetectCases(t, []detectCase{
		{
			name:  "blank flags",
			flags: Flags{Environment: " ", Scope: "\t", Branch: "", PullRequest: " ", Commit: ""},
			git:   local,
			want:  Context{Environment: "preview", Scope: "branch-feat-git", Branch: "feat/git", Commit: shaGit, Source: "git"},
		},
		{
			name: "blank SPONSON_CTX_* variables",
			env: map[string]string{
				EnvEnvironment: "", EnvScope: " ", EnvBranch: "  ", EnvCommit: "", EnvPullRequest: "",
			},
			git:  local,
			want: Context{Environment: "preview", Scope: "branch-feat-git", Branch: "feat/git", Commit: shaGit, Source: "git"},
		},
		{
			name: "SPONSON_CTX_PR empty defers to the host",
			env: with(gitHubBase, map[string]string{
				EnvPullRequest: "", "GITHUB_REF": "refs/pull/42/merge", "GITHUB_HEAD_REF": "feat/search", "GITHUB_SHA": shaMerge,
			}),
			want: Context{
				Environment: "preview", Scope: "pr-42", Branch: "feat/search", PullRequest: 42, Commit: shaMerge,
				Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			name: "blank GITHUB_HEAD_REF falls back to GITHUB_REF_NAME",
			env: with(gitHubBase, map[string]string{
				"GITHUB_HEAD_REF": "", "GITHUB_REF": "refs/heads/feat/x", "GITHUB_REF_NAME": "feat/x", "GITHUB_SHA": shaHead,
			}),
			want: Context{Environment: "preview", Scope: "branch-feat-x", Branch: "feat/x", Commit: shaHead, Source: "github"},
		},
		{
			name:  "values are trimmed",
			flags: Flags{Environment: " staging ", Branch: " feat/x\n", PullRequest: " 8 "},
			want: Context{
				Environment: "staging", Scope: "pr-8", Branch: "feat/x", PullRequest: 8,
				Predecessor: "branch-feat-x", Source: "flags",
			},
		},
	})
}

func TestDetectNothingAnswers(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{name: "no sources", wantErr: errcode.CtxNull},
		{name: "not a git repository", git: map[string]string{}, wantErr: errcode.CtxNull},
		{name: "detached HEAD", git: gitOn("HEAD", shaGit, "main"), wantErr: errcode.CtxNull},
		{name: "commit alone decides nothing", flags: Flags{Commit: shaFlag}, wantErr: errcode.CtxNull},
		{name: "environment alone decides nothing", flags: Flags{Environment: "staging"}, wantErr: errcode.CtxNull},
		{
			name:    "GitHub without a branch or PR",
			env:     with(gitHubBase, map[string]string{"GITHUB_SHA": shaHead}),
			git:     gitOn("HEAD", shaHead, ""),
			wantErr: errcode.CtxNull,
		},
	})
}

// TestDetectNothingAnswersMessage checks that CTX_NULL says what was looked
// at and how to answer.
func TestDetectNothingAnswersMessage(t *testing.T) {
	t.Parallel()
	_, err := Detect(Flags{}, fakeSources(
		with(gitHubBase, map[string]string{"GITHUB_SHA": shaHead}), gitOn("HEAD", shaHead, "")))
	e := errcode.As(err)
	if e == nil || e.Code != errcode.CtxNull {
		t.Fatalf("Detect() error = %v, want CTX_NULL", err)
	}
	for _, want := range []string{"--scope", "--branch", "--pr", EnvBranch, EnvPullRequest, "github", "detached"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not mention %q", e.Message, want)
		}
	}
	for _, want := range []string{"--scope", "--branch", "--pr", EnvBranch} {
		if !strings.Contains(e.Hint, want) {
			t.Errorf("hint %q does not mention %q", e.Hint, want)
		}
	}
}

func TestDetectInvalidNames(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{name: "flag environment", flags: Flags{Environment: "../prod", Branch: "x"}, wantErr: errcode.Usage},
		{name: "env environment", env: map[string]string{EnvEnvironment: ".hidden", EnvBranch: "x"}, wantErr: errcode.Usage},
		{name: "flag scope", flags: Flags{Scope: "a/b"}, wantErr: errcode.Usage},
		{name: "env scope", env: map[string]string{EnvScope: ".."}, wantErr: errcode.Usage},
	})
}

// TestDetectNeverRunsGitWhenAnswered checks that a fully answered run does
// not start git, which may be slow or absent on CI images.
func TestDetectNeverRunsGitWhenAnswered(t *testing.T) {
	t.Parallel()
	src := fakeSources(with(gitLabBase, map[string]string{"CI_COMMIT_BRANCH": "feat/x", "CI_COMMIT_SHA": shaHead}), nil)
	src.Git = func(args ...string) (string, error) {
		t.Errorf("git %v was run", args)
		return "", errors.New("unexpected")
	}
	if _, err := Detect(Flags{}, src); err != nil {
		t.Fatal(err)
	}
}

func TestDetectZeroSources(t *testing.T) {
	t.Parallel()
	got, err := Detect(Flags{Branch: "feat/x"}, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	want := Context{Environment: "preview", Scope: "branch-feat-x", Branch: "feat/x", Source: "flags"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Detect() mismatch (-want +got):\n%s", diff)
	}
}
