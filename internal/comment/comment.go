// Package comment keeps one sticky summary comment per pull request (or
// merge request), stack and environment: it finds the comment by its hidden
// marker (summary.Marker) and updates it in place, or posts it the first
// time. The host (GitHub or GitLab) and the pull request come from the CI
// environment; a comment is a courtesy, so every failure here is reported by
// the caller as a warning and never changes a run's outcome (docs/design.md
// §4.3).
package comment

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/github"
	"github.com/sponson/terraform-provider-sponson/internal/gitlab"
)

// Existing is a comment already on the pull request.
type Existing struct {
	ID   int64
	Body string
}

// Host is where comments go: a GitHub pull request or a GitLab merge request.
type Host interface {
	// Name says which pull request, for messages.
	Name() string
	// Limit is the largest body the host takes.
	Limit() int
	// FullPlanAt is where the whole plan can be read (the CI job), for a
	// summary cut at Limit.
	FullPlanAt() string
	List(ctx context.Context) ([]Existing, error)
	Create(ctx context.Context, body string) error
	Update(ctx context.Context, id int64, body string) error
}

// Outcome says what Sticky did.
type Outcome string

// The outcomes.
const (
	Created   Outcome = "created"
	Updated   Outcome = "updated"
	Unchanged Outcome = "unchanged"
)

// Sticky makes body the one comment of h that starts with marker: the first
// such comment is updated (others, left by an older version or a race, are
// left alone), or a new one is posted. body must start with marker.
func Sticky(ctx context.Context, h Host, marker, body string) (Outcome, error) {
	if !strings.HasPrefix(body, marker) {
		return "", errors.New("the comment does not start with its marker")
	}
	existing, err := h.List(ctx)
	if err != nil {
		return "", err
	}
	for _, c := range existing {
		if strings.HasPrefix(strings.TrimLeft(c.Body, " \t\r\n"), marker) {
			if c.Body == body {
				return Unchanged, nil
			}
			return Updated, h.Update(ctx, c.ID, body)
		}
	}
	return Created, h.Create(ctx, body)
}

// ErrNoTarget is returned by FromEnv when the run is not in a pull request
// or merge request pipeline that can be commented on; ErrNoToken when it is
// but no token is set.
var (
	ErrNoTarget = errors.New("not in a GitHub pull request or GitLab merge request pipeline")
	ErrNoToken  = errors.New("no token to comment with")
)

// Env is what FromEnv reads.
type Env struct {
	Getenv func(string) string
	// PullRequest is the run's pull request number (from context
	// detection); 0 reads CI_MERGE_REQUEST_IID on GitLab.
	PullRequest int
	HTTP        *http.Client
}

// FromEnv decides the host from the CI environment: GitHub Actions
// (GITHUB_REPOSITORY, GITHUB_TOKEN, GITHUB_API_URL) or GitLab CI
// (CI_PROJECT_ID, CI_MERGE_REQUEST_IID, CI_API_V4_URL, and
// SPONSON_GITLAB_TOKEN, GITLAB_TOKEN or CI_JOB_TOKEN). The error says what
// is missing, wrapping ErrNoTarget or ErrNoToken.
func FromEnv(e Env) (Host, error) {
	get := func(k string) string { return strings.TrimSpace(e.Getenv(k)) }
	switch {
	case get("GITHUB_ACTIONS") == "true" || get("GITHUB_REPOSITORY") != "":
		repo := get("GITHUB_REPOSITORY")
		if repo == "" || e.PullRequest <= 0 {
			return nil, fmt.Errorf("%w: the run has no pull request (GITHUB_REPOSITORY %q, pull request %d)", ErrNoTarget, repo, e.PullRequest)
		}
		token := get("GITHUB_TOKEN")
		if token == "" {
			return nil, fmt.Errorf("%w: set GITHUB_TOKEN (with pull-requests: write) to comment on %s#%d", ErrNoToken, repo, e.PullRequest)
		}
		jobURL := ""
		if s, id := get("GITHUB_SERVER_URL"), get("GITHUB_RUN_ID"); s != "" && id != "" {
			jobURL = strings.TrimSuffix(s, "/") + "/" + repo + "/actions/runs/" + id
		}
		return &gitHubPR{c: &github.Client{BaseURL: get("GITHUB_API_URL"), Token: token, HTTP: e.HTTP}, repo: repo, number: e.PullRequest, jobURL: jobURL}, nil
	case get("GITLAB_CI") == "true" || get("CI_PROJECT_ID") != "":
		project := get("CI_PROJECT_ID")
		iid := e.PullRequest
		if iid <= 0 {
			iid, _ = strconv.Atoi(get("CI_MERGE_REQUEST_IID"))
		}
		if project == "" || iid <= 0 {
			return nil, fmt.Errorf("%w: the pipeline has no merge request (CI_PROJECT_ID %q, CI_MERGE_REQUEST_IID %q)", ErrNoTarget, project, get("CI_MERGE_REQUEST_IID"))
		}
		c := &gitlab.Client{BaseURL: get("CI_API_V4_URL"), HTTP: e.HTTP}
		for _, k := range []string{"SPONSON_GITLAB_TOKEN", "GITLAB_TOKEN"} {
			if c.Token = get(k); c.Token != "" {
				break
			}
		}
		if c.Token == "" {
			c.JobToken = get("CI_JOB_TOKEN")
		}
		if c.Token == "" && c.JobToken == "" {
			return nil, fmt.Errorf("%w: set SPONSON_GITLAB_TOKEN (a token with the api scope) to comment on merge request !%d", ErrNoToken, iid)
		}
		return &gitLabMR{c: c, project: project, iid: iid, jobURL: get("CI_JOB_URL")}, nil
	}
	return nil, ErrNoTarget
}

type gitHubPR struct {
	c      *github.Client
	repo   string
	number int
	jobURL string
}

func (g *gitHubPR) Name() string       { return fmt.Sprintf("GitHub pull request %s#%d", g.repo, g.number) }
func (g *gitHubPR) Limit() int         { return github.CommentLimit }
func (g *gitHubPR) FullPlanAt() string { return g.jobURL }

func (g *gitHubPR) List(ctx context.Context) ([]Existing, error) {
	cs, err := g.c.Comments(ctx, g.repo, g.number)
	out := make([]Existing, 0, len(cs))
	for _, c := range cs {
		out = append(out, Existing{ID: c.ID, Body: c.Body})
	}
	return out, err
}

func (g *gitHubPR) Create(ctx context.Context, body string) error {
	_, err := g.c.CreateComment(ctx, g.repo, g.number, body)
	return err
}

func (g *gitHubPR) Update(ctx context.Context, id int64, body string) error {
	_, err := g.c.UpdateComment(ctx, g.repo, id, body)
	return err
}

type gitLabMR struct {
	c       *gitlab.Client
	project string
	iid     int
	jobURL  string
}

func (g *gitLabMR) Name() string {
	return fmt.Sprintf("GitLab merge request !%d of project %s", g.iid, g.project)
}
func (g *gitLabMR) Limit() int         { return gitlab.NoteLimit }
func (g *gitLabMR) FullPlanAt() string { return g.jobURL }

func (g *gitLabMR) List(ctx context.Context) ([]Existing, error) {
	ns, err := g.c.Notes(ctx, g.project, g.iid)
	out := make([]Existing, 0, len(ns))
	for _, n := range ns {
		if !n.System {
			out = append(out, Existing{ID: n.ID, Body: n.Body})
		}
	}
	return out, err
}

func (g *gitLabMR) Create(ctx context.Context, body string) error {
	_, err := g.c.CreateNote(ctx, g.project, g.iid, body)
	return err
}

func (g *gitLabMR) Update(ctx context.Context, id int64, body string) error {
	_, err := g.c.UpdateNote(ctx, g.project, g.iid, id, body)
	return err
}
