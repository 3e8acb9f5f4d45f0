package runctx

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
)

// gitTimeout bounds each git command: detection must not hang a run on a
// wedged file system or a repository hook, and a slow answer is no answer.
const gitTimeout = 5 * time.Second

// ProcessSources returns the Sources of the running process: its
// environment, its file system, and the git CLI run in dir (the
// configuration directory, which need not be the working directory). The
// Git func fails when git is not installed, dir is not in a repository, or a
// command takes longer than 5 s; Detect takes any failure as "no answer".
// The questions a run of many stacks answered for its stacks' runs
// (GitAnswersVar) are not asked again.
func ProcessSources(dir string) Sources {
	return Sources{
		Getenv:   os.Getenv,
		ReadFile: os.ReadFile,
		Git:      answered(dir, sharedAnswers(), askGit(dir)),
	}
}

// askGit runs read-only git commands (package gitcli) and returns their
// trimmed standard output. Standard error goes into the error, so that a
// failure can be explained (CTX_NULL names it).
func askGit(dir string) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		out, stderr, err := gitcli.Cmd{Dir: dir, Args: args, Timeout: gitTimeout}.Run(context.Background())
		if err != nil {
			if msg := strings.TrimSpace(stderr); msg != "" {
				return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
			}
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
}

// localGit is the last source of Detect. Each field runs its own command, and
// only when no earlier source answered it, so a CI run with every variable
// set never starts git; the branch and the commit come from one command, and
// once git has said there is no repository nothing more is asked
// (docs/design.md §8: no start the run does not need). It never answers the
// pull request: that would take gh and the network.
type localGit struct {
	run     func(args ...string) (string, error)
	failure string // why branch gave no answer, for CTX_NULL
	head    string // the commit branch read along with it
	absent  bool   // git answered nothing: no repository, or no git
}

// branch is the checked-out branch; a detached HEAD (what CI checkouts and
// `git checkout <sha>` produce) has none. The same command reads the commit
// (`rev-parse HEAD --symbolic-full-name HEAD` prints the commit, then the
// ref HEAD points to, or HEAD when detached).
func (g *localGit) branch() string {
	if g.run == nil {
		g.failure = "not available"
		return ""
	}
	out, err := g.run("rev-parse", "HEAD", "--symbolic-full-name", "HEAD")
	if err != nil {
		// rev-parse fails on an unborn branch (a repository without commits
		// yet); symbolic-ref still names it.
		// Outside a repository there is nothing to ask it.
		if !strings.Contains(err.Error(), "not a git repository") {
			if b, serr := g.run("symbolic-ref", "--short", "-q", "HEAD"); serr == nil && b != "" {
				return b
			}
		}
		g.failure = err.Error()
		g.absent = true
		return ""
	}
	sha, ref, _ := strings.Cut(out, "\n")
	g.head = strings.TrimSpace(sha)
	ref = strings.TrimSpace(ref)
	if ref == "HEAD" || ref == "" {
		g.failure = "HEAD is detached (no branch checked out)"
		return ""
	}
	return strings.TrimPrefix(ref, "refs/heads/")
}

func (g *localGit) commit() string {
	if g.head != "" {
		return g.head
	}
	if g.run == nil || g.absent {
		return ""
	}
	out, err := g.run("rev-parse", "HEAD")
	if err != nil {
		return ""
	}
	return out
}

// defaultBranch is what the clone recorded as the remote's default branch;
// clones made by CI checkouts often lack it, hence "no answer" on failure.
func (g *localGit) defaultBranch() string {
	if g.run == nil || g.absent {
		return ""
	}
	out, err := g.run("symbolic-ref", "--short", "refs/remotes/origin/HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(out, "origin/")
}

// why says what local git answered for the branch, for the CTX_NULL message.
func (g *localGit) why() string {
	if g.failure != "" {
		return g.failure
	}
	return "answered"
}
