package runctx

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Commits of the fixtures under testdata/.
const (
	fxRelease  = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d" // a tag, a push
	fxHead     = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" // a pull request's head
	fxQueue    = "5e6f708192a3b4c5d6e7f8091a2b3c4d1a2b3c4d" // a merge queue's merge
	fxCheckout = "cccccccccccccccccccccccccccccccccccccccc" // what the job checked out
)

// fixtureCase is one Detect scenario read from testdata/: the variables of
// <fixture>.env and, when it exists, the payload <fixture>.json as
// GITHUB_EVENT_PATH.
type fixtureCase struct {
	fixture string
	flags   Flags
	git     map[string]string
	want    Context
	wantErr errcode.Code
}

// readEnvFile reads NAME=VALUE lines; # starts a comment line.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not NAME=VALUE", path, line)
		}
		env[k] = v
	}
	return env
}

func runFixtureCases(t *testing.T, cases []fixtureCase) {
	t.Helper()
	for _, tc := range cases {
		name := tc.fixture
		if tc.flags != (Flags{}) {
			name += " with flags"
		}
		if tc.git != nil {
			name += " with a checkout"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := filepath.Join("testdata", tc.fixture)
			env := readEnvFile(t, base+".env")
			if _, err := os.Stat(base + ".json"); err == nil {
				env["GITHUB_EVENT_PATH"] = base + ".json"
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

// TestDetectFixtures is the table of issue 16: each CI event, from the
// host's documented variables and payload, and the scope it gives.
func TestDetectFixtures(t *testing.T) {
	t.Parallel()
	runFixtureCases(t, []fixtureCase{
		// Tags name a commit, not a scope: refused unless the job names one.
		{fixture: "github/push-tag", wantErr: errcode.CtxNull},
		{fixture: "github/push-tag", git: gitOn("main", fxRelease, "main"), wantErr: errcode.CtxNull},
		{
			fixture: "github/push-tag", flags: Flags{Scope: "main", Environment: "production"},
			want: Context{
				Environment: "production", Scope: "main", Commit: fxRelease, DefaultBranch: "main",
				Tag: "v1.2.3", Source: "flags",
			},
		},
		{fixture: "gitlab/tag", wantErr: errcode.CtxNull},
		{
			fixture: "gitlab/tag", flags: Flags{Scope: "main"},
			want: Context{
				Environment: "preview", Scope: "main", Commit: fxRelease, DefaultBranch: "main",
				Tag: "v1.2.3", Source: "flags",
			},
		},

		// ChatOps: the pull request from issue.pull_request; branch and
		// commit from the checkout, never the default branch's GITHUB_SHA.
		{
			fixture: "github/issue-comment-pr",
			git:     gitOn("feat/search", fxCheckout, ""), // gh pr checkout 2
			want: Context{
				Environment: "preview", Scope: "pr-2", Branch: "feat/search", PullRequest: 2, Commit: fxCheckout,
				DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			fixture: "github/issue-comment-pr",
			want:    Context{Environment: "preview", Scope: "pr-2", PullRequest: 2, DefaultBranch: "main", Source: "github"},
		},
		{
			fixture: "github/issue-comment-issue",
			want: Context{
				Environment: "preview", Scope: "main", Branch: "main", Commit: strings.Repeat("b", 40),
				DefaultBranch: "main", Source: "github",
			},
		},

		// The merge queue: the target's scope, plan only.
		{
			fixture: "github/merge-group",
			want: Context{
				Environment: "preview", Scope: "main", Branch: "main", Commit: fxQueue, DefaultBranch: "main",
				PlanOnly: mergeQueueRule, Source: "github",
			},
		},
		{
			fixture: "github/push-merge-queue-branch",
			want: Context{
				Environment: "preview", Scope: "main", Branch: "main", Commit: fxQueue, DefaultBranch: "main",
				PlanOnly: mergeQueueRule, Source: "github",
			},
		},
		{
			fixture: "github/merge-group", flags: Flags{Scope: "queue-check"},
			want: Context{
				Environment: "preview", Scope: "queue-check", Branch: "main", Commit: fxQueue, DefaultBranch: "main",
				Source: "flags",
			},
		},
		{
			fixture: "gitlab/merge-train",
			want: Context{
				Environment: "preview", Scope: "main", Branch: "main", Commit: fxQueue, DefaultBranch: "main",
				PlanOnly: mergeQueueRule, Source: "gitlab",
			},
		},

		// Forks never inherit the base repository's branch scope.
		{
			fixture: "github/pull-request-fork",
			want: Context{
				Environment: "preview", Scope: "pr-7", Branch: "feat/search", PullRequest: 7, Commit: fxHead,
				DefaultBranch: "main", Fork: true, Source: "github",
			},
		},
		{
			fixture: "github/pull-request-fork-deleted",
			want: Context{
				Environment: "preview", Scope: "pr-7", Branch: "feat/search", PullRequest: 7, Commit: fxHead,
				DefaultBranch: "main", Fork: true, Source: "github",
			},
		},
		{
			fixture: "github/pull-request-same-repo",
			want: Context{
				Environment: "preview", Scope: "pr-8", Branch: "feat/search", PullRequest: 8, Commit: fxHead,
				DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "github",
			},
		},
		{
			fixture: "gitlab/merge-request-fork",
			want: Context{
				Environment: "preview", Scope: "pr-17", Branch: "feat/search", PullRequest: 17, Commit: fxHead,
				DefaultBranch: "main", Fork: true, Source: "gitlab",
			},
		},
		{
			fixture: "gitlab/merge-request",
			want: Context{
				Environment: "preview", Scope: "pr-17", Branch: "feat/search", PullRequest: 17, Commit: fxHead,
				DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "gitlab",
			},
		},

		// The default branch from the host is main; master keeps its own.
		{
			fixture: "github/push-master-default-develop",
			want: Context{
				Environment: "preview", Scope: "branch-master", Branch: "master", Commit: fxRelease,
				DefaultBranch: "develop", Source: "github",
			},
		},
		{
			fixture: "github/push-develop-default-develop",
			want: Context{
				Environment: "preview", Scope: "main", Branch: "develop", Commit: fxRelease,
				DefaultBranch: "develop", Source: "github",
			},
		},
		{
			fixture: "gitlab/branch-master-default-develop",
			want: Context{
				Environment: "preview", Scope: "branch-master", Branch: "master", Commit: fxRelease,
				DefaultBranch: "develop", Source: "gitlab",
			},
		},
		{
			fixture: "gitlab/branch-develop-default-develop",
			want: Context{
				Environment: "preview", Scope: "main", Branch: "develop", Commit: fxRelease,
				DefaultBranch: "develop", Source: "gitlab",
			},
		},

		// GitLab CI for a GitHub repository: pr-<n> from the external pull
		// request, not the branch pipeline's branch-<name>.
		{
			fixture: "gitlab/external-pull-request",
			want: Context{
				Environment: "preview", Scope: "pr-5", Branch: "feat/search", PullRequest: 5, Commit: fxHead,
				DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "gitlab",
			},
		},
		{
			fixture: "gitlab/external-pull-request-fork",
			want: Context{
				Environment: "preview", Scope: "pr-5", Branch: "feat/search", PullRequest: 5, Commit: fxHead,
				DefaultBranch: "main", Fork: true, Source: "gitlab",
			},
		},
	})
}

// TestDetectTagMessage checks that the tag refusal names the tag and says
// how to choose a scope.
func TestDetectTagMessage(t *testing.T) {
	t.Parallel()
	env := readEnvFile(t, "testdata/github/push-tag.env")
	_, err := Detect(Flags{}, fakeSources(env, nil))
	e := errcode.As(err)
	if e == nil || e.Code != errcode.CtxNull {
		t.Fatalf("Detect() error = %v, want CTX_NULL", err)
	}
	if !strings.Contains(e.Message, `"v1.2.3"`) || !strings.Contains(e.Hint, "--scope") {
		t.Errorf("message %q / hint %q: want the tag and --scope", e.Message, e.Hint)
	}
}
