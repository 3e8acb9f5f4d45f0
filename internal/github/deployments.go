package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Deployment is what CreateDeployment asks GitHub to record: a deployment
// of Ref (a commit) to Environment, the fields of POST
// /repos/{owner}/{repo}/deployments that Sponson sets.
type Deployment struct {
	Ref         string `json:"ref"`
	Environment string `json:"environment"`
	Description string `json:"description,omitempty"`
	// AutoMerge is false and RequiredContexts empty: the deployment records
	// an apply that already happened, so GitHub must neither merge the
	// default branch into Ref nor wait for the commit's checks.
	AutoMerge        bool     `json:"auto_merge"`
	RequiredContexts []string `json:"required_contexts"`
	// Transient marks an environment that will be destroyed (a preview):
	// its inactive status then shows as destroyed.
	Transient  bool `json:"transient_environment"`
	Production bool `json:"production_environment"`
}

// DeploymentStatus is one status of a deployment: POST
// /repos/{owner}/{repo}/deployments/{id}/statuses.
type DeploymentStatus struct {
	// State is success when the environment is up, inactive when it is
	// gone (one of error, failure, inactive, in_progress, queued, pending,
	// success).
	State string `json:"state"`
	// EnvironmentURL is the address of the environment: the pull request's
	// "View deployment" button.
	EnvironmentURL string `json:"environment_url,omitempty"`
	// LogURL is the job that deployed.
	LogURL      string `json:"log_url,omitempty"`
	Description string `json:"description,omitempty"`
	// AutoInactive marks the environment's earlier successful deployments
	// inactive (GitHub's default is true).
	AutoInactive bool `json:"auto_inactive"`
}

// CreateDeployment records a deployment and returns its id.
func (c *Client) CreateDeployment(ctx context.Context, repo string, d Deployment) (int64, error) {
	u, err := c.repoURL(repo, "deployments")
	if err != nil {
		return 0, err
	}
	if d.RequiredContexts == nil {
		d.RequiredContexts = []string{}
	}
	var out struct {
		ID      int64  `json:"id"`
		Message string `json:"message"`
	}
	if _, err := c.do(ctx, http.MethodPost, u, d, &out, "a deployment"); err != nil {
		return 0, err
	}
	if out.ID == 0 {
		// 202 with a message: GitHub merged or will merge instead, which
		// auto_merge false rules out; say what it said.
		return 0, fmt.Errorf("GitHub API: no deployment was created: %s", out.Message)
	}
	return out.ID, nil
}

// CreateDeploymentStatus adds a status to deployment id of repo.
func (c *Client) CreateDeploymentStatus(ctx context.Context, repo string, id int64, s DeploymentStatus) error {
	u, err := c.repoURL(repo, "deployments", fmt.Sprint(id), "statuses")
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPost, u, s, nil, "a deployment status")
	return err
}

// Deployments returns the ids of the deployments of repo to environment,
// newest first as GitHub lists them (GET /repos/{owner}/{repo}/deployments
// ?environment=...), every page.
func (c *Client) Deployments(ctx context.Context, repo, environment string) ([]int64, error) {
	u, err := c.repoURL(repo, "deployments")
	if err != nil {
		return nil, err
	}
	base, _ := c.base()
	u.RawQuery = url.Values{"environment": {environment}, "per_page": {fmt.Sprint(perPage)}}.Encode()
	maxPages := c.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	var out []int64
	for page := 1; u != nil; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("GitHub API: more than %d pages of deployments of %s in %s; stopped", maxPages, environment, repo)
		}
		var ds []struct {
			ID int64 `json:"id"`
		}
		link, err := c.do(ctx, http.MethodGet, u, nil, &ds, "a list of deployments")
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			out = append(out, d.ID)
		}
		if u, err = nextPage(base, link); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// repoURL is the API URL of a path under /repos/{owner}/{repo}.
func (c *Client) repoURL(repo string, parts ...string) (*url.URL, error) {
	owner, name, err := ParseRepo(repo)
	if err != nil {
		return nil, err
	}
	base, err := c.base()
	if err != nil {
		return nil, err
	}
	return base.JoinPath(append([]string{"repos", owner, name}, parts...)...), nil
}

// PullRequestHead returns the commit at the head of pull request number of
// repo (GET /repos/{owner}/{repo}/pulls/{number}, head.sha): what a
// comment-triggered run must have checked out.
func (c *Client) PullRequestHead(ctx context.Context, repo string, number int) (string, error) {
	if number <= 0 {
		return "", fmt.Errorf("pull request number %d is not positive", number)
	}
	u, err := c.repoURL(repo, "pulls", fmt.Sprint(number))
	if err != nil {
		return "", err
	}
	var pr struct {
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	if _, err := c.do(ctx, http.MethodGet, u, nil, &pr, "a pull request"); err != nil {
		return "", err
	}
	if pr.Head.SHA == "" {
		return "", fmt.Errorf("GitHub API: pull request %s#%d names no head commit", repo, number)
	}
	return pr.Head.SHA, nil
}
