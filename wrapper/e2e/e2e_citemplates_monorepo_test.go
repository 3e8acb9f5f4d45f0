package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/sponson/terraform-provider-sponson/internal/comment/commenttest"
)

// The monorepo templates of examples/ci, run: the three-stack repository
// lives a push to main, a pull request that changes the network (so the
// app, which reads it, is listed as its dependent), a push during an apply,
// the pull request's end and a nightly run. Each job runs as the CI system
// would run it (its script under the host's shell, with its env, on the
// commit of its pipeline), artifacts handed from the plan job to the apply
// job; the order of overlapping jobs comes from the template's own
// concurrency groups (GitHub) or resource_group (GitLab). The app of the
// pull request reading the network of the pull request proves the order of
// the stacks inside one job.

const (
	githubMonorepo = "../../examples/ci/github-actions-monorepo.yml"
	gitlabMonorepo = "../../examples/ci/gitlab-ci-monorepo.yml"
)

// monorepoCheckout is the checkout of a CI job: a first commit without
// stacks, then the three stacks, pushed as main to origin, a bare
// repository (the git store's). It returns the first commit, the "before"
// of the push that brought the stacks.
func monorepoCheckout(t *testing.T) (root, first string) {
	t.Helper()
	root = t.TempDir()
	bare := filepath.Join(t.TempDir(), "origin.git")
	gitIn(t, root, "init", "--quiet", "--bare", bare)
	gitIn(t, root, "-C", bare, "config", "receive.autogc", "false")
	gitIn(t, root, "init", "--quiet", "-b", "main")
	gitIn(t, root, "commit", "--quiet", "--allow-empty", "-m", "empty")
	first = gitIn(t, root, "rev-parse", "HEAD")
	files := map[string]string{".gitignore": ".sponson/\n.terraform/\n*.tfplan\nstacks.json\nstacks-pipeline.yml\n"}
	for k, v := range multiStack {
		files[k] = v
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "--quiet", "-m", "stacks")
	gitIn(t, root, "remote", "add", "origin", bare)
	gitIn(t, root, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	gitIn(t, root, "fetch", "--quiet", "origin")
	return root, first
}

// changeNetwork makes branch feat with network's cidr changed, pushed.
func changeNetwork(t *testing.T, root, cidr string) {
	t.Helper()
	gitIn(t, root, "checkout", "--quiet", "-b", "feat")
	p := filepath.Join(root, "stacks/network/main.tf")
	if err := os.WriteFile(p, []byte(strings.Replace(string(readFile(t, p)), "10.0.0.0/16", cidr, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "commit", "--quiet", "-am", "network: "+cidr)
	gitIn(t, root, "push", "--quiet", "origin", "HEAD:refs/heads/feat")
}

// ciOutputs are app's outputs in scope, read as a job of the pipeline would.
func (h *harness) ciOutputs(t *testing.T, root string, vars map[string]string, dir, scope string) map[string]any {
	t.Helper()
	r := h.ciRun(root, "sponson output --json --chdir "+dir+" --scope "+scope, vars)
	res, _ := r.envelope(t)["result"].(map[string]any)
	outs, _ := res["outputs"].(map[string]any)
	got := map[string]any{}
	for k, v := range outs {
		got[k] = v.(map[string]any)["value"]
	}
	return got
}

// ciProductionOutputs are dir's outputs in production's main, read with the
// variables of a production job (production's key).
func (h *harness) ciProductionOutputs(t *testing.T, root string, vars map[string]string, dir string) map[string]any {
	t.Helper()
	return h.ciOutputs(t, root, vars, dir, "main --env production")
}

// ciApprovedBy is who approved the latest run in production's main of the
// stack that sel names (--chdir DIR, or --stack NAME for a stack whose
// directory is gone), by its receipt.
func (h *harness) ciApprovedBy(t *testing.T, root string, vars map[string]string, sel string) string {
	t.Helper()
	r := h.ciRun(root, "sponson receipt --json --env production --scope main "+sel, vars)
	res, _ := r.envelope(t)["result"].(map[string]any)
	got, _ := res["approvedBy"].(string)
	return got
}

// checkProductionKeyOnly fails unless a job's variables hold production's
// state key and not the preview's: a key per environment.
func checkProductionKeyOnly(t *testing.T, job string, vars map[string]string) {
	t.Helper()
	if vars["SPONSON_STATE_KEY_PRODUCTION"] == "" || vars["SPONSON_STATE_KEY_PREVIEW"] != "" {
		t.Errorf("job %s: production key set %v, preview key set %v; want production's only",
			job, vars["SPONSON_STATE_KEY_PRODUCTION"] != "", vars["SPONSON_STATE_KEY_PREVIEW"] != "")
	}
}

// ghArtifacts are the artifacts of one workflow run, by name, as
// actions/upload-artifact keeps them and actions/download-artifact gives
// them to a later job of the same run.
type ghArtifacts string

// ghRunJob runs a job of w the way a runner would: its steps in order, each
// run: script under bash -e (with pipefail for shell: bash) with the
// workflow's, job's and step's env, upload-artifact and download-artifact
// as copies through run's artifacts. Other uses: steps (checkout, cloud
// credentials, the install action) have nothing to do here: the checkout is
// root, HEAD where the test put it, and sponson is on PATH. A step with an
// if: (the alert, which needs failure()) is not run, nor the step with id
// approval, which asks GitHub's API who approved the run: its output is the
// host's, values["steps.approval.outputs.approver"], as in
// TestE2ECITemplatesGitHub. It returns the first failed step's result, or
// the last step's.
func (h *harness) ghRunJob(t *testing.T, root string, w *ghWorkflow, job string, e ghEvent, values, host map[string]string, run ghArtifacts) (result, map[string]string) {
	t.Helper()
	j := w.Jobs.byKey[job]
	vals := map[string]string{}
	for k, v := range values {
		vals[k] = v
	}
	temp := t.TempDir() // each job's own runner
	vals["runner.temp"] = temp
	base := map[string]string{}
	for k, v := range host {
		base[k] = v
	}
	for k, v := range e.vars {
		base[k] = v
	}
	base["RUNNER_TEMP"] = temp
	base["GITHUB_STEP_SUMMARY"] = filepath.Join(temp, "step-summary.md")
	var last result
	var lastVars map[string]string
	for _, s := range j.Steps {
		switch {
		case strings.HasPrefix(s.Uses, "actions/upload-artifact@"), strings.HasPrefix(s.Uses, "actions/download-artifact@"):
			path, err := ghSubstitute(s.With["path"], vals)
			if err != nil {
				t.Fatalf("job %s: %v", job, err)
			}
			stored := filepath.Join(string(run), s.With["name"])
			from, to := path, stored
			if strings.HasPrefix(s.Uses, "actions/download-artifact@") {
				from, to = stored, path
			} else if _, err := os.Stat(stored); err == nil {
				// A re-run job uploads to a name its run already
				// holds: v4 refuses that (409) unless overwrite: true.
				if s.With["overwrite"] != "true" {
					t.Fatalf("job %s: %s: the run already has an artifact %s, and the step does not overwrite it: a re-run of the job fails", job, s.Uses, s.With["name"])
				}
				if err := os.RemoveAll(stored); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.CopyFS(to, os.DirFS(from)); err != nil {
				t.Fatalf("job %s: %s: %v", job, s.Uses, err)
			}
		case s.ID == "approval":
			if _, ok := vals["steps.approval.outputs.approver"]; !ok {
				t.Fatalf("job %s: the approval step's output has no test value", job)
			}
		case s.Run != "" && s.If == "":
			script, vars := stepScript(t, w, job, s, vals, base)
			prefix := "set -e\n"
			if s.Shell == "bash" {
				prefix = "set -eo pipefail\n"
			}
			last, lastVars = h.ciRun(root, prefix+script, vars), vars
			if last.exit != 0 {
				return last, lastVars
			}
		}
	}
	return last, lastVars
}

// stepScript is the script of a step and the variables it sees: the
// workflow's, the job's and the step's env over base, ${{ }} replaced with
// values.
func stepScript(t *testing.T, w *ghWorkflow, job string, s ghStep, values, base map[string]string) (string, map[string]string) {
	t.Helper()
	vars := map[string]string{}
	for k, v := range base {
		vars[k] = v
	}
	for _, m := range []map[string]string{w.Env, w.Jobs.byKey[job].Env, s.Env} {
		for k, v := range m {
			sv, err := ghSubstitute(v, values)
			if err != nil {
				t.Fatalf("job %s: env %s: %v", job, k, err)
			}
			vars[k] = sv
		}
	}
	script, err := ghSubstitute(s.Run, values)
	if err != nil {
		t.Fatalf("job %s: step %s: %v", job, s.Name, err)
	}
	return script, vars
}

func loadGitHubFile(t *testing.T, file string) *ghWorkflow {
	t.Helper()
	var w ghWorkflow
	if err := yaml.Unmarshal(readFile(t, file), &w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return &w
}

// atHead is a pull request event of the commit the checkout holds.
func atHead(t *testing.T, root string, e ghEvent, name string) ghEvent {
	t.Helper()
	e.name = name
	head := e.payload["pull_request"].(map[string]any)["head"].(map[string]any)
	head["sha"] = gitIn(t, root, "rev-parse", "HEAD")
	return e
}

// TestE2ECITemplatesMonorepoGitHub replays the monorepo workflow's jobs as
// GitHub runs them: a push to main plans every stack into one saved plan and
// the next job applies it; a pull request that changes the network plans it
// and the app (its dependent) with one review, and the apply job applies
// the artifact (the app's plan read the network's replaced vpc_id, known
// only after the network's apply: it is stale, and the job plans again once
// and applies); a push during an apply (the newer commit's plan runs while
// the older commit's apply runs, as the concurrency groups allow) ends
// with the newer commit applied without a re-run; the pull request's end
// destroys every stack's preview; the nightly gc and drift run clean.
func TestE2ECITemplatesMonorepoGitHub(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	w := loadGitHubFile(t, githubMonorepo)
	root, first := monorepoCheckout(t)
	srv := commenttest.New("test-token")
	defer srv.Close()

	values := map[string]string{
		"secrets.SPONSON_STATE_KEY_PREVIEW":    ciStateKey,
		"secrets.SPONSON_STATE_KEY_PRODUCTION": strings.Repeat("24", 32),
		"secrets.SPONSON_PLAN_KEY":             strings.Repeat("17", 32),
		"github.token":                         "test-token",
		"github.event.before":                  "",
		"steps.approval.outputs.approver":      "alice",
	}
	events := t.TempDir()
	runs := 0
	// start is a new workflow run of e: its event file, host variables and
	// artifact store.
	start := func(e ghEvent) (map[string]string, ghArtifacts) {
		runs++
		payload, _ := json.Marshal(e.payload)
		eventPath := filepath.Join(events, fmt.Sprintf("event-%d.json", runs))
		if err := os.WriteFile(eventPath, payload, 0o644); err != nil {
			t.Fatal(err)
		}
		host := map[string]string{
			"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": e.event, "GITHUB_EVENT_PATH": eventPath,
			"GITHUB_REPOSITORY": "acme/app", "GITHUB_RUN_ID": fmt.Sprint(5100 + runs), "GITHUB_WORKSPACE": root,
			"GITHUB_API_URL": srv.URL, "GITHUB_SERVER_URL": "https://github.com",
			// Each stack's name is derived, as on a real runner.
			"SPONSON_STACK": "",
		}
		return host, ghArtifacts(t.TempDir())
	}
	var last map[string]string
	// try runs a job and returns its result, failed or not.
	try := func(e ghEvent, host map[string]string, run ghArtifacts, name string) result {
		t.Helper()
		r, vars := h.ghRunJob(t, root, w, name, e, values, host, run)
		t.Logf("%s: job %s: exit %d\n%s", e.name, name, r.exit, r.stdout)
		last = vars
		return r
	}
	job := func(e ghEvent, host map[string]string, run ghArtifacts, name string) result {
		t.Helper()
		r := try(e, host, run, name)
		if r.exit != 0 {
			t.Fatalf("%s: job %s: exit %d\n%s\n%s", e.name, name, r.exit, r.stdout, r.stderr)
		}
		return r
	}
	// all runs the jobs of e that GitHub runs, in order.
	all := func(e ghEvent, want []string) map[string]result {
		t.Helper()
		got := ghRunningJobs(t, w, e)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s: jobs (-want +got):\n%s", e.name, d)
		}
		host, run := start(e)
		out := map[string]result{}
		for _, name := range got {
			out[name] = job(e, host, run, name)
		}
		return out
	}

	// The push that brought the stacks: every stack planned into one saved
	// plan, then applied; then production's plan of every stack, and its
	// apply, refused while nobody approved it and applied, exactly those
	// plans, once alice did.
	push := ghOnMain("push", map[string]any{"ref": "refs/heads/main", "before": first})
	push.name = "push to main"
	values["github.event.before"] = first
	mainJobs := []string{"main-plan", "main", "production-plan", "production"}
	if d := cmp.Diff(mainJobs, ghRunningJobs(t, w, push)); d != "" {
		t.Fatalf("%s: jobs (-want +got):\n%s", push.name, d)
	}
	host, run := start(push)
	job(push, host, run, "main-plan")
	job(push, host, run, "main")
	if got := h.ciOutputs(t, root, last, "stacks/app", "main"); got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" {
		t.Errorf("app's outputs in main = %v, want main's network", got)
	}
	previewVars := last
	job(push, host, run, "production-plan")
	checkProductionKeyOnly(t, "production-plan", last)
	if got := h.ciProductionOutputs(t, root, last, "stacks/network"); len(got) != 0 {
		t.Errorf("production-plan wrote production: network's outputs there = %v", got)
	}
	values["steps.approval.outputs.approver"] = ""
	r := try(push, host, run, "production")
	if r.exit != 2 || !strings.Contains(r.stdout+r.stderr, "ENV_NOT_APPROVED") {
		t.Errorf("the production job without an approval: exit %d, want 2 and ENV_NOT_APPROVED\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	for _, dir := range []string{"stacks/network", "stacks/app", "stacks/docs"} {
		if got := h.ciProductionOutputs(t, root, last, dir); len(got) != 0 {
			t.Errorf("the unapproved production job wrote %s in production: %v", dir, got)
		}
	}
	// Approved. The network is new, so the vpc_id app's plan read was
	// provisional: network and docs apply, app's plan is refused stale, and
	// the production job, which never plans again by itself, fails. Re-run
	// production-plan (GitHub re-runs production after it, with a new
	// approval) and app applies.
	values["steps.approval.outputs.approver"] = "alice"
	r = try(push, host, run, "production")
	if r.exit != 2 || !strings.Contains(r.stdout, "PLAN_STALE") || strings.Contains(r.stderr+r.stdout, "planning again") {
		t.Errorf("the first approved production job: exit %d; want 2, app's provisional read refused PLAN_STALE and no re-plan\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if got := h.ciProductionOutputs(t, root, last, "stacks/network"); got["vpc_id"] != "vpc-main-10.0.0.0/16" {
		t.Errorf("network's outputs in production after the approved job = %v", got)
	}
	if got := h.ciProductionOutputs(t, root, last, "stacks/app"); len(got) != 0 {
		t.Errorf("the production job applied app's stale plan (or planned again): %v", got)
	}
	job(push, host, run, "production-plan")
	job(push, host, run, "production")
	checkProductionKeyOnly(t, "production", last)
	if got := h.ciProductionOutputs(t, root, last, "stacks/app"); got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" {
		t.Errorf("app's outputs in production = %v, want production's network", got)
	}
	for _, dir := range []string{"stacks/network", "stacks/app", "stacks/docs"} {
		if got := h.ciApprovedBy(t, root, last, "--chdir "+dir); got != "alice" {
			t.Errorf("%s's production receipt names approver %q, want alice", dir, got)
		}
	}
	if got := h.ciOutputs(t, root, previewVars, "stacks/network", "main --env production"); len(got) != 0 {
		t.Errorf("the preview's key read production's state: %v", got)
	}
	values["github.event.before"] = ""

	// A pull request that changes the network: network and app planned in
	// one review, the artifact applied; app's plan read a provisional
	// vpc_id, so the apply job plans again once.
	changeNetwork(t, root, "10.3.0.0/16")
	pr := atHead(t, root, ghPullRequest("opened", 3, "feat", false), "pull request 3 opened")
	all(pr, []string{"preview-plan", "preview"})
	if got := h.ciOutputs(t, root, last, "stacks/app", "pr-3"); got["vpc"] != "vpc-pr-3-10.3.0.0/16" || got["from"] != "pr-3" {
		t.Errorf("app's outputs in pr-3 = %v, want pr-3's network", got)
	}
	if got := h.ciOutputs(t, root, last, "stacks/docs", "pr-3"); len(got) != 0 {
		t.Errorf("docs ran in pr-3 although nothing it uses changed: %v", got)
	}
	if cs := srv.Comments("acme/app#3"); len(cs) == 0 {
		t.Errorf("no comment on pull request 3")
	}

	// A push during an apply. Commit A's plan and apply, commit B pushed
	// while A's apply runs: GitHub's groups decide the order, which the
	// model below plays from the workflow's own groups; the jobs then run
	// in that order, each at its commit.
	c := newGHConcurrency()
	group := func(job string, e ghEvent) (string, bool) { return ghGroup(t, w, job, e) }
	commit := func(cidr string) string {
		p := filepath.Join(root, "stacks/network/main.tf")
		src := regexp.MustCompile(`default = "10\.\d+\.0\.0/16"`).ReplaceAllString(string(readFile(t, p)), `default = "`+cidr+`"`)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, root, "commit", "--quiet", "-am", "network: "+cidr)
		gitIn(t, root, "push", "--quiet", "origin", "HEAD:refs/heads/feat")
		return gitIn(t, root, "rev-parse", "HEAD")
	}
	shaA := commit("10.4.0.0/16")
	evA := atHead(t, root, ghPullRequest("synchronize", 3, "feat", false), "push A")
	hostA, runA := start(evA)
	job(evA, hostA, runA, "preview-plan")
	shaB := commit("10.5.0.0/16")
	evB := atHead(t, root, ghPullRequest("synchronize", 3, "feat", false), "push B")
	hostB, runB := start(evB)
	ag, acancel := group("preview", evA)
	c.queue("apply A", ag, acancel)
	pg, pcancel := group("preview-plan", evB)
	c.queue("plan B", pg, pcancel)
	if c.running[strings.ToLower(pg)] != "plan B" || c.running[strings.ToLower(ag)] != "apply A" {
		t.Fatalf("plan B does not run beside apply A: running %v, pending %v", c.running, c.pending)
	}
	// Plan B reads pr-3's state before apply A writes it.
	job(evB, hostB, runB, "preview-plan")
	c.finish(pg)
	bg, bcancel := group("preview", evB)
	c.queue("apply B", bg, bcancel)
	if c.pending[strings.ToLower(bg)] != "apply B" {
		t.Fatalf("apply B does not wait for apply A: running %v, pending %v", c.running, c.pending)
	}
	gitIn(t, root, "checkout", "--quiet", shaA)
	job(evA, hostA, runA, "preview")
	c.finish(ag)
	if c.running[strings.ToLower(bg)] != "apply B" {
		t.Fatalf("apply B did not start after apply A: running %v", c.running)
	}
	gitIn(t, root, "checkout", "--quiet", shaB)
	r = job(evB, hostB, runB, "preview")
	if !strings.Contains(r.stdout, "PLAN_STALE") || !strings.Contains(r.stderr+r.stdout, "planning again") {
		t.Errorf("apply B did not meet its stale plan and plan again:\n%s", r.stdout)
	}
	if got := h.ciOutputs(t, root, last, "stacks/app", "pr-3"); got["vpc"] != "vpc-pr-3-10.5.0.0/16" {
		t.Errorf("after apply B, app's outputs in pr-3 = %v, want commit B's network (10.5.0.0/16)", got)
	}
	gitIn(t, root, "checkout", "--quiet", "feat")

	// The pull request closes: every stack's pr-3 goes, app first.
	closed := atHead(t, root, ghPullRequest("closed", 3, "feat", true), "pull request 3 merged")
	all(closed, []string{"preview-destroy"})
	for _, dir := range []string{"stacks/app", "stacks/network"} {
		if got := h.ciOutputs(t, root, last, dir, "pr-3"); len(got) != 0 {
			t.Errorf("%s still has outputs in pr-3 after the pull request closed: %v", dir, got)
		}
	}

	// A fork's pull request runs nothing.
	if got := ghRunningJobs(t, w, ghFork(ghPullRequest("opened", 4, "x", false))); len(got) != 0 {
		t.Errorf("a fork's pull request runs %v", got)
	}

	// A pull request that touches no stack: its plan saves an empty plan
	// of many stacks, and the apply job applies nothing, green.
	gitIn(t, root, "checkout", "--quiet", "-b", "readme", "main")
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("docs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "add", "README.md")
	gitIn(t, root, "commit", "--quiet", "-m", "readme")
	gitIn(t, root, "push", "--quiet", "origin", "HEAD:refs/heads/readme")
	res := all(atHead(t, root, ghPullRequest("opened", 6, "readme", false), "pull request 6 (no stack)"), []string{"preview-plan", "preview"})
	if !strings.Contains(res["preview"].stdout, "no stack to apply") {
		t.Errorf("the apply job of a pull request that touches no stack did not say it had nothing to apply:\n%s", res["preview"].stdout)
	}

	// A push to main that deletes a stack: -out cannot carry its destroy,
	// so main-plan plans --changed and main applies --changed, which
	// destroys docs' main scope.
	gitIn(t, root, "checkout", "--quiet", "main")
	before := gitIn(t, root, "rev-parse", "HEAD")
	gitIn(t, root, "rm", "--quiet", "-r", "stacks/docs")
	gitIn(t, root, "commit", "--quiet", "-m", "docs: gone")
	gitIn(t, root, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	removal := ghOnMain("push", map[string]any{"ref": "refs/heads/main", "before": before})
	removal.name = "push to main removing stacks/docs"
	values["github.event.before"] = before
	res = all(removal, mainJobs)
	values["github.event.before"] = ""
	for _, name := range []string{"main", "production"} {
		if !regexp.MustCompile(`"status":\s*"destroyed"`).MatchString(res[name].stdout) {
			t.Errorf("the %s job did not destroy the removed stack docs:\n%s", name, res[name].stdout)
		}
	}
	if got := h.ciApprovedBy(t, root, last, "--stack github.com/acme/app//stacks/docs"); got != "alice" {
		t.Errorf("docs' destroy in production names approver %q, want alice", got)
	}

	// The nightly run: gc --all finds nothing, drift --all of production's
	// scopes of the two stacks left is in sync.
	nightly := ghOnMain("schedule", map[string]any{"schedule": "23 3 * * *"})
	nightly.name = "nightly"
	all(nightly, []string{"gc", "drift"})
}

// glRunJob runs a job of p the way a runner would, in the checkout root:
// the artifacts:paths of the jobs it needs (kept in store, by pipeline)
// copied in first, its script lines in order under bash -eo pipefail (as
// GitLab Runner's bash shell runs them), its own artifacts:paths moved to
// store afterwards (a retried job's replacing its earlier ones) and the
// checkout cleaned, as the next job's fresh runner would find it.
func (h *harness) glRunJob(t *testing.T, root string, p *glPipeline, job string, vars map[string]string, store string) result {
	t.Helper()
	j := p.byName[job]
	clean := func() {
		for _, path := range []string{"plans", "replanned"} {
			if err := os.RemoveAll(filepath.Join(root, path)); err != nil {
				t.Fatal(err)
			}
		}
		gitIn(t, root, "clean", "-fdq")
	}
	clean()
	for _, need := range j.Needs {
		for _, path := range p.byName[need].Artifacts.Paths {
			from := filepath.Join(store, need, path)
			if _, err := os.Stat(from); err != nil {
				t.Fatalf("job %s needs %s's artifact %s, which it did not keep: %v", job, need, path, err)
			}
			if err := os.CopyFS(filepath.Join(root, path), os.DirFS(from)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var r result
	for _, line := range j.Script {
		r = h.ciRun(root, "set -eo pipefail\n"+line, vars)
		if r.exit != 0 {
			break
		}
	}
	for _, path := range j.Artifacts.Paths {
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Join(store, job), 0o755); err != nil {
			t.Fatal(err)
		}
		// A retried job's artifacts replace its earlier ones, as the
		// jobs that need it then get the latest.
		if err := os.RemoveAll(filepath.Join(store, job, path)); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(filepath.Join(store, job, path), os.DirFS(filepath.Join(root, path))); err != nil {
			t.Fatal(err)
		}
	}
	clean()
	return r
}

// TestE2ECITemplatesMonorepoGitLab replays the GitLab monorepo pipeline's
// jobs as GitLab runs them, as TestE2ECITemplatesMonorepoGitHub does for
// GitHub: main-plan's saved plan of every stack applied by main, a merge
// request's plan of the stacks it changes applied by preview from the
// artifact, a push during an apply (the newer pipeline's plan, outside the
// resource_group, runs while the older pipeline's apply holds it; its apply
// waits, meets a stale plan and plans again), no pipeline for a fork's
// merge request, the stop job, and the scheduled gc and drift.
func TestE2ECITemplatesMonorepoGitLab(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	p := loadGitLabFile(t, gitlabMonorepo)
	root, first := monorepoCheckout(t)
	main := gitIn(t, root, "rev-parse", "HEAD")
	project := map[string]string{"SPONSON_STACK": "", "SPONSON_GIT_TOKEN": "glpat-test", "SPONSON_PLAN_KEY": strings.Repeat("17", 32)}
	// The state keys, scoped to their environments as the template's setup
	// says: GitLab gives each job only its environment's.
	keys := map[string]string{"SPONSON_STATE_KEY_PREVIEW": ciStateKey, "SPONSON_STATE_KEY_PRODUCTION": strings.Repeat("24", 32)}
	var last map[string]string

	// jobVars are the variables of a job of the pipeline of vars.
	jobVars := func(vars map[string]string, job string) map[string]string {
		all := glEvent{vars: vars}.allVars(p)
		for k, v := range project {
			all[k] = v
		}
		if k := glEnvironmentKey(p.byName[job]); k != "" {
			all[k] = keys[k]
		}
		for k, v := range p.byName[job].Variables {
			all[k] = os.Expand(v, func(name string) string { return all[name] })
		}
		all["CI_JOB_NAME"] = job
		return all
	}
	type pipeline struct {
		name  string
		vars  map[string]string
		store string
	}
	start := func(name string, vars map[string]string) pipeline {
		vars["CI_PROJECT_ID"] = "7"
		return pipeline{name: name, vars: vars, store: t.TempDir()}
	}
	// try runs a job and returns its result, failed or not.
	try := func(pl pipeline, name string) result {
		t.Helper()
		jv := jobVars(pl.vars, name)
		r := h.glRunJob(t, root, p, name, jv, pl.store)
		t.Logf("%s: job %s: exit %d\n%s", pl.name, name, r.exit, r.stdout)
		last = jv
		return r
	}
	job := func(pl pipeline, name string) result {
		t.Helper()
		r := try(pl, name)
		if r.exit != 0 {
			t.Fatalf("%s: job %s: exit %d\n%s\n%s", pl.name, name, r.exit, r.stdout, r.stderr)
		}
		return r
	}
	// production plays the manual production job of pl as user (GitLab's
	// GITLAB_USER_LOGIN in a manual job is who played it).
	production := func(pl pipeline, user string) result {
		t.Helper()
		if w := glPipelineJobs(t, p, glEvent{vars: pl.vars})["production"]; w != "manual" {
			t.Fatalf("%s: the production job is %q, want manual", pl.name, w)
		}
		pl.vars["GITLAB_USER_LOGIN"] = user
		defer delete(pl.vars, "GITLAB_USER_LOGIN")
		return try(pl, "production")
	}
	// all runs the jobs GitLab creates for the pipeline, stage by stage.
	all := func(pl pipeline, want []string) map[string]result {
		t.Helper()
		jobs := glPipelineJobs(t, p, glEvent{vars: pl.vars})
		var got []string
		for _, name := range p.jobs {
			if w := jobs[name]; w != "" && w != "manual" {
				got = append(got, name)
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s: jobs (-want +got):\n%s", pl.name, d)
		}
		out := map[string]result{}
		for _, name := range got {
			out[name] = job(pl, name)
		}
		return out
	}
	mergeRequest := func(name string) pipeline {
		mr := glMergeRequest(4, "feat")
		mr["CI_MERGE_REQUEST_DIFF_BASE_SHA"] = main
		mr["CI_MERGE_REQUEST_SOURCE_PROJECT_ID"] = "7"
		mr["CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"] = gitIn(t, root, "rev-parse", "HEAD")
		return start(name, mr)
	}

	push := glOnMain("push")
	push["CI_COMMIT_BEFORE_SHA"] = first
	pushPl := start("push to main", push)
	mainJobs := []string{"main-plan", "main", "production-plan"}
	all(pushPl, mainJobs)
	checkProductionKeyOnly(t, "production-plan", last)
	if got := h.ciProductionOutputs(t, root, last, "stacks/network"); len(got) != 0 {
		t.Errorf("production-plan wrote production: network's outputs there = %v", got)
	}
	if got := h.ciOutputs(t, root, jobVars(pushPl.vars, "main"), "stacks/app", "main"); got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" {
		t.Errorf("app's outputs in main = %v, want main's network", got)
	}
	// The manual production job: played by a runner that names nobody, it
	// is refused before anything is written; played by alice, network and
	// docs apply, and app's plan, which read network's provisional vpc_id,
	// is refused stale and not planned again; production-plan retried and
	// production played again, app applies.
	r := production(pushPl, "")
	if r.exit != 2 || !strings.Contains(r.stdout+r.stderr, "ENV_NOT_APPROVED") {
		t.Errorf("the production job played by nobody: exit %d, want 2 and ENV_NOT_APPROVED\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	for _, dir := range []string{"stacks/network", "stacks/app", "stacks/docs"} {
		if got := h.ciProductionOutputs(t, root, last, dir); len(got) != 0 {
			t.Errorf("the unapproved production job wrote %s in production: %v", dir, got)
		}
	}
	r = production(pushPl, "alice")
	checkProductionKeyOnly(t, "production", last)
	if r.exit != 2 || !strings.Contains(r.stdout, "PLAN_STALE") || strings.Contains(r.stderr+r.stdout, "planning again") {
		t.Errorf("the first approved production job: exit %d; want 2, app's provisional read refused PLAN_STALE and no re-plan\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if got := h.ciProductionOutputs(t, root, last, "stacks/app"); len(got) != 0 {
		t.Errorf("the production job applied app's stale plan (or planned again): %v", got)
	}
	job(pushPl, "production-plan")
	if r := production(pushPl, "alice"); r.exit != 0 {
		t.Fatalf("production played again after production-plan's retry: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if got := h.ciProductionOutputs(t, root, last, "stacks/app"); got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" {
		t.Errorf("app's outputs in production = %v, want production's network", got)
	}
	for _, dir := range []string{"stacks/network", "stacks/app", "stacks/docs"} {
		if got := h.ciApprovedBy(t, root, last, "--chdir "+dir); got != "alice" {
			t.Errorf("%s's production receipt names approver %q, want alice", dir, got)
		}
	}
	if got := h.ciOutputs(t, root, jobVars(pushPl.vars, "main"), "stacks/network", "main --env production"); len(got) != 0 {
		t.Errorf("the preview's key read production's state: %v", got)
	}

	changeNetwork(t, root, "10.4.0.0/16")
	all(mergeRequest("merge request 4"), []string{"preview-plan", "preview"})
	if got := h.ciOutputs(t, root, last, "stacks/app", "pr-4"); got["vpc"] != "vpc-pr-4-10.4.0.0/16" || got["from"] != "pr-4" {
		t.Errorf("app's outputs in pr-4 = %v, want pr-4's network", got)
	}
	if got := h.ciOutputs(t, root, last, "stacks/docs", "pr-4"); len(got) != 0 {
		t.Errorf("docs ran in pr-4 although nothing it uses changed: %v", got)
	}

	// A push during an apply: pipeline A's apply holds the merge request's
	// resource_group; pipeline B's plan has none and runs meanwhile; B's
	// apply waits for the group, then meets its stale plan and plans again.
	commit := func(cidr string) string {
		p := filepath.Join(root, "stacks/network/main.tf")
		src := regexp.MustCompile(`default = "10\.\d+\.0\.0/16"`).ReplaceAllString(string(readFile(t, p)), `default = "`+cidr+`"`)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, root, "commit", "--quiet", "-am", "network: "+cidr)
		gitIn(t, root, "push", "--quiet", "origin", "HEAD:refs/heads/feat")
		return gitIn(t, root, "rev-parse", "HEAD")
	}
	shaA := commit("10.5.0.0/16")
	plA := mergeRequest("pipeline A")
	job(plA, "preview-plan")
	shaB := commit("10.6.0.0/16")
	plB := mergeRequest("pipeline B")
	if rg := p.byName["preview-plan"].ResourceGroup; rg != "" {
		t.Fatalf("preview-plan is in resource_group %q: it would wait for the apply", rg)
	}
	groupA := os.Expand(p.byName["preview"].ResourceGroup, func(n string) string { return jobVars(plA.vars, "preview")[n] })
	groupB := os.Expand(p.byName["preview"].ResourceGroup, func(n string) string { return jobVars(plB.vars, "preview")[n] })
	if groupA == "" || groupA != groupB {
		t.Fatalf("the applies of pipelines A and B are in resource_groups %q and %q: they would not wait for each other", groupA, groupB)
	}
	// B plans while A's apply holds the group: it reads pr-4's state before
	// A's apply writes it.
	job(plB, "preview-plan")
	gitIn(t, root, "checkout", "--quiet", shaA)
	job(plA, "preview")
	gitIn(t, root, "checkout", "--quiet", shaB)
	r = job(plB, "preview")
	if !strings.Contains(r.stdout, "PLAN_STALE") || !strings.Contains(r.stderr, "planning again") {
		t.Errorf("apply B did not meet its stale plan and plan again:\n%s\n%s", r.stdout, r.stderr)
	}
	if got := h.ciOutputs(t, root, last, "stacks/app", "pr-4"); got["vpc"] != "vpc-pr-4-10.6.0.0/16" {
		t.Errorf("after apply B, app's outputs in pr-4 = %v, want pipeline B's network (10.6.0.0/16)", got)
	}
	gitIn(t, root, "checkout", "--quiet", "feat")

	// A fork's merge request run in this project gets no pipeline.
	fork := glMergeRequest(5, "x")
	fork["CI_PROJECT_ID"], fork["CI_MERGE_REQUEST_SOURCE_PROJECT_ID"] = "7", "8"
	if jobs := glPipelineJobs(t, p, glEvent{vars: fork}); jobs != nil {
		t.Errorf("a fork's merge request gets a pipeline: %v", jobs)
	}

	// Merged: GitLab runs the preview's stop job.
	stopPl := mergeRequest("merge request 4 merged")
	stop := glPipelineJobs(t, p, glEvent{vars: stopPl.vars, stopOf: "preview"})
	if stop["preview-destroy"] != "stop" {
		t.Fatalf("the preview's stop job is %v, want preview-destroy", stop)
	}
	job(stopPl, "preview-destroy")
	for _, dir := range []string{"stacks/app", "stacks/network"} {
		if got := h.ciOutputs(t, root, last, dir, "pr-4"); len(got) != 0 {
			t.Errorf("%s still has outputs in pr-4 after the merge: %v", dir, got)
		}
	}

	// A merge request that touches no stack: an empty plan of many stacks,
	// and an apply job that applies nothing, green.
	gitIn(t, root, "checkout", "--quiet", "-b", "readme", "main")
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("docs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "add", "README.md")
	gitIn(t, root, "commit", "--quiet", "-m", "readme")
	gitIn(t, root, "push", "--quiet", "origin", "HEAD:refs/heads/readme")
	readme := glMergeRequest(6, "readme")
	readme["CI_MERGE_REQUEST_DIFF_BASE_SHA"] = main
	readme["CI_MERGE_REQUEST_SOURCE_PROJECT_ID"] = "7"
	readme["CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"] = gitIn(t, root, "rev-parse", "HEAD")
	res := all(start("merge request 6 (no stack)", readme), []string{"preview-plan", "preview"})
	if !strings.Contains(res["preview"].stdout, "no stack to apply") {
		t.Errorf("the apply job of a merge request that touches no stack did not say it had nothing to apply:\n%s", res["preview"].stdout)
	}

	// A push to main that deletes a stack: main-plan plans --changed
	// --base CI_COMMIT_BEFORE_SHA, main applies --changed, which destroys
	// docs' main scope.
	gitIn(t, root, "checkout", "--quiet", "main")
	before := gitIn(t, root, "rev-parse", "HEAD")
	gitIn(t, root, "rm", "--quiet", "-r", "stacks/docs")
	gitIn(t, root, "commit", "--quiet", "-m", "docs: gone")
	gitIn(t, root, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	removal := glOnMain("push")
	removal["CI_COMMIT_BEFORE_SHA"] = before
	removalPl := start("push to main removing stacks/docs", removal)
	res = all(removalPl, mainJobs)
	res["production"] = production(removalPl, "alice")
	for _, name := range []string{"main", "production"} {
		if !regexp.MustCompile(`"status":\s*"destroyed"`).MatchString(res[name].stdout) {
			t.Errorf("the %s job did not destroy the removed stack docs:\n%s", name, res[name].stdout)
		}
	}
	if got := h.ciApprovedBy(t, root, last, "--stack gitlab.example.com/acme/app//stacks/docs"); got != "alice" {
		t.Errorf("docs' destroy in production names approver %q, want alice", got)
	}

	all(start("scheduled", glOnMain("schedule")), []string{"gc", "drift"})
}
