package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// workflowLine is one line of a CI workflow with sponson in place of
// terraform, as bash runs it in the configuration directory, and what it
// must give.
type workflowLine struct {
	workflow string // whose line it is
	line     string
	exit     int
	// stdout and stderr hold texts each stream must contain.
	stdout, stderr []string
	check          func(t *testing.T, dir string, r result)
}

// TestE2EWorkflowLines runs the lines of setup-terraform's, tfaction's and
// Atlantis' default workflows as those projects document them, the binary's
// name replaced, then every other engine command: each runs as the engine
// would or with its meaning under sponson, and each refusal names what to
// use instead.
func TestE2EWorkflowLines(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	vars := map[string]string{
		// What CI detection would decide in a pull request job.
		"SPONSON_CTX_SCOPE": "pr-7",
		"TF_VAR_objects":    `{a="W1"}`,
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	mirror := filepath.Join(filepath.Dir(vars["TF_CLI_CONFIG_FILE"]), "mirror")
	engineName := "OpenTofu"
	if !strings.Contains(filepath.Base(os.Getenv("SPONSON_TEST_ENGINE")), "tofu") {
		engineName = "Terraform"
	}
	planJSON := func(file string) func(t *testing.T, dir string, r result) {
		return func(t *testing.T, dir string, r result) {
			var p struct {
				FormatVersion   string `json:"format_version"`
				ResourceChanges []struct {
					Address string
					Change  struct{ Actions []string }
				} `json:"resource_changes"`
			}
			if err := json.Unmarshal(readFile(t, filepath.Join(dir, file)), &p); err != nil {
				t.Fatalf("%s is not the engine's plan JSON: %v", file, err)
			}
			found := false
			for _, rc := range p.ResourceChanges {
				found = found || rc.Address == `fixture_object.o["a"]`
			}
			if p.FormatVersion == "" || !found {
				t.Errorf("%s: format %q, resource changes %+v; want fixture_object.o[\"a\"]", file, p.FormatVersion, p.ResourceChanges)
			}
		}
	}
	lines := []workflowLine{
		// setup-terraform's README workflow.
		{workflow: "setup-terraform", line: "sponson fmt -check"},
		{workflow: "setup-terraform", line: "sponson init", stdout: []string{"successfully initialized"}},
		{workflow: "setup-terraform", line: "sponson validate -no-color", stdout: []string{"Success! The configuration is valid."}},
		{workflow: "setup-terraform", line: "sponson plan -no-color", stdout: []string{"2 to add"}},
		// tfaction's setup, test, plan and apply steps.
		{workflow: "tfaction", line: "sponson init -input=false"},
		{workflow: "tfaction", line: "sponson providers lock -platform=linux_amd64 -fs-mirror=" + mirror, check: func(t *testing.T, dir string, _ result) {
			lock := string(readFile(t, filepath.Join(dir, ".terraform.lock.hcl")))
			if !strings.Contains(lock, "sponson/fixture") || strings.Contains(lock, "sponson/sponson") {
				t.Errorf("the lock file does not lock the fixture provider alone:\n%s", lock)
			}
		}},
		{workflow: "tfaction", line: "sponson validate"},
		{workflow: "tfaction", line: "sponson fmt -recursive"},
		{workflow: "tfaction", line: "sponson plan -no-color -detailed-exitcode -out tfplan.binary -input=false", exit: 2},
		{workflow: "tfaction", line: "sponson show -json tfplan.binary > tfplan.json", check: planJSON("tfplan.json")},
		{workflow: "tfaction", line: "sponson show tfplan.binary", stdout: []string{`fixture_object.o["a"] will be created`}},
		{workflow: "tfaction", line: "sponson apply -auto-approve -no-color -input=false tfplan.binary", check: func(t *testing.T, _ string, _ result) {
			if _, err := os.Stat(filepath.Join(objects, "objects", "W1.json")); err != nil {
				t.Errorf("the apply of the saved plan did not create W1: %v", err)
			}
		}},
		// Atlantis' default workflow (plan, policy_check, apply).
		{workflow: "atlantis", line: "sponson init -input=false"},
		{workflow: "atlantis", line: `PLANFILE=atlantis.tfplan; TF_VAR_objects='{a="W1",b="W2"}' sponson plan -input=false -refresh -out $PLANFILE`},
		{workflow: "atlantis", line: "sponson show -json atlantis.tfplan > atlantis.json", check: planJSON("atlantis.json")},
		{workflow: "atlantis", line: `TF_VAR_objects='{a="W1",b="W2"}' sponson apply -input=false atlantis.tfplan`, check: func(t *testing.T, _ string, _ result) {
			if _, err := os.Stat(filepath.Join(objects, "objects", "W2.json")); err != nil {
				t.Errorf("Atlantis' apply did not create W2: %v", err)
			}
		}},
		// The other engine commands.
		{workflow: "engine", line: "sponson -version", stdout: []string{"sponson ", engineName + " v"}},
		{workflow: "engine", line: "sponson version -json", stdout: []string{`"terraform_version"`}},
		{workflow: "engine", line: "sponson state pull", stdout: []string{`"fixture_object"`, `"lineage"`}},
		{workflow: "engine", line: "sponson show -json", stdout: []string{`"values"`, `fixture_object.o[\"b\"]`}},
		{workflow: "engine", line: "sponson show -no-color", stdout: []string{`# fixture_object.o["a"]:`}},
		{workflow: "engine", line: "sponson output -json"},
		{workflow: "engine", line: "sponson graph", stdout: []string{"digraph", "fixture_object.o"}},
		{workflow: "engine", line: "sponson get"},
		{workflow: "engine", line: "sponson providers schema -json", stdout: []string{"sponson/sponson", `"sponson_scope"`}},
		{workflow: "engine", line: "sponson metadata functions -json", stdout: []string{`"function_signatures"`}},
		{workflow: "engine", line: "sponson test", stdout: []string{"0 passed, 0 failed"}},
		{workflow: "engine", line: "sponson workspace select -or-create pr-7", exit: 2, stderr: []string{"A scope replaces a workspace", "--scope"}},
		{workflow: "engine", line: "sponson workspace show", exit: 2, stderr: []string{"--pr"}},
		{workflow: "engine", line: "sponson console", exit: 2, stderr: []string{"state pull"}},
		{workflow: "engine", line: "sponson state push terraform.tfstate", exit: 2, stderr: []string{"terraform.tfstate", "state pull"}},
		{workflow: "engine", line: "sponson state pull > pulled.tfstate && sponson state push pulled.tfstate", stdout: []string{"sponson state push", "receipt run-"}},
		{workflow: "engine", line: "sponson refresh", exit: 2, stderr: []string{"-refresh-only"}},
		{workflow: "engine", line: "sponson force-unlock run-x", exit: 2, stderr: []string{"--reason"}},
		{workflow: "engine", line: "sponson force-unlock -force run-x --scope pr-7 --reason stuck", stderr: []string{"not held"}},
		// fmt on a file that is not formatted: -check fails naming it, fmt
		// formats it.
		{workflow: "engine", line: `printf 'locals {\n     x = 1\n}\n' > extra.tf && sponson fmt -check -diff`, exit: 1,
			stdout: []string{"extra.tf", "-     x = 1", "+  x = 1"}, stderr: []string{"FMT_UNFORMATTED"}},
		{workflow: "engine", line: "sponson fmt", stdout: []string{"extra.tf"}},
		{workflow: "engine", line: "sponson fmt -check -recursive"},
	}
	for _, l := range lines {
		r := h.ciRun(dir, l.line, vars)
		if r.exit != l.exit {
			t.Errorf("%s: %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", l.workflow, l.line, r.exit, l.exit, r.stdout, r.stderr)
			continue
		}
		for _, want := range l.stdout {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s: %q: stdout lacks %q:\n%s\nstderr:\n%s", l.workflow, l.line, want, r.stdout, r.stderr)
			}
		}
		for _, want := range l.stderr {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: %q: stderr lacks %q:\n%s", l.workflow, l.line, want, r.stderr)
			}
		}
		if l.check != nil {
			l.check(t, dir, r)
		}
	}
}

// TestE2EValidateAnnotations: in a GitHub Actions job the engine's
// diagnostics of validate are also annotations with the file (relative to
// the checkout) and line the engine gives, and sponson's error one more.
func TestE2EValidateAnnotations(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	checkout := t.TempDir()
	infra := filepath.Join(checkout, "infra")
	if err := os.Mkdir(infra, 0o755); err != nil {
		t.Fatal(err)
	}
	config := "terraform {\n  required_providers {\n    sponson = { source = \"sponson/sponson\" }\n  }\n}\n\nresource \"terraform_data\" \"x\" {\n  input = var.missing\n}\n"
	if err := os.WriteFile(filepath.Join(infra, "main.tf"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": checkout, "SPONSON_CHDIR": "infra"}
	if r := h.ciRun(checkout, "sponson init -input=false", vars); r.exit != 0 {
		t.Fatalf("init: exit %d\n%s", r.exit, r.stderr)
	}
	r := h.ciRun(checkout, "sponson validate -no-color", vars)
	if r.exit != 1 {
		t.Fatalf("validate of an invalid configuration: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"::error file=infra/main.tf,line=8,col=",
		"title=Reference to undeclared input variable::",
		"::error title=sponson validate%3A ENGINE_FAILED::",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "Error: Reference to undeclared input variable") || !strings.Contains(r.stdout, "on main.tf line 8") {
		t.Errorf("validate does not print the diagnostic:\n%s", r.stdout)
	}
}

// TestE2EGitLabSections: in a GitLab CI job the engine's init, plan and
// apply are collapsible sections of the log, each opened and closed.
func TestE2EGitLabSections(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/outputs")
	r := h.mustRunEnv(dir, []string{"GITLAB_CI=true", rulesFromCheckout}, "apply", "--scope", "pr-1")
	for _, name := range []string{"sponson_init", "sponson_plan", "sponson_apply"} {
		start := regexp.MustCompile(`\x1b\[0Ksection_start:\d+:` + name + `\[collapsed=true\]\r\x1b\[0K`)
		end := regexp.MustCompile(`\x1b\[0Ksection_end:\d+:` + name + `\r\x1b\[0K`)
		s, e := start.FindStringIndex(r.stdout), end.FindStringIndex(r.stdout)
		if s == nil || e == nil || e[0] < s[1] {
			t.Errorf("section %s not opened and closed in the log:\n%q", name, r.stdout)
		}
	}
	if r := h.mustRun(dir, "apply", "--scope", "pr-2"); strings.Contains(r.stdout, "section_start") {
		t.Errorf("sections outside GitLab CI:\n%s", r.stdout)
	}
}
