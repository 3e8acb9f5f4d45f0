package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// ghConcurrency is GitHub Actions' concurrency as its documentation states
// it ("Control the concurrency of workflows and jobs"), for jobs of one
// repository:
//
//   - group names match case-insensitively;
//   - a job queued while another job of its group is in progress is pending;
//     an existing pending job of the group is cancelled and the new one takes
//     its place;
//   - with cancel-in-progress: true, the job queued also cancels the job of
//     its group in progress.
type ghConcurrency struct {
	running, pending map[string]string // group → job run
	cancelled        []string
}

func newGHConcurrency() *ghConcurrency {
	return &ghConcurrency{running: map[string]string{}, pending: map[string]string{}}
}

// queue a job run in group; it starts at once when the group is free.
func (c *ghConcurrency) queue(run, group string, cancelInProgress bool) {
	g := strings.ToLower(group)
	if p, ok := c.pending[g]; ok {
		c.cancelled = append(c.cancelled, p)
		delete(c.pending, g)
	}
	if r, ok := c.running[g]; ok {
		if !cancelInProgress {
			c.pending[g] = run
			return
		}
		c.cancelled = append(c.cancelled, r)
	}
	c.running[g] = run
}

// finish ends the run in progress in group and starts the pending one.
func (c *ghConcurrency) finish(group string) {
	g := strings.ToLower(group)
	delete(c.running, g)
	if p, ok := c.pending[g]; ok {
		c.running[g] = p
		delete(c.pending, g)
	}
}

// ghGroup evaluates a job's concurrency group for an event.
func ghGroup(t *testing.T, w *ghWorkflow, job string, e ghEvent) (string, bool) {
	t.Helper()
	j := w.Jobs.byKey[job]
	if j == nil {
		t.Fatalf("no job %s", job)
	}
	var err error
	group := exprPat.ReplaceAllStringFunc(j.Concurrency.Group, func(m string) string {
		v, e2 := evalExpr(exprPat.FindStringSubmatch(m)[1], ghLookup(e.context()), true)
		if e2 != nil {
			err = e2
		}
		return fmt.Sprint(v)
	})
	if err != nil {
		t.Fatalf("job %s: group %q: %v", job, j.Concurrency.Group, err)
	}
	return group, j.Concurrency.CancelInProgress
}

// TestCITemplatesGitHubConcurrency reads the template's concurrency groups
// and plays overlapping events through GitHub's documented rules: a newer
// push cancels the superseded plan of its scope, never an apply or destroy
// in progress; applies of one scope queue; scopes do not wait for each
// other; and a plan's cancel-in-progress cannot reach an apply because no
// plan job shares a group with an applying job.
func TestCITemplatesGitHubConcurrency(t *testing.T) {
	t.Parallel()
	w := loadGitHub(t)
	plans := map[string]bool{}   // groups of jobs that plan
	writers := map[string]bool{} // groups of jobs that apply or destroy
	events := []ghEvent{
		ghPullRequest("synchronize", 12, "feat/x", false), ghPullRequest("closed", 12, "feat/x", false),
		ghPullRequest("synchronize", 13, "feat/y", false), ghComment(12, "/sponson plan", "OWNER"),
		ghOnMain("push", map[string]any{"ref": "refs/heads/main"}),
	}
	for _, name := range w.Jobs.names {
		lines := ghStepLines(w, name)
		if len(lines) == 0 {
			continue
		}
		command := strings.Fields(lines[0].line)[1]
		if command == "gc" || command == "drift" {
			continue // they take each scope's lease themselves
		}
		for _, e := range events {
			if !slices.Contains(ghRunningJobs(t, w, e), name) {
				continue
			}
			group, cancel := ghGroup(t, w, name, e)
			if group == "" {
				t.Errorf("job %s has no concurrency group", name)
				continue
			}
			switch command {
			case "plan":
				if !cancel {
					t.Errorf("job %s plans without cancel-in-progress: a superseded plan would run on and be applied", name)
				}
				plans[strings.ToLower(group)] = true
			case "apply", "destroy":
				if cancel {
					t.Errorf("job %s %ss with cancel-in-progress: a newer push would stop it half-way", name, command)
				}
				writers[strings.ToLower(group)] = true
			}
		}
	}
	for g := range plans {
		if writers[g] {
			t.Errorf("group %s holds a plan with cancel-in-progress and an apply: the plan would cancel the apply", g)
		}
	}

	group := func(job string, e ghEvent) (string, bool) { return ghGroup(t, w, job, e) }
	push1, push2, push3 := ghPullRequest("synchronize", 12, "feat/x", false), ghPullRequest("synchronize", 12, "feat/x", false), ghPullRequest("synchronize", 12, "feat/x", false)
	c := newGHConcurrency()
	// Push 1 plans; push 2 arrives while it plans: push 1's plan is
	// cancelled (its apply, which needs it, is skipped).
	g, cancel := group("preview-plan", push1)
	c.queue("plan 1", g, cancel)
	g, cancel = group("preview-plan", push2)
	c.queue("plan 2", g, cancel)
	if !slices.Contains(c.cancelled, "plan 1") || c.running[strings.ToLower(g)] != "plan 2" {
		t.Errorf("a second push did not cancel the superseded plan: cancelled %v, running %v", c.cancelled, c.running)
	}
	c.finish(g)
	// Push 2 applies; push 3's plan, a ChatOps plan and push 3's apply
	// arrive: the apply in progress is never cancelled, push 3's apply
	// waits, and a destroy of the closed pull request replaces it pending.
	g, cancel = group("preview", push2)
	c.queue("apply 2", g, cancel)
	pg, pcancel := group("preview-plan", push3)
	c.queue("plan 3", pg, pcancel)
	cg, ccancel := group("chatops-plan", ghComment(12, "/sponson plan", "OWNER"))
	if cg != pg {
		t.Errorf("the ChatOps plan's group %q is not the pull request's plan group %q", cg, pg)
	}
	c.queue("chatops plan", cg, ccancel)
	c.finish(pg)
	g3, cancel3 := group("preview", push3)
	c.queue("apply 3", g3, cancel3)
	if slices.Contains(c.cancelled, "apply 2") || c.running[strings.ToLower(g)] != "apply 2" || c.pending[strings.ToLower(g3)] != "apply 3" {
		t.Errorf("push 3 reached push 2's apply in progress: cancelled %v, running %v, pending %v", c.cancelled, c.running, c.pending)
	}
	dg, dcancel := group("preview-destroy", ghPullRequest("closed", 12, "feat/x", true))
	if dg != g {
		t.Errorf("preview-destroy's group %q is not the preview's apply group %q: a pending apply of a closed pull request would still run", dg, g)
	}
	c.queue("destroy", dg, dcancel)
	if slices.Contains(c.cancelled, "apply 2") || c.pending[strings.ToLower(g)] != "destroy" {
		t.Errorf("the destroy did not wait behind the apply in progress: cancelled %v, pending %v", c.cancelled, c.pending)
	}
	c.finish(g)
	if c.running[strings.ToLower(g)] != "destroy" {
		t.Errorf("the destroy did not run after the apply: running %v", c.running)
	}
	// Another pull request's scope does not wait for this one.
	o, ocancel := group("preview", ghPullRequest("synchronize", 13, "feat/y", false))
	c.queue("apply of 13", o, ocancel)
	if c.running[strings.ToLower(o)] != "apply of 13" {
		t.Errorf("pull request 13's apply waits for pull request 12's group %q", o)
	}
	// Production: a newer push cancels the superseded production plan, and
	// never the approved apply in progress.
	main := ghOnMain("push", map[string]any{"ref": "refs/heads/main"})
	pp, ppc := group("production-plan", main)
	pa, pac := group("production", main)
	c.queue("production apply 1", pa, pac)
	c.queue("production plan 2", pp, ppc)
	c.queue("production plan 3", pp, ppc)
	c.queue("production apply 3", pa, pac)
	if slices.Contains(c.cancelled, "production apply 1") || !slices.Contains(c.cancelled, "production plan 2") {
		t.Errorf("production: cancelled %v; want plan 2 cancelled and apply 1 never", c.cancelled)
	}
}

// TestCITemplatesGitHubMonorepoConcurrency: in the monorepo workflow, every
// job gets OIDC credentials and only its environment's state key
// (production's behind the production environments), the jobs that plan
// cancel a superseded plan of their environment and scope, the jobs that
// apply or destroy never cancel and share one group per scope (the destroy
// of a closed pull request waits behind its apply), and no plan shares a
// group with an apply, so that a newer push's plan runs beside an apply in
// progress (its apply then waits and plans again on PLAN_STALE, which the
// e2e replay runs).
func TestCITemplatesGitHubMonorepoConcurrency(t *testing.T) {
	t.Parallel()
	w := loadGitHubFile(t, githubMonorepo)
	pr := ghPullRequest("synchronize", 12, "feat/x", false)
	closed := ghPullRequest("closed", 12, "feat/x", true)
	push := ghOnMain("push", map[string]any{"ref": "refs/heads/main"})
	type want struct {
		job    string
		e      ghEvent
		cancel bool
	}
	groups := map[string]string{}
	for _, x := range []want{
		{"preview-plan", pr, true}, {"preview", pr, false}, {"preview-destroy", closed, false},
		{"main-plan", push, true}, {"main", push, false},
		{"production-plan", push, true}, {"production", push, false},
	} {
		if !slices.Contains(ghRunningJobs(t, w, x.e), x.job) {
			t.Errorf("job %s does not run on its event", x.job)
			continue
		}
		g, cancel := ghGroup(t, w, x.job, x.e)
		if g == "" || cancel != x.cancel {
			t.Errorf("job %s: group %q cancel-in-progress %v, want a group with cancel-in-progress %v", x.job, g, cancel, x.cancel)
		}
		groups[x.job] = strings.ToLower(g)
	}
	if groups["preview-destroy"] != groups["preview"] {
		t.Errorf("preview-destroy's group %q is not the preview's apply group %q", groups["preview-destroy"], groups["preview"])
	}
	for _, plan := range []string{"preview-plan", "main-plan", "production-plan"} {
		for _, apply := range []string{"preview", "preview-destroy", "main", "production"} {
			if groups[plan] == groups[apply] {
				t.Errorf("%s and %s share group %q: the plan's cancel-in-progress would stop the apply", plan, apply, groups[plan])
			}
		}
	}
	if groups["preview"] == groups["main"] {
		t.Errorf("pull request 12 and main share the apply group %q: scopes would wait for each other", groups["main"])
	}
	if groups["production"] == groups["main"] || groups["production-plan"] == groups["main-plan"] {
		t.Errorf("production and preview's main share groups (%q, %q): one group per environment and scope", groups["production"], groups["production-plan"])
	}
	// Production's jobs and the nightly drift (which checks production)
	// hold production's key, behind the environments that give it (the
	// apply's with required reviewers); no other job has it.
	for _, name := range w.Jobs.names {
		j := w.Jobs.byKey[name]
		_, prod := j.Env["SPONSON_STATE_KEY_PRODUCTION"]
		_, prev := j.Env["SPONSON_STATE_KEY_PREVIEW"]
		want := map[string]string{"production-plan": "production-plan", "production": "production", "drift": "production-plan"}[name]
		if prod != (want != "") || prev == prod || j.Environment != want {
			t.Errorf("job %s: environment %q, production key %v, preview key %v; want environment %q and only its environment's key", name, j.Environment, prod, prev, want)
		}
		if j.Permissions["id-token"] != "write" {
			t.Errorf("job %s runs the engine without id-token: write: no OIDC credentials for the cloud", name)
		}
		for _, uses := range []string{"aws-actions/configure-aws-credentials@", "google-github-actions/auth@", "azure/login@"} {
			if !slices.ContainsFunc(j.Steps, func(s ghStep) bool { return strings.HasPrefix(s.Uses, uses) }) {
				t.Errorf("job %s has no %s step for OIDC credentials", name, uses)
			}
		}
	}
	if needs := w.Jobs.byKey["production"].Needs; len(needs) != 1 || needs[0] != "production-plan" {
		t.Errorf("production needs %v, want production-plan", needs)
	}
	if needs := w.Jobs.byKey["production-plan"].Needs; len(needs) != 1 || needs[0] != "main" {
		t.Errorf("production-plan needs %v, want main: production after the preview's main applied", needs)
	}
	// Two pushes during an apply: the apply in progress is never cancelled,
	// the older pending apply is replaced by the newer (which plans again).
	c := newGHConcurrency()
	c.queue("apply 1", groups["preview"], false)
	c.queue("plan 2", groups["preview-plan"], true)
	c.queue("plan 3", groups["preview-plan"], true)
	c.queue("apply 3", groups["preview"], false)
	if slices.Contains(c.cancelled, "apply 1") || !slices.Contains(c.cancelled, "plan 2") || c.pending[groups["preview"]] != "apply 3" {
		t.Errorf("cancelled %v, pending %v: want plan 2 cancelled, apply 1 running, apply 3 pending", c.cancelled, c.pending)
	}
}

// TestCITemplatesGitLabMonorepoKeys: in the GitLab monorepo pipeline every
// job names the environment whose key it needs (production's only in
// production's jobs, the apply manual), the jobs that
// apply or destroy hold one resource_group per scope (the stop job the
// preview's), the plans, gc and drift none (so a newer pipeline's plan runs
// beside an apply in progress, whose successor then plans again on
// PLAN_STALE, as the e2e replay runs) and deploy nothing, and no job is
// interruptible.
func TestCITemplatesGitLabMonorepoKeys(t *testing.T) {
	t.Parallel()
	p := loadGitLabFile(t, gitlabMonorepo)
	writers := map[string]bool{"preview": true, "preview-destroy": true, "main": true, "production": true}
	readers := map[string]bool{"preview-plan": true, "main-plan": true, "production-plan": true, "gc": true, "drift": true}
	groups := map[string]string{}
	for _, name := range p.jobs {
		j := p.byName[name]
		if !writers[name] && !readers[name] {
			t.Errorf("job %s is new to this test: say whether it writes a scope", name)
			continue
		}
		want := "SPONSON_STATE_KEY_PREVIEW"
		if strings.HasPrefix(name, "production") || name == "drift" {
			// The nightly drift checks production.
			want = "SPONSON_STATE_KEY_PRODUCTION"
		}
		if got := glEnvironmentKey(j); got != want {
			t.Errorf("job %s (environment %q) gets %q, want %s", name, j.Environment.Name, got, want)
		}
		if j.Interruptible {
			t.Errorf("job %s is interruptible: auto-cancel would stop an apply half-way", name)
		}
		switch {
		case writers[name]:
			if j.ResourceGroup == "" || j.Environment.Action == "prepare" {
				t.Errorf("job %s writes a scope: resource_group %q, environment action %q", name, j.ResourceGroup, j.Environment.Action)
			}
			groups[name] = j.ResourceGroup
		default:
			if j.ResourceGroup != "" || j.Environment.Action != "prepare" {
				t.Errorf("job %s writes nothing: resource_group %q, environment action %q (want none, prepare)", name, j.ResourceGroup, j.Environment.Action)
			}
		}
	}
	if groups["preview"] != groups["preview-destroy"] || !strings.Contains(groups["preview"], "$CI_MERGE_REQUEST_IID") || groups["main"] == groups["preview"] {
		t.Errorf("resource groups %v: one per scope, the preview's shared with its stop job", groups)
	}
	if g := groups["production"]; g == "" || g == groups["main"] || g == groups["preview"] {
		t.Errorf("production's resource_group %q: want its own (groups %v)", g, groups)
	}
	prod := p.byName["production"]
	if len(prod.Rules) != 1 || prod.Rules[0].When != "manual" || !prod.AllowFailure || prod.Environment.DeploymentTier != "production" {
		t.Errorf("production: rules %v, allow_failure %v, tier %q; want one manual rule (who plays it approves), allow_failure, tier production", prod.Rules, prod.AllowFailure, prod.Environment.DeploymentTier)
	}
	if needs := p.byName["production-plan"].Needs; len(needs) != 1 || needs[0] != "main" {
		t.Errorf("production-plan needs %v, want main: production after the preview's main applied", needs)
	}
	for _, apply := range []string{"preview", "main", "production"} {
		if needs := p.byName[apply].Needs; len(needs) != 1 || !strings.HasSuffix(needs[0], "-plan") || !slices.Contains(p.byName[needs[0]].Artifacts.Paths, "plans/") {
			t.Errorf("job %s needs %v: want its plan job, whose artifact is plans/", apply, needs)
		}
	}
}
