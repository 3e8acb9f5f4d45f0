package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The CI templates, run: each event of ghScenarios and glScenarios is
// replayed in order on one repository, like the life of a real project. For
// every job the event starts, the job's sponson line runs exactly as written
// (through bash, as the runner would), with the variables the CI host sets
// for that event and the template's own env/variables, in a git checkout
// whose origin is a bare repository, so that SPONSON_STORE=git is the real
// git store. What each run did is read from its --json document.
//
// Only the values a CI host would inject are the test's: GitHub's
// ${{ secrets.* }}, ${{ github.token }} and the approval step's output, and
// GitLab's CI/CD variables. The GitHub API that gc asks for open pull
// requests is a stand-in on loopback.

// ciStateKey encrypts the state in the git store, as SPONSON_STATE_KEY would.
var ciStateKey = strings.Repeat("42", 32)

// ciCheckout makes the repository a CI job checks out: infra/ holds the demo
// configuration (the templates set SPONSON_CHDIR=infra), and origin is a
// bare repository with main pushed, standing for GitHub or GitLab.
func ciCheckout(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	bare := filepath.Join(t.TempDir(), "origin.git")
	if err := os.Mkdir(filepath.Join(root, "infra"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(example, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no configuration in %s: %v", example, err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, "infra", filepath.Base(f)), readFile(t, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=CI", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(root, "init", "--quiet", "--bare", bare)
	git(root, "-C", bare, "config", "receive.autogc", "false")
	git(root, "init", "--quiet")
	git(root, "add", "infra")
	git(root, "commit", "--quiet", "-m", "infra")
	git(root, "remote", "add", "origin", bare)
	git(root, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	return root
}

// ciRun runs one sponson line of a job through bash in dir, with sponson on
// PATH as the job's install step would put it, and the job's variables.
func (h *harness) ciRun(dir, line string, vars map[string]string) result {
	h.t.Helper()
	bin := filepath.Join(h.t.TempDir(), "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Symlink(h.bin, filepath.Join(bin, "sponson")); err != nil {
		h.t.Fatal(err)
	}
	var env []string
	for _, kv := range h.env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + bin + string(os.PathListSeparator) + p
		}
		env = append(env, kv)
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+vars[k])
	}
	cmd := h.guarded(dir, env, "bash", "-c", line)
	stdout, stderr, err := h.runGuarded(cmd)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("running %q: %v", line, err)
	}
	return result{exit: code, stdout: stdout, stderr: stderr}
}

// checkCIRun checks the --json document of one job's run against what the
// scenario expects of it.
func checkCIRun(t *testing.T, event string, l ciLine, x ciExpect, r result) {
	t.Helper()
	what := fmt.Sprintf("%s: job %s: %s", event, l.job, l.line)
	header, _, _ := strings.Cut(r.stderr, "\n")
	t.Logf("%s: job %s: %s", event, l.job, header)
	env := r.envelope(t)
	if r.exit != 0 || env["ok"] != true {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.exit, r.stdout, r.stderr)
	}
	if env["command"] != x.command {
		t.Errorf("%s: command %v, want %s", what, env["command"], x.command)
	}
	res, _ := env["result"].(map[string]any)
	if res["environment"] != x.env {
		t.Errorf("%s: environment %v, want %s", what, res["environment"], x.env)
	}
	switch x.command {
	case "plan":
		if res["scope"] != x.scope {
			t.Errorf("%s: scope %v, want %s\nstderr:\n%s", what, res["scope"], x.scope, r.stderr)
		}
		if s, _ := res["status"].(string); s != "changes" && s != "unchanged" {
			t.Errorf("%s: status %q", what, s)
		}
	case "apply", "destroy":
		if res["scope"] != x.scope {
			t.Errorf("%s: scope %v, want %s\nstderr:\n%s", what, res["scope"], x.scope, r.stderr)
		}
		want := []string{"applied", "unchanged"}
		if x.command == "destroy" {
			want = []string{"destroyed"}
		}
		if s, _ := res["status"].(string); !slices.Contains(want, s) {
			t.Errorf("%s: status %q, want one of %v", what, s, want)
		}
		rec, _ := res["receipt"].(map[string]any)
		if got, _ := rec["approvedBy"].(string); got != x.approver {
			t.Errorf("%s: receipt approvedBy %q, want %q", what, got, x.approver)
		}
	case "drift":
		if res["inSync"] != float64(x.scopes) || res["drifted"] != float64(0) || res["failed"] != float64(0) {
			t.Errorf("%s: %v in sync, %v drifted, %v failed; want %d in sync\n%s", what, res["inSync"], res["drifted"], res["failed"], x.scopes, r.stdout)
		}
	case "gc":
		var collected []string
		scopes, _ := res["scopes"].([]any)
		for _, s := range scopes {
			row, _ := s.(map[string]any)
			if row["outcome"] == "destroyed" {
				collected = append(collected, fmt.Sprint(row["scope"]))
			}
		}
		if diff := cmp.Diff(x.collects, collected); diff != "" {
			t.Errorf("%s: scopes destroyed (-want +got):\n%s\nstdout:\n%s", what, diff, r.stdout)
		}
		if res["failed"] != float64(0) {
			t.Errorf("%s: %v destroys failed\n%s", what, res["failed"], r.stdout)
		}
	}
}

// checkScopesLeft asserts which scopes of an environment own resources
// after the whole life: gc and destroy took exactly what they should.
func (h *harness) checkScopesLeft(t *testing.T, dir string, vars map[string]string, environment string, want []string) {
	t.Helper()
	r := h.ciRun(dir, "sponson status --env "+environment+" --json", vars)
	res, _ := r.envelope(t)["result"].(map[string]any)
	var got []string
	rows, _ := res["scopes"].([]any)
	for _, row := range rows {
		s, _ := row.(map[string]any)
		if owns, _ := s["owns"].(float64); owns > 0 {
			got = append(got, fmt.Sprint(s["scope"]))
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scopes of %s that own resources at the end (-want +got):\n%s\n%s", environment, diff, r.stdout)
	}
}

func TestE2ECITemplatesGitHub(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	w := loadGitHub(t)
	repo := ciCheckout(t)

	// The GitHub API as gc sees it: no pull request is open any more; and
	// as the ChatOps plan sees it: pull request 12's head is the commit the
	// job checked out.
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	var apiCalls, headCalls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/repos/acme/app/pulls/12" && req.Header.Get("Authorization") == "Bearer test-token" {
			headCalls.Add(1)
			rw.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(rw, `{"number": 12, "head": {"sha": %q}}`, strings.TrimSpace(string(head)))
			return
		}
		if req.URL.Path != "/repos/acme/app/pulls" || req.Header.Get("Authorization") != "Bearer test-token" {
			http.Error(rw, "unexpected request "+req.URL.String(), http.StatusNotFound)
			return
		}
		apiCalls.Add(1)
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprint(rw, "[]")
	}))
	defer api.Close()

	values := map[string]string{
		"secrets.SPONSON_STATE_KEY_PREVIEW":    ciStateKey,
		"secrets.SPONSON_STATE_KEY_PRODUCTION": strings.Repeat("24", 32),
		"secrets.SPONSON_PLAN_KEY":             strings.Repeat("17", 32),
		"github.token":                         "test-token",
		"steps.approval.outputs.approver":      "alice",
	}
	events := t.TempDir()
	var last map[string]string
	for i, e := range ghScenarios() {
		if diff := cmp.Diff(expectedJobs(e.expect), ghRunningJobs(t, w, e)); diff != "" {
			t.Fatalf("%s: jobs that run (-want +got):\n%s", e.name, diff)
		}
		payload, err := json.Marshal(e.payload)
		if err != nil {
			t.Fatal(err)
		}
		eventPath := filepath.Join(events, fmt.Sprintf("event-%d.json", i))
		if err := os.WriteFile(eventPath, payload, 0o644); err != nil {
			t.Fatal(err)
		}
		host := map[string]string{
			"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": e.event, "GITHUB_EVENT_PATH": eventPath,
			"GITHUB_REPOSITORY": "acme/app", "GITHUB_RUN_ID": fmt.Sprint(4200 + i), "GITHUB_WORKSPACE": repo,
			"GITHUB_API_URL": api.URL,
		}
		for k, v := range e.vars {
			host[k] = v
		}
		for _, x := range e.expect {
			lines := ghStepLines(w, x.job)
			if len(lines) != 1 {
				t.Fatalf("%s: job %s has %d sponson lines, want 1", e.name, x.job, len(lines))
			}
			line, vars := ghJobRun(t, w, x.job, values, host)
			checkCIRun(t, e.name, lines[0], x, h.ciRun(repo, line, vars))
			last = vars
		}
	}
	// Without an approval (an environment without required reviewers) the
	// approval step's output is empty, and sponson must refuse before the
	// engine writes, as the workflow's comment promises.
	values["steps.approval.outputs.approver"] = ""
	line, vars := ghJobRun(t, w, "production", values, last)
	h.checkRefusedWithoutApprover(t, repo, line, vars)

	if apiCalls.Load() == 0 {
		t.Error("gc never asked the GitHub API for open pull requests: GITHUB_TOKEN or GITHUB_API_URL did not reach it")
	}
	if headCalls.Load() == 0 {
		t.Error("the ChatOps plan never asked the GitHub API for the pull request's head")
	}
	h.checkScopesLeft(t, repo, last, "preview", []string{"main"})
	h.checkScopesLeft(t, repo, last, "production", []string{"main"})
}

func TestE2ECITemplatesGitLab(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	p := loadGitLab(t)
	repo := ciCheckout(t)

	// CI/CD variables of the project (Settings → CI/CD → Variables), which
	// the template names but does not hold.
	project := map[string]string{"SPONSON_GIT_TOKEN": "glpat-test", "SPONSON_PLAN_KEY": strings.Repeat("17", 32)}
	// The state keys, scoped to their environments as the template's setup
	// says: GitLab gives each job only its environment's.
	keys := map[string]string{"SPONSON_STATE_KEY_PREVIEW": ciStateKey, "SPONSON_STATE_KEY_PRODUCTION": strings.Repeat("24", 32)}
	var last map[string]string
	for _, e := range glScenarios() {
		jobs := glPipelineJobs(t, p, e)
		for _, x := range e.expect {
			if jobs[x.job] == "" {
				t.Fatalf("%s: job %s is not in the pipeline (%v)", e.name, x.job, jobs)
			}
			lines := glScriptLines(p, x.job)
			if len(lines) != 1 {
				t.Fatalf("%s: job %s has %d sponson lines, want 1", e.name, x.job, len(lines))
			}
			l := lines[0]
			vars := e.allVars(p)
			for k, v := range project {
				vars[k] = v
			}
			if k := glEnvironmentKey(p.byName[x.job]); k != "" {
				vars[k] = keys[k]
			}
			for k, v := range l.env {
				vars[k] = os.Expand(v, func(name string) string { return vars[name] })
			}
			vars["CI_JOB_NAME"] = x.job
			if x.playedBy != "" {
				// In a manual job GitLab names the user who played it.
				vars["GITLAB_USER_LOGIN"] = x.playedBy
			}
			checkCIRun(t, e.name, l, x, h.ciRun(repo, l.line, vars))
			last = vars
		}
	}
	// An empty GITLAB_USER_LOGIN (a runner or a trigger that names nobody)
	// must be refused, never recorded as an anonymous approval.
	prod := glScriptLines(p, "production")[0]
	noPlayer := map[string]string{}
	for k, v := range last {
		noPlayer[k] = v
	}
	noPlayer["GITLAB_USER_LOGIN"] = ""
	h.checkRefusedWithoutApprover(t, repo, prod.line, noPlayer)

	h.checkScopesLeft(t, repo, last, "preview", []string{"main", "pr-13"})
	h.checkScopesLeft(t, repo, last, "production", []string{"main"})
}

// ghJobRun returns the sponson line of a job and the variables of its step:
// base (what GitHub sets) under the workflow's, job's and step's env, with
// the test's values for their ${{ }} expressions.
func ghJobRun(t *testing.T, w *ghWorkflow, job string, values, base map[string]string) (string, map[string]string) {
	t.Helper()
	l := ghStepLines(w, job)[0]
	vars := map[string]string{}
	for k, v := range base {
		vars[k] = v
	}
	for k, v := range l.env {
		s, err := ghSubstitute(v, values)
		if err != nil {
			t.Fatalf("job %s: env %s: %v", job, k, err)
		}
		vars[k] = s
	}
	line, err := ghSubstitute(l.line, values)
	if err != nil {
		t.Fatalf("job %s: %v", job, err)
	}
	return line, vars
}

// checkRefusedWithoutApprover runs a production line whose approver is empty
// and expects ENV_NOT_APPROVED, exit 2.
func (h *harness) checkRefusedWithoutApprover(t *testing.T, dir, line string, vars map[string]string) {
	t.Helper()
	r := h.ciRun(dir, line, vars)
	if r.exit != 2 || r.code(t) != "ENV_NOT_APPROVED" {
		t.Errorf("%s without an approver: exit %d, code %q; want 2, ENV_NOT_APPROVED\n%s\n%s", line, r.exit, r.code(t), r.stdout, r.stderr)
	}
}

func expectedJobs(xs []ciExpect) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.job)
	}
	return out
}
