package e2e_test

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// The CI templates of examples/ci are what users copy into their pipelines,
// so they are tested like code. These unit tests parse both files, evaluate
// their trigger conditions (GitHub's `if:` expressions, GitLab's `rules:`)
// for each event a pipeline sees, and check that exactly the right jobs run,
// with the right sponson command. e2e_citemplates_test.go then runs the
// sponson lines of those jobs against a real engine and store.

const (
	githubTemplate = "../../examples/ci/github-actions.yml"
	gitlabTemplate = "../../examples/ci/gitlab-ci.yml"
)

// ciExpect is one job that must run for an event, and what its sponson line
// must do.
type ciExpect struct {
	job      string
	command  string // apply, destroy, gc or drift
	env      string // the environment of the run
	scope    string // apply and destroy: the scope the job must get
	approver string // recorded in the receipt; production only
	// playedBy is who starts a manual GitLab job (GITLAB_USER_LOGIN in it).
	playedBy string
	// collects are the scopes gc must destroy.
	collects []string
	// scopes is how many scopes drift must find in sync.
	scopes int
}

// ---------------------------------------------------------------- GitHub

// ghWorkflow is what the tests read of a GitHub Actions workflow.
type ghWorkflow struct {
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Env         stringMap         `yaml:"env"`
	Jobs        orderedJobs       `yaml:"jobs"`
}

// orderedJobs keeps the jobs in file order, which the tests use to break ties
// between jobs that do not need each other, like GitHub's display does.
type orderedJobs struct {
	names []string
	byKey map[string]*ghJob
}

func (o *orderedJobs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: jobs is not a mapping", n.Line)
	}
	o.byKey = map[string]*ghJob{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		var j ghJob
		if err := n.Content[i+1].Decode(&j); err != nil {
			return err
		}
		o.names = append(o.names, n.Content[i].Value)
		o.byKey[n.Content[i].Value] = &j
	}
	return nil
}

type ghJob struct {
	If          string `yaml:"if"`
	Concurrency struct {
		Group            string `yaml:"group"`
		CancelInProgress bool   `yaml:"cancel-in-progress"`
	} `yaml:"concurrency"`
	Needs       stringList        `yaml:"needs"`
	Environment string            `yaml:"environment"`
	Permissions map[string]string `yaml:"permissions"`
	Env         stringMap         `yaml:"env"`
	Steps       []ghStep          `yaml:"steps"`
}

type ghStep struct {
	ID    string    `yaml:"id"`
	Name  string    `yaml:"name"`
	If    string    `yaml:"if"`
	Shell string    `yaml:"shell"`
	Uses  string    `yaml:"uses"`
	With  stringMap `yaml:"with"`
	Env   stringMap `yaml:"env"`
	Run   string    `yaml:"run"`
}

// stringMap is a mapping of names to values as CI files write them:
// scalars of any type (tofu_wrapper: false), or GitLab's {value: ...} form
// of a variable, all read as the strings the job's environment gets.
type stringMap map[string]string

func (s *stringMap) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: not a mapping", n.Line)
	}
	*s = stringMap{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		switch v.Kind {
		case yaml.ScalarNode:
			(*s)[k] = v.Value
		case yaml.MappingNode:
			var full struct {
				Value string `yaml:"value"`
			}
			if err := v.Decode(&full); err != nil {
				return err
			}
			(*s)[k] = full.Value
		default:
			return fmt.Errorf("line %d: %s is not a value", v.Line, k)
		}
	}
	return nil
}

// stringList is a YAML value that may be one string or a list of them.
type stringList []string

func (s *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = []string{n.Value}
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return err
	}
	*s = l
	return nil
}

func loadGitHub(t *testing.T) *ghWorkflow {
	t.Helper()
	var w ghWorkflow
	if err := yaml.Unmarshal(readFile(t, githubTemplate), &w); err != nil {
		t.Fatalf("%s: %v", githubTemplate, err)
	}
	return &w
}

// ghEvent is one event of the workflow's life, as GitHub presents it to a
// job: its name, the webhook payload at GITHUB_EVENT_PATH, and the variables
// GitHub sets for it.
type ghEvent struct {
	name    string
	event   string
	payload map[string]any
	vars    map[string]string
	expect  []ciExpect
}

// ghRepo is the repository of the scenarios.
var ghRepo = map[string]any{"full_name": "acme/app", "default_branch": "main"}

func ghPullRequest(action string, number int, head string, merged bool) ghEvent {
	sha := fmt.Sprintf("%040x", number)
	return ghEvent{
		event: "pull_request",
		payload: map[string]any{
			"action": action,
			"number": number,
			"pull_request": map[string]any{
				"number": number,
				"merged": merged,
				"head":   map[string]any{"ref": head, "sha": sha, "repo": map[string]any{"id": 1, "full_name": "acme/app"}},
				"base":   map[string]any{"ref": "main", "repo": map[string]any{"id": 1, "full_name": "acme/app"}},
			},
			"repository": ghRepo,
		},
		vars: map[string]string{
			"GITHUB_REF":      fmt.Sprintf("refs/pull/%d/merge", number),
			"GITHUB_REF_NAME": fmt.Sprintf("%d/merge", number),
			"GITHUB_HEAD_REF": head,
			"GITHUB_BASE_REF": "main",
			// The merge commit GitHub made, not the head: sponson records
			// the head from the payload.
			"GITHUB_SHA": strings.Repeat("e", 40),
		},
	}
}

// ghFork makes a pull request event's head another repository's.
func ghFork(e ghEvent) ghEvent {
	pr := e.payload["pull_request"].(map[string]any)
	head := pr["head"].(map[string]any)
	head["repo"] = map[string]any{"id": 2, "full_name": "stranger/app"}
	return e
}

// ghComment is a comment on pull request number (issue_comment): GitHub runs
// the default branch's workflow, with the default branch's GITHUB_REF and
// GITHUB_SHA.
func ghComment(number int, body, association string) ghEvent {
	e := ghOnMain("issue_comment", map[string]any{
		"action":  "created",
		"issue":   map[string]any{"number": number, "pull_request": map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/acme/app/pulls/%d", number)}},
		"comment": map[string]any{"body": body, "author_association": association},
	})
	return e
}

func ghOnMain(event string, payload map[string]any) ghEvent {
	payload["repository"] = ghRepo
	return ghEvent{event: event, payload: payload, vars: map[string]string{
		"GITHUB_REF": "refs/heads/main", "GITHUB_REF_NAME": "main", "GITHUB_HEAD_REF": "",
		"GITHUB_SHA": strings.Repeat("a", 40),
	}}
}

// ghScenarios are the events of the GitHub workflow's life, in the order the
// e2e test replays them on one store.
func ghScenarios() []ghEvent {
	with := func(e ghEvent, name string, expect ...ciExpect) ghEvent {
		e.name, e.expect = name, expect
		return e
	}
	return []ghEvent{
		with(ghOnMain("push", map[string]any{"ref": "refs/heads/main"}), "push to main",
			ciExpect{job: "main", command: "apply", env: "preview", scope: "main"},
			ciExpect{job: "production-plan", command: "plan", env: "production", scope: "main"},
			ciExpect{job: "production", command: "apply", env: "production", scope: "main", approver: "alice"}),
		with(ghPullRequest("opened", 12, "feat/x", false), "pull request 12 opened",
			ciExpect{job: "preview-plan", command: "plan", env: "preview", scope: "pr-12"},
			ciExpect{job: "preview", command: "apply", env: "preview", scope: "pr-12"}),
		with(ghPullRequest("synchronize", 12, "feat/x", false), "pull request 12 synchronized",
			ciExpect{job: "preview-plan", command: "plan", env: "preview", scope: "pr-12"},
			ciExpect{job: "preview", command: "apply", env: "preview", scope: "pr-12"}),
		with(ghComment(12, "/sponson plan", "MEMBER"), "comment /sponson plan on pull request 12",
			ciExpect{job: "chatops-plan", command: "plan", env: "preview", scope: "pr-12"}),
		with(ghComment(12, "/sponson plan", "NONE"), "comment /sponson plan by a stranger"),
		with(ghComment(12, "looks good", "MEMBER"), "another comment"),
		with(ghFork(ghPullRequest("opened", 14, "feat/z", false)), "pull request 14 from a fork opened"),
		with(ghPullRequest("opened", 13, "feat/y", false), "pull request 13 opened",
			ciExpect{job: "preview-plan", command: "plan", env: "preview", scope: "pr-13"},
			ciExpect{job: "preview", command: "apply", env: "preview", scope: "pr-13"}),
		with(ghPullRequest("closed", 12, "feat/x", true), "pull request 12 merged",
			ciExpect{job: "preview-destroy", command: "destroy", env: "preview", scope: "pr-12"}),
		// Pull request 13 was closed too, but its destroy job failed: the
		// GitHub API (a stand-in in the e2e test) lists no open pull request.
		with(ghOnMain("schedule", map[string]any{"schedule": "23 3 * * *"}), "nightly",
			ciExpect{job: "gc", command: "gc", env: "preview", collects: []string{"pr-13"}},
			ciExpect{job: "drift", command: "drift", env: "production", scopes: 1}),
		with(ghOnMain("workflow_dispatch", map[string]any{"inputs": map[string]any{}}), "gc by hand",
			ciExpect{job: "gc", command: "gc", env: "preview", collects: nil},
			ciExpect{job: "drift", command: "drift", env: "production", scopes: 1}),
	}
}

// context is the `github` context of a job for the event.
func (e ghEvent) context() map[string]any {
	return map[string]any{"github": map[string]any{
		"event_name": e.event,
		"event":      e.payload,
		"ref":        e.vars["GITHUB_REF"],
		"ref_name":   e.vars["GITHUB_REF_NAME"],
		"head_ref":   e.vars["GITHUB_HEAD_REF"],
		"repository": "acme/app",
	}}
}

// ghRunningJobs evaluates each job's `if:` for the event and returns the jobs
// that run, a job after those it needs (GitHub skips a job whose need was
// skipped).
func ghRunningJobs(t *testing.T, w *ghWorkflow, e ghEvent) []string {
	t.Helper()
	ran := map[string]bool{}
	var order []string
	for len(order) < len(w.Jobs.names) {
		progressed := false
		for _, name := range w.Jobs.names {
			if slices.Contains(order, name) {
				continue
			}
			j := w.Jobs.byKey[name]
			ready, needsRan := true, true
			for _, n := range j.Needs {
				if !slices.Contains(order, n) {
					ready = false
				} else if !ran[n] {
					needsRan = false
				}
			}
			if !ready {
				continue
			}
			progressed = true
			order = append(order, name)
			cond := strings.TrimSpace(j.If)
			cond = strings.TrimSuffix(strings.TrimPrefix(cond, "${{"), "}}")
			ok := true
			if cond != "" {
				v, err := evalExpr(cond, ghLookup(e.context()), true)
				if err != nil {
					t.Fatalf("job %s: if %q: %v", name, j.If, err)
				}
				ok = truthy(v)
			}
			ran[name] = ok && needsRan
		}
		if !progressed {
			t.Fatalf("the needs of the jobs form a cycle or name a missing job")
		}
	}
	var out []string
	for _, name := range order {
		if ran[name] {
			out = append(out, name)
		}
	}
	return out
}

func ghLookup(ctx map[string]any) func(string) (any, error) {
	return func(path string) (any, error) {
		var v any = ctx
		for _, part := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, nil
			}
			v = m[part]
		}
		return v, nil
	}
}

// ghStepLines returns the sponson lines of a job, each with the environment
// its step sees (workflow, job, then step env, later ones winning), the
// values still holding their ${{ }} expressions.
func ghStepLines(w *ghWorkflow, job string) []ciLine {
	j := w.Jobs.byKey[job]
	var out []ciLine
	for _, s := range j.Steps {
		for _, l := range sponsonLines(s.Run) {
			env := map[string]string{}
			for _, m := range []map[string]string{w.Env, j.Env, s.Env} {
				for k, v := range m {
					env[k] = v
				}
			}
			out = append(out, ciLine{job: job, step: s.Name, line: l, env: env})
		}
	}
	return out
}

// ciLine is one sponson command line of a job.
type ciLine struct {
	job, step, line string
	env             map[string]string
}

// sponsonLines returns the shell lines of a script that run sponson,
// backslash continuations joined.
func sponsonLines(script string) []string {
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(script))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if cont, ok := strings.CutSuffix(l, "\\"); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(l)
		if full := strings.TrimSpace(cur.String()); full == "sponson" || strings.HasPrefix(full, "sponson ") {
			out = append(out, full)
		}
		cur.Reset()
	}
	return out
}

// exprPat is a GitHub expression in a value.
var exprPat = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// ghSubstitute replaces the ${{ }} expressions of v with the test's values;
// an expression the test does not know fails, so that a new one in the
// template is a decision of the test, not a silent empty string.
func ghSubstitute(v string, values map[string]string) (string, error) {
	var missing []string
	out := exprPat.ReplaceAllStringFunc(v, func(m string) string {
		expr := exprPat.FindStringSubmatch(m)[1]
		val, ok := values[expr]
		if !ok {
			missing = append(missing, expr)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no test value for ${{ %s }}", strings.Join(missing, " }}, ${{ "))
	}
	return out, nil
}

func TestCITemplatesGitHubTriggers(t *testing.T) {
	t.Parallel()
	w := loadGitHub(t)

	pr, _ := w.On["pull_request"].(map[string]any)
	var types []string
	for _, v := range asList(pr["types"]) {
		types = append(types, fmt.Sprint(v))
	}
	slices.Sort(types)
	if diff := cmp.Diff([]string{"closed", "opened", "reopened", "synchronize"}, types); diff != "" {
		t.Errorf("pull_request types (-want +got):\n%s", diff)
	}
	push, _ := w.On["push"].(map[string]any)
	if diff := cmp.Diff([]any{"main"}, asList(push["branches"])); diff != "" {
		t.Errorf("push branches (-want +got):\n%s", diff)
	}
	if sched := asList(w.On["schedule"]); len(sched) != 1 {
		t.Errorf("want one nightly schedule, got %v", w.On["schedule"])
	} else if cron, _ := sched[0].(map[string]any)["cron"].(string); len(strings.Fields(cron)) != 5 ||
		strings.Fields(cron)[2] != "*" || strings.Fields(cron)[4] != "*" {
		t.Errorf("schedule cron %q is not once a day", cron)
	}
	if w.Permissions["contents"] != "write" || w.Permissions["pull-requests"] != "read" {
		t.Errorf("permissions %v: the git store pushes (contents: write), gc reads pull requests", w.Permissions)
	}
	if w.Env["SPONSON_STORE"] != "git" {
		t.Errorf("env %v: state in the repository's git store", w.Env)
	}
	for k := range w.Env {
		if strings.HasPrefix(k, "SPONSON_STATE_KEY") {
			t.Errorf("the workflow's env holds %s: every job would get it; a state key goes to the jobs of its environment only", k)
		}
	}
	if _, ok := w.On["pull_request_target"]; ok {
		t.Errorf("the workflow runs on pull_request_target, which runs a fork's pull request with this repository's secrets")
	}
}

// TestCITemplatesGitHubKeys: each job gets the state key of the one
// environment it runs in; production's key only in the jobs of the GitHub
// environments that hold it (production with its reviewers, and
// production-plan), and the preview key never there.
func TestCITemplatesGitHubKeys(t *testing.T) {
	t.Parallel()
	w := loadGitHub(t)
	for _, name := range w.Jobs.names {
		j := w.Jobs.byKey[name]
		lines := ghStepLines(w, name)
		if len(lines) == 0 {
			continue
		}
		production := slices.Contains(strings.Fields(lines[0].line), "production")
		var keys []string
		for k := range lines[0].env {
			if strings.HasPrefix(k, "SPONSON_STATE_KEY") {
				keys = append(keys, k)
			}
		}
		want := []string{"SPONSON_STATE_KEY_PREVIEW"}
		if production {
			want = []string{"SPONSON_STATE_KEY_PRODUCTION"}
			if j.Environment != "production" && j.Environment != "production-plan" {
				t.Errorf("job %s reads production without a GitHub environment that holds its key (environment %q)", name, j.Environment)
			}
		}
		if diff := cmp.Diff(want, keys); diff != "" {
			t.Errorf("job %s: state keys (-want +got):\n%s", name, diff)
		}
		if got := lines[0].env[want[0]]; got != "${{ secrets."+want[0]+" }}" {
			t.Errorf("job %s: %s = %q, want the secret of that name", name, want[0], got)
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
	if w.Jobs.byKey["production"].Environment != "production" {
		t.Errorf("the production apply is not behind the production environment's reviewers")
	}
}

func TestCITemplatesGitHubJobsPerEvent(t *testing.T) {
	t.Parallel()
	w := loadGitHub(t)
	for _, e := range ghScenarios() {
		var want []string
		for _, x := range e.expect {
			want = append(want, x.job)
		}
		if diff := cmp.Diff(want, ghRunningJobs(t, w, e)); diff != "" {
			t.Errorf("%s: jobs that run (-want +got):\n%s", e.name, diff)
		}
		for _, x := range e.expect {
			lines := ghStepLines(w, x.job)
			if len(lines) != 1 {
				t.Errorf("%s: job %s has %d sponson lines, want 1", e.name, x.job, len(lines))
				continue
			}
			checkSponsonLine(t, lines[0], x)
		}
	}
}

// checkSponsonLine checks what can be seen of a sponson line without running
// it: the command, --json, and that the scope is left to detection.
func checkSponsonLine(t *testing.T, l ciLine, x ciExpect) {
	t.Helper()
	words := strings.Fields(l.line)
	if len(words) < 2 || words[1] != x.command {
		t.Errorf("job %s: %q does not run sponson %s", l.job, l.line, x.command)
	}
	if !slices.Contains(words, "--json") {
		t.Errorf("job %s: %q lacks --json: later steps read its one JSON document", l.job, l.line)
	}
	for _, w := range words {
		for _, flag := range []string{"--scope", "--pr", "--branch"} {
			if w == flag || strings.HasPrefix(w, flag+"=") {
				t.Errorf("job %s: %q passes %s: the scope must come from the CI host's own variables", l.job, l.line, flag)
			}
		}
	}
	if x.command != "gc" && x.command != "plan" && x.command != "drift" && !slices.Contains(words, "--wait") {
		t.Errorf("job %s: %q lacks --wait: a second run of the scope would fail with LOCK_HELD instead of queueing", l.job, l.line)
	}
	if x.env == "production" && x.command != "plan" && x.command != "drift" {
		if !slices.Contains(words, "--env") || words[slices.Index(words, "--env")+1] != "production" {
			t.Errorf("job %s: %q does not name --env production", l.job, l.line)
		}
		if !slices.Contains(words, "--approved-by") {
			t.Errorf("job %s: %q does not pass --approved-by", l.job, l.line)
		}
	}
	if x.command == "gc" && !slices.Contains(words, "--yes") {
		t.Errorf("job %s: %q lacks --yes, so the nightly gc would only print what it would do", l.job, l.line)
	}
}

// TestCITemplatesGitHubProductionApproval: the production job waits for the
// environment's reviewers and hands the approver to sponson through the
// environment, never by splicing an expression into the script.
func TestCITemplatesGitHubProductionApproval(t *testing.T) {
	t.Parallel()
	w := loadGitHub(t)
	j := w.Jobs.byKey["production"]
	if j == nil {
		t.Fatal("no production job")
	}
	if j.Environment != "production" {
		t.Errorf("production job environment = %q, want production (its required reviewers are the approval)", j.Environment)
	}
	if diff := cmp.Diff(stringList{"production-plan"}, j.Needs); diff != "" {
		t.Errorf("production needs (-want +got):\n%s", diff)
	}
	if j.Permissions["actions"] != "read" || j.Permissions["contents"] != "write" {
		t.Errorf("production permissions %v: it reads the run's approvals and pushes the store", j.Permissions)
	}
	var approval *ghStep
	for i := range j.Steps {
		if j.Steps[i].ID == "approval" {
			approval = &j.Steps[i]
		}
	}
	if approval == nil || !strings.Contains(approval.Run, "/approvals") || !strings.Contains(approval.Run, "GITHUB_OUTPUT") {
		t.Fatalf("no step with id approval that reads the run's approvals into an output: %+v", approval)
	}
	lines := ghStepLines(w, "production")
	if len(lines) != 1 {
		t.Fatalf("production has %d sponson lines, want 1", len(lines))
	}
	l := lines[0]
	if !strings.HasSuffix(l.line, " production.tfplan") {
		t.Errorf("production line %q does not apply the saved plan of production-plan", l.line)
	}
	if !strings.Contains(l.line, `--approved-by "$APPROVER"`) || l.env["APPROVER"] != "${{ steps.approval.outputs.approver }}" {
		t.Errorf("production line %q with env %v: want --approved-by \"$APPROVER\" with APPROVER from the approval step", l.line, l.env)
	}
	for _, name := range w.Jobs.names {
		for _, s := range w.Jobs.byKey[name].Steps {
			if strings.Contains(s.Run, "${{") && len(sponsonLines(s.Run)) > 0 {
				t.Errorf("job %s: a sponson line holds a ${{ }} expression, which would become shell code: %q", name, s.Run)
			}
		}
	}
}

// ---------------------------------------------------------------- GitLab

// glPipeline is a GitLab CI file with its jobs' `extends` resolved.
type glPipeline struct {
	workflowRules []glRule
	variables     stringMap
	jobs          []string // in file order
	byName        map[string]*glJob
}

type glJob struct {
	Stage         string        `yaml:"stage"`
	Image         string        `yaml:"image"`
	BeforeScript  []string      `yaml:"before_script"`
	Script        []string      `yaml:"script"`
	Variables     stringMap     `yaml:"variables"`
	Rules         []glRule      `yaml:"rules"`
	Needs         []string      `yaml:"needs"`
	AllowFailure  bool          `yaml:"allow_failure"`
	Interruptible bool          `yaml:"interruptible"`
	Environment   glEnvironment `yaml:"environment"`
	ResourceGroup string        `yaml:"resource_group"`
	Artifacts     struct {
		Paths   []string          `yaml:"paths"`
		Reports map[string]string `yaml:"reports"`
	} `yaml:"artifacts"`
}

type glRule struct {
	If   string `yaml:"if"`
	When string `yaml:"when"`
}

type glEnvironment struct {
	Name           string `yaml:"name"`
	Action         string `yaml:"action"`
	OnStop         string `yaml:"on_stop"`
	AutoStopIn     string `yaml:"auto_stop_in"`
	DeploymentTier string `yaml:"deployment_tier"`
	URL            string `yaml:"url"`
}

// glEnvironmentKey is the state key GitLab gives a job, by the environment
// scopes of the template's setup: SPONSON_STATE_KEY_PREVIEW to preview/*,
// SPONSON_STATE_KEY_PRODUCTION to production.
func glEnvironmentKey(j *glJob) string {
	switch {
	case j.Environment.Name == "production":
		return "SPONSON_STATE_KEY_PRODUCTION"
	case strings.HasPrefix(j.Environment.Name, "preview/"):
		return "SPONSON_STATE_KEY_PREVIEW"
	}
	return ""
}

// TestCITemplatesGitLabKeys: every job names the environment whose key it
// needs (production's only in production's jobs), the jobs that write a
// scope share a resource_group per scope and the plans none, and the
// preview's address reaches its environment through the dotenv report.
func TestCITemplatesGitLabKeys(t *testing.T) {
	t.Parallel()
	p := loadGitLab(t)
	for k := range p.variables {
		if strings.HasPrefix(k, "SPONSON_STATE_KEY") {
			t.Errorf("the pipeline's variables hold %s: a state key is a CI/CD variable scoped to its environment", k)
		}
	}
	groups := map[string]string{}
	for _, name := range p.jobs {
		j := p.byName[name]
		lines := glScriptLines(p, name)
		if len(lines) == 0 {
			continue
		}
		words := strings.Fields(lines[0].line)
		want := "SPONSON_STATE_KEY_PREVIEW"
		if slices.Contains(words, "production") {
			want = "SPONSON_STATE_KEY_PRODUCTION"
		}
		if got := glEnvironmentKey(j); got != want {
			t.Errorf("job %s (environment %q) gets %q, want %s", name, j.Environment.Name, got, want)
		}
		switch words[1] {
		case "apply", "destroy":
			if j.ResourceGroup == "" {
				t.Errorf("job %s %ss without a resource_group: two pipelines would write the scope at once", name, words[1])
			}
			groups[name] = j.ResourceGroup
			if j.Environment.Action == "prepare" {
				t.Errorf("job %s writes the scope but says action: prepare", name)
			}
		default:
			if j.ResourceGroup != "" {
				t.Errorf("job %s (%s) holds resource_group %s: a plan would queue behind applies for nothing", name, words[1], j.ResourceGroup)
			}
			if j.Environment.Action != "prepare" {
				t.Errorf("job %s (%s) is a deployment of %s: it deploys nothing (action: prepare)", name, words[1], j.Environment.Name)
			}
		}
	}
	if groups["preview"] != groups["preview-destroy"] || !strings.Contains(groups["preview"], "$CI_MERGE_REQUEST_IID") {
		t.Errorf("resource groups %v: preview and preview-destroy share one per merge request", groups)
	}
	if groups["main"] == groups["production"] || groups["main"] == groups["preview"] {
		t.Errorf("resource groups %v: one per scope", groups)
	}
	preview := p.byName["preview"]
	if preview.Environment.URL != "$SPONSON_URL" || preview.Artifacts.Reports["dotenv"] != "deploy.env" ||
		!strings.Contains(glScriptLines(p, "preview")[0].line, "--gitlab-dotenv deploy.env") {
		t.Errorf("the preview's address does not reach its environment: url %q, reports %v", preview.Environment.URL, preview.Artifacts.Reports)
	}
}

// glReserved are the top-level keys of a GitLab CI file that are not jobs.
var glReserved = map[string]bool{
	"workflow": true, "stages": true, "variables": true, "default": true, "include": true,
	"image": true, "services": true, "before_script": true, "after_script": true, "cache": true,
}

func loadGitLab(t *testing.T) *glPipeline { return loadGitLabFile(t, gitlabTemplate) }

func loadGitLabFile(t *testing.T, file string) *glPipeline {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal(readFile(t, file), &root); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	doc := root.Content[0]
	raw := map[string]map[string]any{}
	p := &glPipeline{byName: map[string]*glJob{}}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		key, val := doc.Content[i].Value, doc.Content[i+1]
		switch {
		case key == "workflow":
			var wf struct {
				Rules []glRule `yaml:"rules"`
			}
			if err := val.Decode(&wf); err != nil {
				t.Fatal(err)
			}
			p.workflowRules = wf.Rules
		case key == "variables":
			if err := val.Decode(&p.variables); err != nil {
				t.Fatal(err)
			}
		case glReserved[key]:
		default:
			var m map[string]any
			if err := val.Decode(&m); err != nil {
				t.Fatalf("job %s: %v", key, err)
			}
			raw[key] = m
			if !strings.HasPrefix(key, ".") {
				p.jobs = append(p.jobs, key)
			}
		}
	}
	for _, name := range p.jobs {
		merged, err := glExtend(raw, name, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := yaml.Marshal(merged)
		if err != nil {
			t.Fatal(err)
		}
		var j glJob
		if err := yaml.Unmarshal(b, &j); err != nil {
			t.Fatalf("job %s: %v", name, err)
		}
		p.byName[name] = &j
	}
	return p
}

// glExtend resolves `extends` the way GitLab does: the templates first, the
// job's own keys over them, hashes merged deeply and lists replaced.
func glExtend(raw map[string]map[string]any, name string, depth int) (map[string]any, error) {
	if depth > 10 {
		return nil, fmt.Errorf("extends of %s nests too deep", name)
	}
	job, ok := raw[name]
	if !ok {
		return nil, fmt.Errorf("extends names %s, which does not exist", name)
	}
	out := map[string]any{}
	var parents []string
	switch v := job["extends"].(type) {
	case string:
		parents = []string{v}
	case []any:
		for _, p := range v {
			parents = append(parents, fmt.Sprint(p))
		}
	}
	for _, parent := range parents {
		base, err := glExtend(raw, parent, depth+1)
		if err != nil {
			return nil, err
		}
		deepMerge(out, base)
	}
	own := map[string]any{}
	for k, v := range job {
		if k != "extends" {
			own[k] = v
		}
	}
	deepMerge(out, own)
	return out, nil
}

func deepMerge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				deepMerge(dm, sm)
				continue
			}
			cp := map[string]any{}
			deepMerge(cp, sm)
			dst[k] = cp
			continue
		}
		dst[k] = v
	}
}

// glEvent is one pipeline of the GitLab file's life: the predefined
// variables GitLab sets for it.
type glEvent struct {
	name string
	vars map[string]string
	// stopOf, when set, makes the event the merge or close of a merge
	// request: GitLab runs the stop job of that job's environment.
	stopOf string
	expect []ciExpect
}

func glMergeRequest(iid int, source string) map[string]string {
	return map[string]string{
		"CI_PIPELINE_SOURCE":                  "merge_request_event",
		"CI_MERGE_REQUEST_IID":                strconv.Itoa(iid),
		"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": source,
		"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
		"CI_MERGE_REQUEST_SOURCE_BRANCH_SHA":  fmt.Sprintf("%040x", iid),
		"CI_COMMIT_REF_NAME":                  source,
		// A merged-results pipeline's commit is GitLab's merge commit;
		// sponson records the source branch's head instead.
		"CI_COMMIT_SHA":               strings.Repeat("e", 40),
		"CI_MERGE_REQUEST_EVENT_TYPE": "merged_result",
	}
}

func glOnMain(source string) map[string]string {
	return map[string]string{
		"CI_PIPELINE_SOURCE": source,
		"CI_COMMIT_BRANCH":   "main",
		"CI_COMMIT_REF_NAME": "main",
		"CI_COMMIT_SHA":      strings.Repeat("a", 40),
	}
}

// glScenarios are the pipelines of the GitLab file's life, in the order the
// e2e test replays them on one store.
func glScenarios() []glEvent {
	return []glEvent{
		{name: "push to the default branch", vars: glOnMain("push"), expect: []ciExpect{
			{job: "main", command: "apply", env: "preview", scope: "main"},
			{job: "production-plan", command: "plan", env: "production", scope: "main"},
			{job: "production", command: "apply", env: "production", scope: "main", approver: "alice", playedBy: "alice"},
		}},
		{name: "merge request 12", vars: glMergeRequest(12, "feat/x"), expect: []ciExpect{
			{job: "preview-plan", command: "plan", env: "preview", scope: "pr-12"},
			{job: "preview", command: "apply", env: "preview", scope: "pr-12"},
		}},
		{name: "merge request 12 updated", vars: glMergeRequest(12, "feat/x"), expect: []ciExpect{
			{job: "preview-plan", command: "plan", env: "preview", scope: "pr-12"},
			{job: "preview", command: "apply", env: "preview", scope: "pr-12"},
		}},
		{name: "merge request 13", vars: glMergeRequest(13, "feat/y"), expect: []ciExpect{
			{job: "preview-plan", command: "plan", env: "preview", scope: "pr-13"},
			{job: "preview", command: "apply", env: "preview", scope: "pr-13"},
		}},
		{name: "merge request 12 merged", vars: glMergeRequest(12, "feat/x"), stopOf: "preview", expect: []ciExpect{
			{job: "preview-destroy", command: "destroy", env: "preview", scope: "pr-12"},
		}},
		// Merge request 13 is still open and nothing is 30 days old: gc runs
		// and collects nothing.
		{name: "scheduled", vars: glOnMain("schedule"), expect: []ciExpect{
			{job: "gc", command: "gc", env: "preview"},
			{job: "drift", command: "drift", env: "production", scopes: 1},
		}},
	}
}

// allVars are the variables every job of the event sees: GitLab's predefined
// ones, then the file's.
func (e glEvent) allVars(p *glPipeline) map[string]string {
	v := map[string]string{
		"GITLAB_CI": "true", "CI": "true", "CI_DEFAULT_BRANCH": "main", "CI_PROJECT_PATH": "acme/app",
		"CI_SERVER_HOST": "gitlab.example.com", "GITLAB_USER_LOGIN": "bob",
	}
	for k, val := range e.vars {
		v[k] = val
	}
	for k, val := range p.variables {
		v[k] = os.Expand(val, func(name string) string { return v[name] })
	}
	return v
}

// glRuleWhen returns what the first matching rule says (on_success when it
// names nothing), or "" when no rule matches and the job is not added.
func glRuleWhen(t *testing.T, rules []glRule, vars map[string]string) string {
	t.Helper()
	for _, r := range rules {
		ok := true
		if r.If != "" {
			v, err := evalExpr(r.If, func(name string) (any, error) {
				if val, set := vars[name]; set {
					return val, nil
				}
				return nil, nil
			}, false)
			if err != nil {
				t.Fatalf("rule %q: %v", r.If, err)
			}
			ok = truthy(v)
		}
		if ok {
			if r.When == "" {
				return "on_success"
			}
			return r.When
		}
	}
	return ""
}

// glPipelineJobs returns the jobs of the event's pipeline with their `when`
// (nil when the workflow rules create no pipeline). For a merge or close it
// returns the stop job GitLab runs instead.
func glPipelineJobs(t *testing.T, p *glPipeline, e glEvent) map[string]string {
	t.Helper()
	vars := e.allVars(p)
	if e.stopOf != "" {
		deploy := p.byName[e.stopOf]
		if deploy == nil || deploy.Environment.OnStop == "" {
			t.Fatalf("job %s has no environment with on_stop", e.stopOf)
		}
		return map[string]string{deploy.Environment.OnStop: "stop"}
	}
	if when := glRuleWhen(t, p.workflowRules, vars); when == "" || when == "never" {
		return nil
	}
	jobs := map[string]string{}
	for _, name := range p.jobs {
		if when := glRuleWhen(t, p.byName[name].Rules, vars); when != "" && when != "never" {
			jobs[name] = when
		}
	}
	return jobs
}

func TestCITemplatesGitLabJobsPerEvent(t *testing.T) {
	t.Parallel()
	p := loadGitLab(t)
	for _, e := range glScenarios() {
		got := glPipelineJobs(t, p, e)
		want := map[string]string{}
		for _, x := range e.expect {
			want[x.job] = "on_success"
			if x.playedBy != "" {
				want[x.job] = "manual"
			}
			if e.stopOf != "" {
				want[x.job] = "stop"
			}
		}
		if e.vars["CI_PIPELINE_SOURCE"] == "merge_request_event" && e.stopOf == "" {
			// The stop job is in every merge request pipeline, waiting:
			// GitLab starts it when the merge request is merged or closed.
			want["preview-destroy"] = "manual"
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: jobs of the pipeline (-want +got):\n%s", e.name, diff)
		}
		for _, x := range e.expect {
			lines := glScriptLines(p, x.job)
			if len(lines) != 1 {
				t.Errorf("%s: job %s has %d sponson lines, want 1", e.name, x.job, len(lines))
				continue
			}
			checkSponsonLine(t, lines[0], x)
		}
	}

	// No pipeline for a push to another branch: its merge request pipeline
	// applies pr-<iid>, and a branch pipeline would apply branch-<name> too.
	other := glEvent{name: "push to feat/x", vars: map[string]string{
		"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "feat/x", "CI_COMMIT_REF_NAME": "feat/x",
	}}
	if got := glPipelineJobs(t, p, other); got != nil {
		t.Errorf("a push to feat/x starts a pipeline with %v", got)
	}
}

// TestCITemplatesGitLabEnvironments: each merge request's preview is an
// environment whose stop job destroys the scope, and production is a manual
// job whose player is the approver.
func TestCITemplatesGitLabEnvironments(t *testing.T) {
	t.Parallel()
	p := loadGitLab(t)
	preview, stop := p.byName["preview"], p.byName["preview-destroy"]
	if preview == nil || stop == nil {
		t.Fatalf("want jobs preview and preview-destroy, have %v", p.jobs)
	}
	if preview.Environment.OnStop != "preview-destroy" || stop.Environment.Action != "stop" ||
		stop.Environment.Name != preview.Environment.Name || !strings.Contains(preview.Environment.Name, "$CI_MERGE_REQUEST_IID") {
		t.Errorf("preview environment %+v, stop job environment %+v: want one environment per merge request, stopped by preview-destroy",
			preview.Environment, stop.Environment)
	}
	if !stop.AllowFailure {
		t.Errorf("preview-destroy must allow failure, or a failed stop blocks the merge request")
	}
	prod := p.byName["production"]
	if prod == nil {
		t.Fatal("no production job")
	}
	if prod.Environment.Name != "production" || prod.Environment.DeploymentTier != "production" {
		t.Errorf("production environment %+v", prod.Environment)
	}
	if diff := cmp.Diff([]string{"production-plan"}, prod.Needs); diff != "" {
		t.Errorf("production needs (-want +got):\n%s", diff)
	}
	if lines := glScriptLines(p, "production"); len(lines) != 1 || !strings.Contains(lines[0].line, `--approved-by "$GITLAB_USER_LOGIN"`) {
		t.Errorf("production lines %v: want --approved-by \"$GITLAB_USER_LOGIN\", the user who played the manual job", lines)
	}
	if p.variables["SPONSON_STORE"] != "git" {
		t.Errorf("variables %v: state in the project's git store", p.variables)
	}
	for _, name := range p.jobs {
		j := p.byName[name]
		if j.Image == "" || len(j.BeforeScript) == 0 {
			t.Errorf("job %s does not install sponson and tofu (extends .sponson)", name)
		}
	}
}

// glScriptLines returns the sponson lines of a job's script, each with the
// job's own variables (the file's and GitLab's come from the event).
func glScriptLines(p *glPipeline, job string) []ciLine {
	j := p.byName[job]
	var out []ciLine
	for _, s := range j.Script {
		for _, l := range sponsonLines(s) {
			env := map[string]string{}
			for k, v := range j.Variables {
				env[k] = v
			}
			out = append(out, ciLine{job: job, line: l, env: env})
		}
	}
	return out
}

// ---------------------------------------------------------------- expressions

// evalExpr evaluates the conditions of both CI hosts: GitHub's `if:`
// (contexts such as github.event.action, 'strings', case-insensitive ==) and
// GitLab's `rules: if:` ($VARIABLES, "strings", case-sensitive ==), with
// ==, !=, &&, ||, ! and parentheses. That is all the templates use; anything
// else is an error, so a template that grows past it fails here rather than
// being judged wrongly.
func evalExpr(src string, lookup func(string) (any, error), foldCase bool) (any, error) {
	toks, err := lexExpr(src)
	if err != nil {
		return nil, err
	}
	p := &exprParser{toks: toks, lookup: lookup, fold: foldCase}
	v, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.pos].text)
	}
	return v, nil
}

type exprTok struct {
	kind string // op, str, var, ident
	text string
}

func lexExpr(s string) ([]exprTok, error) {
	var toks []exprTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case strings.HasPrefix(s[i:], "==") || strings.HasPrefix(s[i:], "!=") ||
			strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "||"):
			toks = append(toks, exprTok{"op", s[i : i+2]})
			i += 2
		case c == '!' || c == '(' || c == ')':
			toks = append(toks, exprTok{"op", string(c)})
			i++
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated string in %q", s)
			}
			toks = append(toks, exprTok{"str", s[i+1 : i+1+j]})
			i += j + 2
		case c == '$':
			j := i + 1
			for j < len(s) && (isIdentByte(s[j]) && s[j] != '.' && s[j] != '-') {
				j++
			}
			toks = append(toks, exprTok{"var", s[i+1 : j]})
			i = j
		case isIdentByte(c):
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			toks = append(toks, exprTok{"ident", s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unsupported %q in %q", c, s)
		}
	}
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

type exprParser struct {
	toks   []exprTok
	pos    int
	lookup func(string) (any, error)
	fold   bool
}

func (p *exprParser) peek(text string) bool {
	return p.pos < len(p.toks) && p.toks[p.pos].kind == "op" && p.toks[p.pos].text == text
}

func (p *exprParser) or() (any, error) {
	v, err := p.and()
	for err == nil && p.peek("||") {
		p.pos++
		var r any
		if r, err = p.and(); truthy(v) {
			continue
		}
		v = r
	}
	return v, err
}

func (p *exprParser) and() (any, error) {
	v, err := p.unary()
	for err == nil && p.peek("&&") {
		p.pos++
		var r any
		if r, err = p.unary(); !truthy(v) {
			continue
		}
		v = r
	}
	return v, err
}

func (p *exprParser) unary() (any, error) {
	if p.peek("!") {
		p.pos++
		v, err := p.unary()
		return !truthy(v), err
	}
	return p.compare()
}

func (p *exprParser) compare() (any, error) {
	l, err := p.primary()
	if err != nil {
		return nil, err
	}
	if p.peek("==") || p.peek("!=") {
		op := p.toks[p.pos].text
		p.pos++
		r, err := p.primary()
		if err != nil {
			return nil, err
		}
		eq := p.equal(l, r)
		return eq == (op == "=="), nil
	}
	return l, nil
}

func (p *exprParser) equal(l, r any) bool {
	if l == nil || r == nil {
		return l == nil && r == nil
	}
	ls, rs := fmt.Sprint(l), fmt.Sprint(r)
	if p.fold {
		return strings.EqualFold(ls, rs)
	}
	return ls == rs
}

func (p *exprParser) primary() (any, error) {
	if p.pos >= len(p.toks) {
		return nil, fmt.Errorf("expression ends too early")
	}
	t := p.toks[p.pos]
	p.pos++
	switch t.kind {
	case "str":
		return t.text, nil
	case "var":
		return p.lookup(t.text)
	case "ident":
		switch t.text {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		}
		return p.lookup(t.text)
	}
	if t.text == "(" {
		v, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peek(")") {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		return v, nil
	}
	return nil, fmt.Errorf("unexpected %q", t.text)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int:
		return x != 0
	case float64:
		return x != 0
	}
	return true
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func TestCITemplatesExpressions(t *testing.T) {
	t.Parallel()
	gh := ghLookup(map[string]any{"github": map[string]any{"event_name": "pull_request", "event": map[string]any{"action": "closed"}}})
	gl := func(name string) (any, error) {
		return map[string]any{"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main"}[name], nil
	}
	for _, tc := range []struct {
		expr   string
		lookup func(string) (any, error)
		fold   bool
		want   bool
	}{
		{"github.event_name == 'pull_request' && github.event.action != 'closed'", gh, true, false},
		{"github.event_name == 'pull_request' && github.event.action == 'closed'", gh, true, true},
		{"github.event_name == 'PULL_REQUEST'", gh, true, true},
		{"github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'", gh, true, false},
		{"!(github.event.action == 'closed')", gh, true, false},
		{"github.event.missing == null", gh, true, true},
		{`$CI_PIPELINE_SOURCE == "push" && $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH`, gl, false, true},
		{`$CI_PIPELINE_SOURCE == "PUSH"`, gl, false, false},
		{`$CI_MERGE_REQUEST_IID`, gl, false, false},
		{`$CI_COMMIT_BRANCH`, gl, false, true},
	} {
		v, err := evalExpr(tc.expr, tc.lookup, tc.fold)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if truthy(v) != tc.want {
			t.Errorf("%s = %v, want %v", tc.expr, v, tc.want)
		}
	}
	if _, err := evalExpr("contains(github.event.labels, 'x')", gh, true); err == nil {
		t.Error("a function call is beyond the evaluator and must be an error")
	}
}

// TestCITemplatesScopeRules checks the templates against the rules of
// context detection and the older-commit check (README "Which scope each CI
// event gets"): the default branch decides main, applying jobs fetch the
// history the commit check needs, no apply is cancelled half-way, and tag
// pipelines run nothing.
func TestCITemplatesScopeRules(t *testing.T) {
	t.Parallel()
	w := loadGitHub(t)
	trunk := ghOnMain("push", map[string]any{"ref": "refs/heads/main"})
	trunk.payload["repository"] = map[string]any{"full_name": "acme/app", "default_branch": "trunk"}
	if jobs := ghRunningJobs(t, w, trunk); len(jobs) != 0 {
		t.Errorf("a push to main where the default branch is trunk runs %v; main is an ordinary branch there", jobs)
	}
	for _, name := range w.Jobs.names {
		j := w.Jobs.byKey[name]
		lines := ghStepLines(w, name)
		if len(lines) == 0 {
			continue
		}
		words := strings.Fields(lines[0].line)
		if words[1] != "apply" {
			continue
		}
		var checkout *ghStep
		for i := range j.Steps {
			if strings.HasPrefix(j.Steps[i].Uses, "actions/checkout@") {
				checkout = &j.Steps[i]
			}
		}
		if checkout == nil || checkout.With["fetch-depth"] != "0" {
			t.Errorf("job %s applies without the whole history (fetch-depth: 0): the older-commit check could not decide", name)
		}
	}

	p := loadGitLab(t)
	if p.variables["GIT_DEPTH"] != "0" {
		t.Errorf("GIT_DEPTH = %q, want \"0\": the older-commit check needs the history", p.variables["GIT_DEPTH"])
	}
	for _, name := range p.jobs {
		if p.byName[name].Interruptible {
			t.Errorf("job %s is interruptible: auto-cancel would stop an apply half-way", name)
		}
	}
	tag := glEvent{name: "tag", vars: map[string]string{
		"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_TAG": "v1.2.3", "CI_COMMIT_REF_NAME": "v1.2.3", "CI_COMMIT_SHA": strings.Repeat("a", 40),
	}}
	if jobs := glPipelineJobs(t, p, tag); len(jobs) != 0 {
		t.Errorf("a tag pipeline runs %v: a tag gives no scope", jobs)
	}
}
