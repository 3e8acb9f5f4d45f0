package stack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func TestNormalizeURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"git@github.com:acme/infra.git":                                 "github.com/acme/infra",
		"git@github.com:acme/infra":                                     "github.com/acme/infra",
		"ssh://git@github.com/acme/infra.git":                           "github.com/acme/infra",
		"ssh://git@github.com:22/acme/infra.git/":                       "github.com/acme/infra",
		"https://github.com/acme/infra":                                 "github.com/acme/infra",
		"https://github.com/acme/infra.git":                             "github.com/acme/infra",
		"https://x-access-token:ghs_SECRET123@github.com/acme/infra":    "github.com/acme/infra",
		"https://oauth2:glpat-SECRET@GitLab.Example.com:8443/g/s/p.git": "gitlab.example.com/g/s/p",
		"https://user@bitbucket.org/ws/repo.git":                        "bitbucket.org/ws/repo",
		"git+ssh://git@host.example/a/b":                                "host.example/a/b",
		"/srv/git/infra.git":                                            "local/srv/git/infra",
		"file:///srv/git/infra.git":                                     "local/srv/git/infra",
		"https://github.com/acme/my repo%20x":                           "github.com/acme/my-repo-x",
	} {
		got := NormalizeURL(raw)
		if got != want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", raw, got, want)
		}
		if strings.Contains(got, "SECRET") {
			t.Errorf("NormalizeURL(%q) keeps a credential: %q", raw, got)
		}
	}
}

// repo is a fake git for a checkout at top with the given origin ("" for
// none).
func repo(top, origin string) func(...string) (string, error) {
	return func(args ...string) (string, error) {
		switch strings.Join(args, " ") {
		case "rev-parse --show-toplevel":
			return top, nil
		case "remote get-url origin":
			if origin == "" {
				return "", errors.New("error: No such remote 'origin'")
			}
			return origin, nil
		}
		return "", errors.New("unexpected git " + strings.Join(args, " "))
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	app := filepath.Join(top, "stacks", "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	origin := "git@github.com:acme/infra.git"
	tests := []struct {
		name     string
		dir      string
		flag     string
		declared string
		env      map[string]string
		git      func(...string) (string, error)
		want     string
		source   string
		warns    bool
	}{
		{name: "origin ssh", dir: app, git: repo(top, origin), want: "github.com/acme/infra//stacks/app", source: "origin"},
		{name: "origin https with token", dir: app, git: repo(top, "https://x-access-token:tok@github.com/acme/infra.git"), want: "github.com/acme/infra//stacks/app", source: "origin"},
		{name: "repository root", dir: top, git: repo(top, origin), want: "github.com/acme/infra", source: "origin"},
		{name: "github actions", dir: app, git: repo(top, "https://github.com/acme/infra"),
			env:  map[string]string{"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/infra"},
			want: "github.com/acme/infra//stacks/app", source: "github"},
		{name: "github enterprise", dir: app, git: repo(top, origin),
			env:  map[string]string{"GITHUB_SERVER_URL": "https://GHE.corp.example", "GITHUB_REPOSITORY": "acme/infra"},
			want: "ghe.corp.example/acme/infra//stacks/app", source: "github"},
		{name: "gitlab", dir: app, git: repo(top, "https://gitlab-ci-token:tok@gitlab.example.com/g/sub/infra.git"),
			env:  map[string]string{"GITLAB_CI": "true", "CI_SERVER_HOST": "gitlab.example.com", "CI_PROJECT_PATH": "g/sub/infra"},
			want: "gitlab.example.com/g/sub/infra//stacks/app", source: "gitlab"},
		{name: "circleci", dir: app, git: repo(top, ""),
			env:  map[string]string{"CIRCLECI": "true", "CIRCLE_REPOSITORY_URL": "git@github.com:acme/infra.git"},
			want: "github.com/acme/infra//stacks/app", source: "circleci"},
		{name: "bitbucket", dir: app, git: repo(top, "http://bitbucket.org/ws/infra"),
			env:  map[string]string{"BITBUCKET_REPO_FULL_NAME": "ws/infra"},
			want: "bitbucket.org/ws/infra//stacks/app", source: "bitbucket"},
		{name: "flag wins", dir: app, flag: "network", declared: "x", env: map[string]string{EnvVar: "y"}, git: repo(top, origin), want: "network", source: "flag"},
		{name: "env before hcl", dir: app, declared: "x", env: map[string]string{EnvVar: "y"}, git: repo(top, origin), want: "y", source: "env"},
		{name: "hcl before derived", dir: app, declared: "acme/app", git: repo(top, origin), want: "acme/app", source: "hcl"},
		{name: "no origin", dir: app, git: repo(top, ""), want: "local/" + strings.TrimPrefix(filepath.ToSlash(top), "/") + "//stacks/app", source: "path", warns: true},
		{name: "no repository", dir: outside, want: "local/" + strings.TrimPrefix(filepath.ToSlash(outside), "/"), source: "path", warns: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Detect(tc.dir, tc.flag, tc.declared, Sources{Getenv: func(k string) string { return tc.env[k] }, Git: tc.git})
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.want || got.Source != tc.source || (got.Warning != "") != tc.warns {
				t.Errorf("Detect = %+v, want %q from %s (warning %v)", got, tc.want, tc.source, tc.warns)
			}
		})
	}
}

func TestDetectRefusesBadNames(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"../x", "/abs", "a/../b", "a b", "x.lock", "a:b"} {
		if _, err := Detect(t.TempDir(), bad, "", Sources{}); !errcode.Is(err, errcode.Usage) {
			t.Errorf("Detect with --stack %q = %v, want USAGE", bad, err)
		}
	}
}

func TestDeclared(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
		fails bool
	}{
		"literal":   {files: map[string]string{"main.tf": `resource "sponson_scope" "this" { stack = "acme/infra//app" }`}, want: "acme/infra//app"},
		"json":      {files: map[string]string{"main.tf.json": `{"resource": {"sponson_scope": {"this": {"stack": "acme/app"}}}}`}, want: "acme/app"},
		"none":      {files: map[string]string{"main.tf": `resource "sponson_scope" "this" {}`}},
		"other":     {files: map[string]string{"main.tf": `resource "terraform_data" "x" { input = "y" }`}},
		"variable":  {files: map[string]string{"main.tf": `resource "sponson_scope" "this" { stack = var.stack }`}, fails: true},
		"template":  {files: map[string]string{"main.tf": `resource "sponson_scope" "this" { stack = "acme/${var.x}" }`}, fails: true},
		"function":  {files: map[string]string{"main.tf": `resource "sponson_scope" "this" { stack = lower("X") }`}, fails: true},
		"number":    {files: map[string]string{"main.tf": `resource "sponson_scope" "this" { stack = 3 }`}, fails: true},
		"two names": {files: map[string]string{"a.tf": `resource "sponson_scope" "a" { stack = "x" }`, "b.tf": `resource "sponson_scope" "b" { stack = "y" }`}, fails: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for n, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Declared(dir)
			if tc.fails {
				if !errcode.Is(err, errcode.Usage) {
					t.Fatalf("Declared = %q, %v; want USAGE", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Declared = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
