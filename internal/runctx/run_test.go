package runctx

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDetectJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fixture string
		env     map[string]string
		want    Job
	}{
		{name: "GitHub", fixture: "github/push-tag", want: Job{URL: "https://github.com/acme/infra/actions/runs/123", Actor: "alice"}},
		{name: "GitHub re-run by someone else", fixture: "github/push-tag",
			env:  map[string]string{"GITHUB_RUN_ATTEMPT": "2", "GITHUB_TRIGGERING_ACTOR": "bob"},
			want: Job{URL: "https://github.com/acme/infra/actions/runs/123/attempts/2", Actor: "bob"}},
		{name: "GitHub Enterprise", fixture: "github/push-tag", env: map[string]string{"GITHUB_SERVER_URL": "https://ghe.example.com/"},
			want: Job{URL: "https://ghe.example.com/acme/infra/actions/runs/123", Actor: "alice"}},
		{name: "GitLab", fixture: "gitlab/tag", want: Job{URL: "https://gitlab.com/acme/infra/-/jobs/9001", Actor: "alice"}},
		{name: "CircleCI", env: map[string]string{"CIRCLECI": "true", "CIRCLE_BUILD_URL": "https://circleci.com/gh/o/r/88", "CIRCLE_USERNAME": "carol"},
			want: Job{URL: "https://circleci.com/gh/o/r/88", Actor: "carol"}},
		{name: "Bitbucket", env: map[string]string{"BITBUCKET_BUILD_NUMBER": "321", "BITBUCKET_REPO_FULL_NAME": "o/r"},
			want: Job{URL: "https://bitbucket.org/o/r/pipelines/results/321"}},
		{name: "local", env: map[string]string{"USER": "dave"}, want: Job{Actor: "dave"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			if tc.fixture != "" {
				env = readEnvFile(t, "testdata/"+tc.fixture+".env")
			}
			for k, v := range tc.env {
				env[k] = v
			}
			if diff := cmp.Diff(tc.want, DetectJob(func(k string) string { return env[k] })); diff != "" {
				t.Errorf("DetectJob (-want +got):\n%s", diff)
			}
		})
	}
}
