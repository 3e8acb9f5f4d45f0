package runctx

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// GitAnswersVar carries, from a run of many stacks to each stack's own
// sponson process, git's answers to the questions that are the
// repository's and not the directory's: the commit and branch checked out,
// the remote's default branch, the repository's root and its origin
// (docs/design.md §8: a shared run does not repeat per stack what is the
// same for every stack). Each stack's run would otherwise start four to
// seven git processes (seven when its provider reads another stack's
// outputs) to learn what its parent already knew. It is a cache, not a
// source: a directory outside the repository it names, or a question it
// does not hold, is asked of git as before, so a run answers the same with
// or without it.
const GitAnswersVar = "SPONSON_GIT_ANSWERS"

// repoQuestions are what context detection (localGit) and a stack's name
// (package stack) ask git, each the same in every directory of one
// repository.
var repoQuestions = [][]string{
	{"rev-parse", "HEAD", "--symbolic-full-name", "HEAD"},
	{"rev-parse", "HEAD"},
	{"symbolic-ref", "--short", "refs/remotes/origin/HEAD"},
	{"rev-parse", "--show-toplevel"},
	{"remote", "get-url", "origin"},
}

// gitAnswers is GitAnswersVar's value: the repository's root and, by
// question (its arguments joined by NUL), git's output or the error it
// gave.
type gitAnswers struct {
	Top     string               `json:"top"`
	Answers map[string]gitAnswer `json:"answers"`
}

type gitAnswer struct {
	Out string `json:"out,omitempty"`
	Err string `json:"err,omitempty"`
}

func questionKey(args []string) string { return strings.Join(args, "\x00") }

// GitAnswers asks git in top, once, every question a stack's run of this
// repository would ask, and returns them as GitAnswersVar's value; "" when
// top is not a repository's root (then there is nothing to share).
func GitAnswers(top string) string {
	git := askGit(top)
	a := gitAnswers{Top: top, Answers: map[string]gitAnswer{}}
	for _, q := range repoQuestions {
		out, err := git(q...)
		if err != nil {
			a.Answers[questionKey(q)] = gitAnswer{Err: err.Error()}
			continue
		}
		a.Answers[questionKey(q)] = gitAnswer{Out: out}
	}
	if got := a.Answers[questionKey([]string{"rev-parse", "--show-toplevel"})]; got.Err != "" || filepath.Clean(got.Out) != filepath.Clean(top) {
		return ""
	}
	b, err := json.Marshal(a)
	if err != nil {
		return ""
	}
	return string(b)
}

// sharedAnswers are the answers this process was given, nil when none (or
// unreadable ones: then git is asked).
var sharedAnswers = sync.OnceValue(func() *gitAnswers {
	v := os.Getenv(GitAnswersVar)
	if v == "" {
		return nil
	}
	var a gitAnswers
	if json.Unmarshal([]byte(v), &a) != nil || a.Top == "" || !filepath.IsAbs(a.Top) {
		return nil
	}
	return &a
})

// answered wraps git, which runs in dir, with the shared answers when dir
// is in the repository they are of.
func answered(dir string, a *gitAnswers, git func(args ...string) (string, error)) func(args ...string) (string, error) {
	if a == nil {
		return git
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return git
	}
	if rel, err := filepath.Rel(a.Top, abs); err != nil || !filepath.IsLocal(rel) {
		return git
	}
	return func(args ...string) (string, error) {
		if got, ok := a.Answers[questionKey(args)]; ok {
			if got.Err != "" {
				return "", errors.New(got.Err)
			}
			return got.Out, nil
		}
		return git(args...)
	}
}
