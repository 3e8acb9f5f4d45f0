// Package ancestry decides whether a run's commit is older than the commit
// its scope last applied, so that a late or re-run job never rolls a scope
// back (docs/design.md §2.15). It asks the git checkout
// the run works in; when git cannot decide (no repository, a shallow clone
// whose history stops short, a commit the clone does not have) the answer is
// Unknown with the reason, and the run warns and proceeds: refusing on a
// guess would block every CI checkout that fetched one commit.
package ancestry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
)

// Verdict is how a run's commit relates to the scope's last applied one.
type Verdict int

const (
	// Unknown: git could not tell; Result.Why says why.
	Unknown Verdict = iota
	// Older: the run's commit is a strict ancestor of the last applied one.
	Older
	// NotOlder: the same commit, a descendant, or unrelated history (a
	// force-push, another line of work): applying it rolls nothing back
	// that history can show.
	NotOlder
)

// Result is a verdict and, for Unknown, why.
type Result struct {
	Verdict Verdict
	Why     string
}

// Git runs `git args...` and returns its exit code and its trimmed standard
// output and error; a non-nil error means git did not run to an exit code.
type Git func(ctx context.Context, args ...string) (exit int, stdout, stderr string, err error)

// timeout bounds each git command: a wedged file system must not hang the
// run, and a slow answer is an Unknown one.
const timeout = 10 * time.Second

// GitIn returns a Git that runs the git CLI in dir (package gitcli).
func GitIn(dir string) Git {
	return func(ctx context.Context, args ...string) (int, string, string, error) {
		stdout, stderr, err := gitcli.Cmd{Dir: dir, Args: args, Timeout: timeout}.Run(ctx)
		out, errOut := strings.TrimSpace(string(stdout)), strings.TrimSpace(stderr)
		switch {
		case err == nil:
			return 0, out, errOut, nil
		case ctx.Err() != nil:
			return -1, "", "", fmt.Errorf("git %s: %w after %s", strings.Join(args, " "), ctx.Err(), timeout)
		case errors.Is(err, context.DeadlineExceeded):
			return -1, "", "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		case gitcli.ExitCode(err) >= 0:
			return gitcli.ExitCode(err), out, errOut, nil
		default:
			return -1, "", "", err
		}
	}
}

// Compare decides whether commit is older than last, the commit the scope
// last applied. Either may be abbreviated; equal commits (or one a prefix of
// the other) are NotOlder, so a re-run of the same commit always proceeds.
func Compare(ctx context.Context, git Git, commit, last string) Result {
	commit, last = strings.TrimSpace(commit), strings.TrimSpace(last)
	switch {
	case last == "":
		return Result{Verdict: NotOlder}
	case commit == "":
		return Result{Why: "this run's commit is unknown (no --commit, no CI variable, no git checkout)"}
	case strings.HasPrefix(commit, last) || strings.HasPrefix(last, commit):
		return Result{Verdict: NotOlder}
	}
	// --is-ancestor exits 0 when commit is an ancestor of last, 1 when it
	// is not, and 128 when either commit is unknown to the clone.
	code, _, stderr, err := git(ctx, "merge-base", "--is-ancestor", commit, last)
	switch {
	case err != nil:
		return Result{Why: err.Error()}
	case code == 0:
		return Result{Verdict: Older}
	case code == 1:
		// In a shallow clone "not an ancestor" may only mean that the
		// history that would connect them was not fetched.
		if c, out, _, err := git(ctx, "rev-parse", "--is-shallow-repository"); err == nil && c == 0 && out == "true" {
			return Result{Why: "the clone is shallow, so its history may not connect the two commits (fetch the whole history: actions/checkout with fetch-depth: 0, GIT_DEPTH: 0 in GitLab)"}
		}
		return Result{Verdict: NotOlder}
	default:
		why := fmt.Sprintf("git cannot compare %s with %s", short(commit), short(last))
		if stderr != "" {
			why += ": " + stderr
		}
		return Result{Why: why}
	}
}

// short abbreviates a commit to 7 characters, as git shows it.
func short(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}
