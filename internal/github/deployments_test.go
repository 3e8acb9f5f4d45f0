package github_test

import (
	"context"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/comment/commenttest"
	"github.com/sponson/terraform-provider-sponson/internal/github"
)

// TestDeployments: a deployment and its statuses as the API stand-in (the
// shapes of GitHub's documentation) records them: no auto-merge, no
// required contexts, transient; listed by environment; marked inactive; and
// a pull request's head.
func TestDeployments(t *testing.T) {
	t.Parallel()
	srv := commenttest.New("tok")
	defer srv.Close()
	c := &github.Client{BaseURL: srv.URL, Token: "tok"}
	ctx := context.Background()
	id, err := c.CreateDeployment(ctx, "acme/infra", github.Deployment{Ref: "abc123", Environment: "preview/pr-7", Transient: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDeploymentStatus(ctx, "acme/infra", id, github.DeploymentStatus{State: "success", EnvironmentURL: "https://pr-7.example", AutoInactive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDeployment(ctx, "acme/infra", github.Deployment{Ref: "abc123", Environment: "preview/pr-8"}); err != nil {
		t.Fatal(err)
	}
	ids, err := c.Deployments(ctx, "acme/infra", "preview/pr-7")
	if err != nil || len(ids) != 1 || ids[0] != id {
		t.Fatalf("deployments of preview/pr-7: %v, %v; want [%d]", ids, err, id)
	}
	if err := c.CreateDeploymentStatus(ctx, "acme/infra", id, github.DeploymentStatus{State: "inactive"}); err != nil {
		t.Fatal(err)
	}
	ds := srv.Deployments("acme/infra")
	if len(ds) != 2 || ds[0].AutoMerge || !ds[0].Transient || len(ds[0].Statuses) != 2 ||
		ds[0].Statuses[0].EnvironmentURL != "https://pr-7.example" || ds[0].Statuses[1].State != "inactive" {
		t.Errorf("recorded %+v", ds)
	}
	if err := c.CreateDeploymentStatus(ctx, "acme/infra", id, github.DeploymentStatus{State: "bogus"}); err == nil {
		t.Errorf("a status GitHub does not know was accepted")
	}

	srv.SetPullRequest("acme/infra", 7, "feedface")
	if sha, err := c.PullRequestHead(ctx, "acme/infra", 7); err != nil || sha != "feedface" {
		t.Errorf("head of #7: %q, %v", sha, err)
	}
	if _, err := c.PullRequestHead(ctx, "acme/infra", 8); err == nil {
		t.Errorf("the head of a pull request that does not exist")
	}
	bad := &github.Client{BaseURL: srv.URL, Token: "wrong"}
	if _, err := bad.CreateDeployment(ctx, "acme/infra", github.Deployment{Ref: "x", Environment: "e"}); err == nil {
		t.Errorf("a deployment with a wrong token")
	}
}
