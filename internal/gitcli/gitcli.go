// Package gitcli is the one way Sponson runs the git command line: the git
// store, context detection (runctx), the older-commit check (ancestry) and
// gc's live branches all build their commands here. It decides the four
// things every git command needs and that were once decided four ways:
//
//   - the environment (Environ): the caller's, without the variables that
//     would point git at another repository or change what it prints, and
//     without SPONSON_* (the state key above all: git and a local remote's
//     hooks need none of it), in the C locale (callers read git's messages),
//     never prompting for a password;
//   - credential scrubbing (Scrubber): git's messages lose every credential
//     before anyone sees them;
//   - timeouts (Cmd.Timeout): a wedged file system, a hook or a network that
//     swallows packets must not hang a run;
//   - WaitDelay: a hook or credential helper that inherited git's pipes must
//     not keep the caller waiting once git itself is gone.
package gitcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// WaitDelay bounds how long a command waits, after git exited or was
// killed, for pipes a child of git still holds.
const WaitDelay = 2 * time.Second

// Cmd is one git command.
type Cmd struct {
	Args []string
	// Dir runs git as `git -C Dir`; GitDir as `git --git-dir=GitDir` in
	// that directory (a bare repository). At most one is set.
	Dir    string
	GitDir string
	// Env is the command's environment; Environ() when nil.
	Env   []string
	Stdin []byte
	// Timeout bounds the command; none beyond ctx when zero. A command it
	// stops fails with an error wrapping context.DeadlineExceeded that says
	// after how long.
	Timeout time.Duration
	// Scrub removes credentials from git's standard error; Scrubber("")
	// when nil.
	Scrub func(string) string
}

// Command returns the exec.Cmd of c under ctx, for a caller that talks to a
// long-running git through pipes (cat-file --batch); Run is the way for
// every other command. It does not apply Timeout.
func (c Cmd) Command(ctx context.Context) *exec.Cmd {
	args := c.Args
	switch {
	case c.GitDir != "":
		args = append([]string{"--git-dir=" + c.GitDir}, args...)
	case c.Dir != "":
		args = append([]string{"-C", c.Dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = Environ()
	}
	if c.GitDir != "" {
		cmd.Dir = c.GitDir
	}
	cmd.WaitDelay = WaitDelay
	return cmd
}

// Run runs c and returns its standard output and its standard error,
// scrubbed of credentials. err is the process's: nil when git exited 0, an
// *exec.ExitError when it exited otherwise, exec.ErrNotFound when there is
// no git, and for a command Timeout stopped an error wrapping
// context.DeadlineExceeded.
func (c Cmd) Run(ctx context.Context) (stdout []byte, stderr string, err error) {
	parent := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := c.Command(ctx)
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	scrub := c.Scrub
	if scrub == nil {
		scrub = Scrubber("")
	}
	if err != nil && c.Timeout > 0 && ctx.Err() != nil && parent.Err() == nil {
		err = fmt.Errorf("%w after %s", context.DeadlineExceeded, c.Timeout)
	}
	return out.Bytes(), scrub(errOut.String()), err
}

// ExitCode returns the exit code git ended with; -1 when err says git did
// not run to an exit code (not found, stopped, killed).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		return ee.ExitCode()
	}
	return -1
}

// Environ returns the environment of a git command: the caller's, without
// the variables that would point git at another repository, trace it or
// change its language, without SPONSON_*, in the C locale and never
// prompting; with config as GIT_CONFIG_* entries appended to any the caller
// has (configuration that reaches git without a file or the command line,
// which other users of the machine can read).
func Environ(config ...[2]string) []string {
	var env []string
	var inherited [][2]string
	count, _ := strconv.Atoi(os.Getenv("GIT_CONFIG_COUNT"))
	for i := range count {
		k, v := os.Getenv(fmt.Sprintf("GIT_CONFIG_KEY_%d", i)), os.Getenv(fmt.Sprintf("GIT_CONFIG_VALUE_%d", i))
		if k != "" {
			inherited = append(inherited, [2]string{k, v})
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "GIT_CONFIG_KEY_"), strings.HasPrefix(name, "GIT_CONFIG_VALUE_"):
			continue
		case strings.HasPrefix(name, "SPONSON_"):
			continue
		}
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
			"GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
			"GIT_QUARANTINE_PATH", "GIT_SHALLOW_FILE", "GIT_REPLACE_REF_BASE", "GIT_GRAFT_FILE", "GIT_CONFIG_COUNT",
			"GIT_TERMINAL_PROMPT", "LC_ALL", "LANGUAGE", "GCM_INTERACTIVE", "GIT_TRACE", "GIT_TRACE_PACKET", "GIT_TRACE_CURL", "GIT_CURL_VERBOSE":
			continue
		}
		env = append(env, kv)
	}
	cfg := append(inherited, config...)
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never", "GIT_NO_REPLACE_OBJECTS=1",
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(cfg)))
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// credentialPatterns find credentials in any text git prints: user:password@
// in URLs and authorization headers.
var credentialPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`(://[^/:@\s]*):[^/@\s]*@`), "${1}@"},
	{regexp.MustCompile(`(?i)(authorization:\s*(?:basic|bearer|token)?\s*)\S+`), "${1}***"},
}

// Scrubber returns a function that removes credentials from a text: the
// secrets of the remote's URL (see URLSecrets) wherever they appear, raw or
// escaped, each of secrets of 8 characters or more, and anything that looks
// like a credential.
func Scrubber(remote string, secrets ...string) func(string) string {
	var pairs []string
	for _, sec := range URLSecrets(remote) {
		for _, form := range []string{sec, url.QueryEscape(sec), url.PathEscape(sec)} {
			if len(form) >= 3 {
				pairs = append(pairs, form, "***")
			}
		}
	}
	rep := strings.NewReplacer(pairs...)
	return func(text string) string {
		for _, sec := range secrets {
			if len(sec) >= 8 {
				text = strings.ReplaceAll(text, sec, "***")
			}
		}
		for _, p := range credentialPatterns {
			text = p.re.ReplaceAllString(text, p.repl)
		}
		return rep.Replace(text)
	}
}

// URLSecrets returns the credentials a remote URL carries: its password, and
// for HTTP(S) a user name without password, which is how tokens are passed
// (https://TOKEN@host/...). An SSH user name (git@) is not a secret.
func URLSecrets(remote string) []string {
	u, err := url.Parse(remote)
	if err != nil || u.User == nil {
		return nil
	}
	if p, ok := u.User.Password(); ok {
		return []string{p}
	}
	if (u.Scheme == "http" || u.Scheme == "https") && u.User.Username() != "" {
		return []string{u.User.Username()}
	}
	return nil
}
