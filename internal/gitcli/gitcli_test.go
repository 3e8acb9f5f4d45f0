package gitcli_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
)

func TestEnviron(t *testing.T) {
	t.Setenv("GIT_DIR", "/elsewhere")
	t.Setenv("GIT_WORK_TREE", "/elsewhere")
	t.Setenv("LC_ALL", "de_DE.UTF-8")
	t.Setenv("SPONSON_STATE_KEY", "secret")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "http.extraheader")
	t.Setenv("GIT_CONFIG_VALUE_0", "AUTHORIZATION: basic xyz")
	t.Setenv("HOME", "/home/ci")

	env := gitcli.Environ([2]string{"remote.sponson.url", "https://example.com/r.git"})

	for _, gone := range []string{"GIT_DIR=", "GIT_WORK_TREE=", "LC_ALL=de", "SPONSON_"} {
		if i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, gone) }); i >= 0 {
			t.Errorf("Environ keeps %q", env[i])
		}
	}
	for _, want := range []string{
		"HOME=/home/ci", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=AUTHORIZATION: basic xyz",
		"GIT_CONFIG_KEY_1=remote.sponson.url", "GIT_CONFIG_VALUE_1=https://example.com/r.git",
	} {
		if !slices.Contains(env, want) {
			t.Errorf("Environ lacks %q", want)
		}
	}
}

func TestScrubber(t *testing.T) {
	t.Parallel()
	scrub := gitcli.Scrubber("https://bot:p%40ss%2Fw0rd@example.com/r.git", "a-token-of-the-checkout")
	in := "fatal: https://bot:p@ss/w0rd@example.com p%40ss%2Fw0rd a-token-of-the-checkout Authorization: Bearer abc123 https://u:pw@host/x"
	got := scrub(in)
	for _, secret := range []string{"p@ss/w0rd", "p%40ss%2Fw0rd", "a-token-of-the-checkout", "abc123", ":pw@"} {
		if strings.Contains(got, secret) {
			t.Errorf("scrubbed text still holds %q: %s", secret, got)
		}
	}
	if token := gitcli.Scrubber("https://ghp_tokentoken@github.com/o/r.git")("pushing to ghp_tokentoken"); strings.Contains(token, "ghp_tokentoken") {
		t.Errorf("an HTTPS user name without password is a token: %s", token)
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	ctx := context.Background()
	dir := t.TempDir()
	if _, stderr, err := (gitcli.Cmd{Dir: dir, Args: []string{"init", "-q"}}).Run(ctx); err != nil {
		t.Fatalf("git init: %v: %s", err, stderr)
	}
	out, _, err := gitcli.Cmd{Dir: dir, Args: []string{"rev-parse", "--git-dir"}}.Run(ctx)
	if err != nil || strings.TrimSpace(string(out)) != ".git" {
		t.Fatalf("rev-parse --git-dir in %s = %q, %v; want .git", dir, out, err)
	}
	bare := filepath.Join(dir, ".git")
	out, _, err = gitcli.Cmd{GitDir: bare, Args: []string{"hash-object", "--stdin"}, Stdin: []byte("x\n")}.Run(ctx)
	if err != nil || len(strings.TrimSpace(string(out))) != 40 {
		t.Fatalf("hash-object --stdin = %q, %v", out, err)
	}

	_, stderr, err := gitcli.Cmd{Dir: filepath.Join(dir, "missing"), Args: []string{"status"}}.Run(ctx)
	if code := gitcli.ExitCode(err); code <= 0 || stderr == "" {
		t.Errorf("git -C missing status: exit %d, stderr %q; want a failure that says why", code, stderr)
	}
	if code := gitcli.ExitCode(nil); code != 0 {
		t.Errorf("ExitCode(nil) = %d", code)
	}
}
