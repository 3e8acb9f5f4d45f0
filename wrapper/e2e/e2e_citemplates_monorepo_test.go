package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/sponson/terraform-provider-sponson/internal/comment/commenttest"
)

// The monorepo templates of examples/ci, run: the three-stack repository
// lives a push to main, a pull request that changes the network (so the
// app, which reads it, is listed as its dependent), the pull request's end
// and a nightly run. The first job's `sponson stacks --changed` line runs as
// written; its matrix JSON (GitHub: result.layers) or its child pipeline
// (GitLab: --gitlab-pipeline) then drives the next jobs: each entry runs as
// its own sponson process, the entries of one depth at the same time, the
// depths in order, as the CI system's runners would. The app of the pull
// request reading the network of the pull request proves the order.

const (
	githubMonorepo      = "../../examples/ci/github-actions-monorepo.yml"
	githubMonorepoStack = "../../examples/ci/github-actions-monorepo-stack.yml"
	gitlabMonorepo      = "../../examples/ci/gitlab-ci-monorepo.yml"
	gitlabMonorepoStack = "../../examples/ci/gitlab-ci-monorepo-stack.yml"
)

// monorepoCheckout is the checkout of a CI job: a first commit without
// stacks, then the three stacks, pushed as main to origin, a bare
// repository (the git store's). It returns the first commit, the "before"
// of the push that brought the stacks.
func monorepoCheckout(t *testing.T, extra map[string]string) (root, first string) {
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
	for k, v := range extra {
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

// layersOf reads result.layers of `sponson stacks --json` as directories.
func layersOf(t *testing.T, doc []byte) [][]string {
	t.Helper()
	var env struct {
		OK     bool `json:"ok"`
		Result struct {
			Layers [][]struct {
				Directory string `json:"directory"`
				Depth     int    `json:"depth"`
			} `json:"layers"`
		} `json:"result"`
	}
	if err := json.Unmarshal(doc, &env); err != nil || !env.OK {
		t.Fatalf("sponson stacks --json: %v\n%s", err, doc)
	}
	var out [][]string
	for d, layer := range env.Result.Layers {
		var dirs []string
		for _, s := range layer {
			if s.Depth != d {
				t.Errorf("layer %d holds %s of depth %d", d, s.Directory, s.Depth)
			}
			dirs = append(dirs, s.Directory)
		}
		out = append(out, dirs)
	}
	return out
}

// inParallel runs each job at once and waits for all: one depth's jobs.
func inParallel(n int, job func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job(i)
		}()
	}
	wg.Wait()
}

// ghMonoWorkflow is what the test reads of the monorepo workflow: its jobs
// with the keys of a job that calls the stack's workflow.
type ghMonoWorkflow struct {
	Env  stringMap            `yaml:"env"`
	Jobs map[string]ghMonoJob `yaml:"jobs"`
}

type ghMonoJob struct {
	If       string     `yaml:"if"`
	Needs    stringList `yaml:"needs"`
	Uses     string     `yaml:"uses"`
	With     stringMap  `yaml:"with"`
	Secrets  string     `yaml:"secrets"`
	Strategy struct {
		FailFast *bool     `yaml:"fail-fast"`
		Matrix   stringMap `yaml:"matrix"`
	} `yaml:"strategy"`
	Env   stringMap `yaml:"env"`
	Steps []ghStep  `yaml:"steps"`
}

func loadMonoWorkflow(t *testing.T, file string) *ghMonoWorkflow {
	t.Helper()
	var w ghMonoWorkflow
	if err := yaml.Unmarshal(readFile(t, file), &w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return &w
}

// stepScript is the script of a step and the variables it sees: the
// workflow's, the job's and the step's env over base, ${{ }} replaced with
// values.
func stepScript(t *testing.T, w *ghMonoWorkflow, j ghMonoJob, s ghStep, values, base map[string]string) (string, map[string]string) {
	t.Helper()
	vars := map[string]string{}
	for k, v := range base {
		vars[k] = v
	}
	for _, m := range []map[string]string{w.Env, j.Env, s.Env} {
		for k, v := range m {
			sv, err := ghSubstitute(v, values)
			if err != nil {
				t.Fatalf("env %s: %v", k, err)
			}
			vars[k] = sv
		}
	}
	script, err := ghSubstitute(s.Run, values)
	if err != nil {
		t.Fatalf("step %s: %v", s.Name, err)
	}
	return script, vars
}

var layerIf = regexp.MustCompile(`^fromJSON\(needs\.stacks\.outputs\.stacks\)\.result\.layers\[(\d+)\] != null$`)

// ghLayerJobs returns the layer jobs in depth order, checking the form the
// test evaluates: layer-d needs the stacks job and layer-(d-1), runs when
// result.layers[d] exists, takes it as its matrix and calls the stack's
// workflow with each entry's directory.
func ghLayerJobs(t *testing.T, w *ghMonoWorkflow) []ghMonoJob {
	t.Helper()
	var out []ghMonoJob
	for d := 0; ; d++ {
		j, ok := w.Jobs[fmt.Sprintf("layer-%d", d)]
		if !ok {
			break
		}
		m := layerIf.FindStringSubmatch(j.If)
		wantNeeds := []string{"stacks"}
		if d > 0 {
			wantNeeds = append(wantNeeds, fmt.Sprintf("layer-%d", d-1))
		}
		switch {
		case m == nil || m[1] != fmt.Sprint(d):
			t.Fatalf("layer-%d: if %q, want fromJSON(needs.stacks.outputs.stacks).result.layers[%d] != null", d, j.If, d)
		case j.Strategy.Matrix["stack"] != fmt.Sprintf("${{ fromJSON(needs.stacks.outputs.stacks).result.layers[%d] }}", d):
			t.Fatalf("layer-%d: matrix %v, want stack: result.layers[%d]", d, j.Strategy.Matrix, d)
		case !slices.Equal([]string(j.Needs), wantNeeds):
			t.Fatalf("layer-%d: needs %v, want %v", d, j.Needs, wantNeeds)
		case j.Uses != "./.github/workflows/sponson-stack.yml" || j.With["directory"] != "${{ matrix.stack.directory }}" || j.Secrets != "inherit":
			t.Fatalf("layer-%d: uses %q with %v secrets %q", d, j.Uses, j.With, j.Secrets)
		case j.Strategy.FailFast == nil || *j.Strategy.FailFast:
			t.Fatalf("layer-%d: fail-fast must be off, so that a failed stack lets its layer finish", d)
		}
		out = append(out, j)
	}
	if len(out) == 0 {
		t.Fatal("the workflow has no layer-0 job")
	}
	return out
}

func TestE2ECITemplatesMonorepoGitHub(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	w := loadMonoWorkflow(t, githubMonorepo)
	sw := loadMonoWorkflow(t, githubMonorepoStack)
	layers := ghLayerJobs(t, w)
	root, first := monorepoCheckout(t, nil)
	srv := commenttest.New("test-token")
	defer srv.Close()

	values := map[string]string{
		"secrets.SPONSON_STATE_KEY": ciStateKey,
		"secrets.SPONSON_PLAN_KEY":  strings.Repeat("17", 32),
		"github.token":              "test-token",
	}
	events := t.TempDir()
	var last map[string]string
	// run runs the event's jobs: the stacks job, then each layer's matrix,
	// or the other jobs whose if holds.
	run := func(i int, e ghEvent) [][]string {
		t.Helper()
		payload, _ := json.Marshal(e.payload)
		eventPath := filepath.Join(events, fmt.Sprintf("event-%d.json", i))
		if err := os.WriteFile(eventPath, payload, 0o644); err != nil {
			t.Fatal(err)
		}
		host := map[string]string{
			"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": e.event, "GITHUB_EVENT_PATH": eventPath,
			"GITHUB_REPOSITORY": "acme/infra", "GITHUB_RUN_ID": fmt.Sprint(5100 + i), "GITHUB_WORKSPACE": root,
			"GITHUB_API_URL": srv.URL, "RUNNER_TEMP": t.TempDir(),
			// Each stack's name is derived, as on a real runner.
			"SPONSON_STACK": "",
		}
		for k, v := range e.vars {
			host[k] = v
		}
		runs := func(job string) bool {
			cond := w.Jobs[job].If
			v, err := evalExpr(cond, ghLookup(e.context()), true)
			if err != nil {
				t.Fatalf("job %s: if %q: %v", job, cond, err)
			}
			return truthy(v)
		}
		var got [][]string
		if runs("stacks") {
			j := w.Jobs["stacks"]
			var step ghStep
			for _, s := range j.Steps {
				if s.ID == "stacks" {
					step = s
				}
			}
			out := filepath.Join(t.TempDir(), "github-output")
			script, vars := stepScript(t, w, j, step, values, host)
			vars["GITHUB_OUTPUT"] = out
			r := h.ciRun(root, script, vars)
			if r.exit != 0 {
				t.Fatalf("%s: job stacks: exit %d\n%s\n%s", e.name, r.exit, r.stdout, r.stderr)
			}
			t.Logf("%s: sponson stacks:\n%s", e.name, readFile(t, filepath.Join(root, "stacks.json")))
			// The step output, written the way GitHub reads a multi-line one.
			text := string(readFile(t, out))
			body, ok := strings.CutPrefix(text, "stacks<<SPONSON_STACKS_EOF\n")
			body, ok2 := strings.CutSuffix(body, "SPONSON_STACKS_EOF\n")
			if !ok || !ok2 {
				t.Fatalf("%s: $GITHUB_OUTPUT is not one stacks<<DELIMITER value:\n%s", e.name, text)
			}
			got = layersOf(t, []byte(body))
			if len(got) > len(layers) {
				t.Fatalf("%s: %d layers, the workflow has %d", e.name, len(got), len(layers))
			}
			for d, dirs := range got {
				stack := sw.Jobs["stack"]
				inParallel(len(dirs), func(k int) {
					vals := map[string]string{"inputs.directory": dirs[k]}
					for key, v := range values {
						vals[key] = v
					}
					var script string
					var vars map[string]string
					for _, s := range stack.Steps {
						if strings.Contains(s.Run, "sponson") {
							script, vars = stepScript(t, sw, stack, s, vals, host)
						}
					}
					vars["RUNNER_TEMP"] = t.TempDir() // each job's own runner
					r := h.ciRun(root, script, vars)
					if r.exit != 0 {
						t.Errorf("%s: layer-%d: %s: exit %d\n%s\n%s", e.name, d, dirs[k], r.exit, r.stdout, r.stderr)
					}
					last = vars
				})
				if t.Failed() {
					t.FailNow()
				}
			}
		}
		for _, job := range []string{"preview-destroy", "gc", "drift"} {
			if !runs(job) {
				continue
			}
			line, vars := ghJobRun(t, &ghWorkflow{Env: w.Env, Jobs: orderedJobs{names: []string{job}, byKey: map[string]*ghJob{job: {Env: w.Jobs[job].Env, Steps: w.Jobs[job].Steps}}}}, job, values, host)
			r := h.ciRun(root, line, vars)
			if r.exit != 0 {
				t.Fatalf("%s: job %s: %s: exit %d\n%s\n%s", e.name, job, line, r.exit, r.stdout, r.stderr)
			}
			last = vars
		}
		return got
	}

	// The push that brought the stacks: all three, network before app.
	push := ghOnMain("push", map[string]any{"ref": "refs/heads/main", "before": first})
	push.name = "push to main"
	values["github.event.before"] = first
	if d := cmp.Diff([][]string{{"stacks/docs", "stacks/network"}, {"stacks/app"}}, run(0, push)); d != "" {
		t.Errorf("push to main: layers (-want +got):\n%s", d)
	}
	if got := h.ciOutputs(t, root, last, "stacks/app", "main"); got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" {
		t.Errorf("app's outputs in main = %v, want main's network", got)
	}

	// A pull request that changes the network: network, then app, which
	// plans and applies against the pull request's network.
	changeNetwork(t, root, "10.3.0.0/16")
	values["github.event.before"] = ""
	pr := ghPullRequest("opened", 3, "feat", false)
	pr.name = "pull request 3 opened"
	if d := cmp.Diff([][]string{{"stacks/network"}, {"stacks/app"}}, run(1, pr)); d != "" {
		t.Errorf("pull request 3: layers (-want +got):\n%s", d)
	}
	if got := h.ciOutputs(t, root, last, "stacks/app", "pr-3"); got["vpc"] != "vpc-pr-3-10.3.0.0/16" || got["from"] != "pr-3" {
		t.Errorf("app's outputs in pr-3 = %v, want pr-3's network", got)
	}
	if got := h.ciOutputs(t, root, last, "stacks/docs", "pr-3"); len(got) != 0 {
		t.Errorf("docs ran in pr-3 although nothing it uses changed: %v", got)
	}
	if cs := srv.Comments("acme/infra#3"); len(cs) != 2 {
		t.Errorf("%d comments on pull request 3, want one per stack that ran (network, app)", len(cs))
	}

	// The pull request closes: every stack's pr-3 goes, app first.
	closed := ghPullRequest("closed", 3, "feat", true)
	closed.name = "pull request 3 merged"
	if got := run(2, closed); got != nil {
		t.Errorf("the closed pull request ran the stacks job: %v", got)
	}
	for _, dir := range []string{"stacks/app", "stacks/network"} {
		if got := h.ciOutputs(t, root, last, dir, "pr-3"); len(got) != 0 {
			t.Errorf("%s still has outputs in pr-3 after the pull request closed: %v", dir, got)
		}
	}

	// The nightly run: gc --all finds nothing, drift --all main of the three
	// stacks is in sync.
	gitIn(t, root, "checkout", "--quiet", "main")
	nightly := ghOnMain("schedule", map[string]any{"schedule": "23 3 * * *"})
	nightly.name = "nightly"
	run(3, nightly)
}

func TestE2ECITemplatesMonorepoGitLab(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	p := loadGitLabFile(t, gitlabMonorepo)
	root, first := monorepoCheckout(t, map[string]string{".gitlab/sponson-stack.yml": string(readFile(t, gitlabMonorepoStack))})
	main := gitIn(t, root, "rev-parse", "HEAD")
	project := map[string]string{"SPONSON_STACK": "", "SPONSON_STATE_KEY": ciStateKey, "SPONSON_GIT_TOKEN": "glpat-test", "SPONSON_PLAN_KEY": strings.Repeat("17", 32)}
	var last map[string]string

	// jobVars are the variables of a job of the pipeline of vars.
	jobVars := func(p *glPipeline, vars map[string]string, job string) map[string]string {
		all := glEvent{vars: vars}.allVars(p)
		for k, v := range project {
			all[k] = v
		}
		for k, v := range p.byName[job].Variables {
			all[k] = os.Expand(v, func(name string) string { return all[name] })
		}
		all["CI_JOB_NAME"] = job
		return all
	}
	script := func(name string, p *glPipeline, vars map[string]string, job string) {
		t.Helper()
		jv := jobVars(p, vars, job)
		for _, line := range p.byName[job].Script {
			r := h.ciRun(root, line, jv)
			if r.exit != 0 {
				t.Errorf("%s: job %s: %s: exit %d\n%s\n%s", name, job, line, r.exit, r.stdout, r.stderr)
				return
			}
		}
		last = jv
	}
	// pipeline runs the jobs of the event's pipeline: the stacks job, then
	// the child pipeline it wrote, stage by stage; returns the child's jobs
	// by stage.
	pipeline := func(name string, vars map[string]string) [][]string {
		t.Helper()
		jobs := glPipelineJobs(t, p, glEvent{vars: vars})
		if jobs["stacks"] == "" {
			return nil
		}
		if jobs["stacks-run"] == "" {
			t.Fatalf("%s: the stacks job runs without stacks-run (%v)", name, jobs)
		}
		script(name, p, vars, "stacks")
		if t.Failed() {
			t.FailNow()
		}
		child := filepath.Join(root, "stacks-pipeline.yml")
		t.Logf("%s: the child pipeline:\n%s", name, readFile(t, child))
		var stages struct {
			Stages []string `yaml:"stages"`
		}
		if err := yaml.Unmarshal(readFile(t, child), &stages); err != nil {
			t.Fatal(err)
		}
		cp := loadGitLabFile(t, child)
		childVars := map[string]string{}
		for k, v := range vars {
			childVars[k] = v
		}
		// A child pipeline of a merge request pipeline keeps its variables.
		childVars["CI_PIPELINE_SOURCE"] = "parent_pipeline"
		var got [][]string
		for _, stage := range stages.Stages {
			var inStage []string
			for _, j := range cp.jobs {
				if cp.byName[j].Stage == stage {
					inStage = append(inStage, j)
				}
			}
			got = append(got, inStage)
			inParallel(len(inStage), func(i int) { script(name, cp, childVars, inStage[i]) })
			if t.Failed() {
				t.FailNow()
			}
		}
		return got
	}

	push := glOnMain("push")
	push["CI_COMMIT_BEFORE_SHA"] = first
	if d := cmp.Diff([][]string{{"stack stacks/docs", "stack stacks/network"}, {"stack stacks/app"}}, pipeline("push to main", push)); d != "" {
		t.Errorf("push to main: child pipeline (-want +got):\n%s", d)
	}
	if got := h.ciOutputs(t, root, last, "stacks/app", "main"); got["vpc"] != "vpc-main-10.0.0.0/16" || got["from"] != "main" {
		t.Errorf("app's outputs in main = %v, want main's network", got)
	}

	changeNetwork(t, root, "10.4.0.0/16")
	mr := glMergeRequest(4, "feat")
	mr["CI_MERGE_REQUEST_DIFF_BASE_SHA"] = main
	if d := cmp.Diff([][]string{{"stack stacks/network"}, {"stack stacks/app"}}, pipeline("merge request 4", mr)); d != "" {
		t.Errorf("merge request 4: child pipeline (-want +got):\n%s", d)
	}
	if got := h.ciOutputs(t, root, last, "stacks/app", "pr-4"); got["vpc"] != "vpc-pr-4-10.4.0.0/16" || got["from"] != "pr-4" {
		t.Errorf("app's outputs in pr-4 = %v, want pr-4's network", got)
	}

	// Merged: GitLab runs the preview's stop job.
	stop := glPipelineJobs(t, p, glEvent{vars: mr, stopOf: "preview"})
	if stop["preview-destroy"] != "stop" {
		t.Fatalf("the preview's stop job is %v, want preview-destroy", stop)
	}
	script("merge request 4 merged", p, mr, "preview-destroy")
	for _, dir := range []string{"stacks/app", "stacks/network"} {
		if got := h.ciOutputs(t, root, last, dir, "pr-4"); len(got) != 0 {
			t.Errorf("%s still has outputs in pr-4 after the merge: %v", dir, got)
		}
	}

	// A push of nothing that touches a stack writes a child pipeline with
	// the one job that says so.
	gitIn(t, root, "checkout", "--quiet", "main")
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("docs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "add", "README.md")
	gitIn(t, root, "commit", "--quiet", "-m", "readme")
	push["CI_COMMIT_BEFORE_SHA"] = main
	if d := cmp.Diff([][]string{{"no stack"}}, pipeline("push of a README", push)); d != "" {
		t.Errorf("push of a README: child pipeline (-want +got):\n%s", d)
	}

	nightly := glOnMain("schedule")
	jobs := glPipelineJobs(t, p, glEvent{vars: nightly})
	for _, job := range []string{"gc", "drift"} {
		if jobs[job] == "" {
			t.Fatalf("nightly: job %s does not run (%v)", job, jobs)
		}
		script("nightly", p, nightly, job)
	}
}
