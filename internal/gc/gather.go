package gc

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
	"github.com/sponson/terraform-provider-sponson/internal/github"
)

// The gathering of the facts Select decides on: the open pull requests and
// the remote's live branches. Each returns, instead of an error, why its
// rule is off: a rule whose facts cannot be gathered selects nothing, and
// gc says so, rather than failing or collecting on a guess.

// GitHub says where the open pull requests are read when none were listed
// on the command line.
type GitHub struct {
	Token string
	Repo  string // OWNER/NAME
	// APIURL is the API root; https://api.github.com when empty.
	APIURL string
	HTTP   *http.Client
}

// OpenPRs returns the open pull requests: listed, when source (where they
// were listed) is not empty, else those the GitHub API reports for gh.Repo.
// from names where they came from; off, when not empty, says why the
// pr-closed rule is off.
func OpenPRs(ctx context.Context, listed []int, source string, gh GitHub) (prs []int, from, off string) {
	if source != "" {
		return listed, source, ""
	}
	switch {
	case gh.Token == "" && gh.Repo == "":
		return nil, "", "no open pull requests known; pass --open-prs or --open-prs-file, or set GITHUB_TOKEN and GITHUB_REPOSITORY"
	case gh.Token == "":
		return nil, "", "GITHUB_TOKEN is not set, so the open pull requests of " + gh.Repo + " cannot be read; set it, or pass --open-prs"
	case gh.Repo == "":
		return nil, "", "GITHUB_TOKEN is set but no repository is known; pass --repo OWNER/NAME or set GITHUB_REPOSITORY"
	}
	apiCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c := &github.Client{BaseURL: gh.APIURL, Token: gh.Token, HTTP: gh.HTTP}
	prs, err := c.OpenPullRequests(apiCtx, gh.Repo)
	if err != nil {
		return nil, "", err.Error()
	}
	return prs, "the GitHub API (" + gh.Repo + ")", ""
}

// HeadsFunc lists the branches of a remote, run in the configuration
// directory dir.
type HeadsFunc func(ctx context.Context, dir, remote string) ([]string, error)

// LiveBranches returns the branches of remote as heads (LsRemoteHeads when
// nil) lists them in dir; off, when not empty, says why the branch-gone
// rule is off.
func LiveBranches(ctx context.Context, heads HeadsFunc, dir, remote string) (branches []string, off string) {
	if heads == nil {
		heads = LsRemoteHeads
	}
	branches, err := heads(ctx, dir, remote)
	if err != nil {
		return nil, err.Error()
	}
	if len(branches) == 0 {
		// Every branch scope would be collected: far more likely the wrong
		// remote than a repository without branches.
		return nil, "remote " + remote + " lists no branch at all; check --remote"
	}
	return branches, ""
}

// LsRemoteHeads runs `git ls-remote --heads REMOTE` in dir (package
// gitcli).
func LsRemoteHeads(ctx context.Context, dir, remote string) ([]string, error) {
	out, stderr, err := gitcli.Cmd{Dir: dir, Args: []string{"ls-remote", "--heads", remote}, Timeout: time.Minute}.Run(ctx)
	if err != nil {
		msg := strings.TrimSpace(stderr)
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg != "" {
			return nil, fmt.Errorf("git ls-remote --heads %s failed: %s", remote, msg)
		}
		return nil, fmt.Errorf("git ls-remote --heads %s failed: %v", remote, err)
	}
	return ParseHeads(string(out)), nil
}
