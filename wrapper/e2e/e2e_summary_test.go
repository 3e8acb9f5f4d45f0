package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/comment/commenttest"
)

// TestE2ESummaryAndComment: plan and apply of a pull request with the real
// engine write the step summary, the --summary file and the GitLab report,
// and keep one sticky comment for the plans on the pull request (a local
// stand-in of the GitHub API), updated in place, and one for the applies,
// so that the plan a reviewer reads does not alternate with the apply's
// summary; no sensitive value appears anywhere. A
// missing token, a 403 and a 5xx are warnings: the run still succeeds.
func TestE2ESummaryAndComment(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	srv := commenttest.New("gh-token")
	defer srv.Close()
	dir := h.workdir("testdata/sensitive")
	out := t.TempDir()
	step := filepath.Join(out, "step-summary.md")
	gh := []string{
		"GITHUB_ACTIONS=true", "GITHUB_REPOSITORY=acme/infra", "GITHUB_TOKEN=gh-token", "GITHUB_API_URL=" + srv.URL, rulesFromCheckout,
		"GITHUB_SERVER_URL=https://github.example", "GITHUB_RUN_ID=77", "GITHUB_STEP_SUMMARY=" + step,
		"GITHUB_REF_NAME=7/merge", "GITHUB_HEAD_REF=feat-x", "GITHUB_EVENT_NAME=pull_request",
	}
	secrets := []string{"first-SECRET-pw", "second-SECRET-pw"}
	plan := h.mustRunEnv(dir, gh, "plan", "--pr", "7", "--comment", "--summary", filepath.Join(out, "plan.md"), "--gitlab-report", filepath.Join(out, "report.json"), "-var", "password="+secrets[0])
	cs := srv.Comments("acme/infra#7")
	if len(cs) != 1 {
		t.Fatalf("%d comments after the plan, want 1; requests %v\n%s", len(cs), srv.Requests(), plan.stderr)
	}
	for _, want := range []string{"2 to add — sponson plan · ", " · preview/pr-7\n", "[The job's log](https://github.example/acme/infra/actions/runs/77)", "```diff\n+   terraform_data.app  # create\n+   terraform_data.db   # create\n```", "<details><summary>Plan output (" + testEngineName()} {
		if !strings.Contains(cs[0].Body, want) {
			t.Errorf("the plan comment lacks %q:\n%s", want, cs[0].Body)
		}
	}
	if got := string(readFile(t, filepath.Join(out, "report.json"))); got != `{"create":2,"update":0,"delete":0}`+"\n" {
		t.Errorf("GitLab report %s", got)
	}

	h.mustRunEnv(dir, gh, "apply", "--pr", "7", "--comment", "-var", "password="+secrets[0])
	// The second password changes db; the engine's text then shows the
	// prior output, which the engine does not redact.
	h.mustRunEnv(dir, gh, "plan", "--pr", "7", "--comment", "--summary", filepath.Join(out, "plan2.md"), "-var", "password="+secrets[1])
	cs = srv.Comments("acme/infra#7")
	if len(cs) != 2 {
		t.Fatalf("%d comments after plan, apply and plan, want the plan's updated in place and the apply's", len(cs))
	}
	planBody, applyBody := cs[0].Body, cs[1].Body
	if !strings.Contains(planBody, "~   terraform_data.db  # update in-place") || !strings.Contains(planBody, "(sensitive value)") {
		t.Errorf("the plan's comment, updated in place, does not show the second plan:\n%s", planBody)
	}
	if !strings.Contains(applyBody, "2 added — sponson apply · ") {
		t.Errorf("the apply's comment does not show the apply:\n%s", applyBody)
	}

	// Another environment of the same pull request gets its own comment.
	h.mustRunEnv(dir, gh, "plan", "--pr", "7", "--env", "production", "--comment", "-var", "password="+secrets[0])
	if n := len(srv.Comments("acme/infra#7")); n != 3 {
		t.Errorf("%d comments with a second environment, want 3", n)
	}

	texts := []string{string(readFile(t, step)), string(readFile(t, filepath.Join(out, "plan.md"))), string(readFile(t, filepath.Join(out, "plan2.md")))}
	for _, c := range srv.Comments("acme/infra#7") {
		texts = append(texts, c.Body)
	}
	for _, txt := range texts {
		for _, s := range secrets {
			if strings.Contains(txt, s) {
				t.Errorf("a summary holds the sensitive value %q", s)
			}
		}
	}
	if n := len(regexp.MustCompile(`(?m)^### `).FindAllString(texts[0], -1)); n != 4 {
		t.Errorf("the step summary holds %d summaries, want the 4 runs appended", n)
	}

	// The host failing, or no token: warnings, and the run's outcome holds.
	for _, tc := range []struct {
		name string
		fail int
		env  []string
		want string
	}{
		{"403", 403, gh, "403"},
		{"502", 502, gh, "502"},
		{"no token", 0, append(append([]string{}, gh...), "GITHUB_TOKEN="), "set GITHUB_TOKEN"},
	} {
		srv.Fail(tc.fail)
		r := h.run(dir, tc.env, "apply", "--pr", "7", "--comment", "--json", "-var", "password="+secrets[0])
		if r.exit != 0 {
			t.Errorf("%s: exit %d\n%s", tc.name, r.exit, r.stderr)
		}
		env := r.envelope(t)
		warns, _ := env["warnings"].([]any)
		found := false
		for _, w := range warns {
			found = found || strings.Contains(w.(string), tc.want)
		}
		if !found || env["ok"] != true {
			t.Errorf("%s: ok %v, warnings %v", tc.name, env["ok"], warns)
		}
	}
	srv.Fail(0)
	if _, err := os.Stat(filepath.Join(dir, "errored.tfstate")); err == nil {
		t.Errorf("errored.tfstate left behind")
	}
}

// TestE2ESummaryOfARefusal: a plan refused because it changes what another
// scope owns still writes its summary, naming the resource and its owner;
// a destroy writes one too.
func TestE2ESummaryOfARefusal(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", objectsVar("a", "shared"))
	md := filepath.Join(t.TempDir(), "refused.md")
	r := h.run(dir, env, "plan", "--scope", "pr-2", "--summary", md, "-var", objectsVar("mine", "shared"))
	if r.exit != 1 {
		t.Fatalf("plan of main's object from pr-2: exit %d\n%s", r.exit, r.stderr)
	}
	got := string(readFile(t, md))
	for _, want := range []string{"refused: 1 · nothing written (OWNED_BY_OTHER_SCOPE) — sponson plan", "**Refused before the engine wrote anything:**", "| `fixture_object.o[\"mine\"]` | `main` | `run-"} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary of the refusal lacks %q:\n%s", want, got)
		}
	}
	dmd := filepath.Join(t.TempDir(), "destroy.md")
	h.mustRunEnv(dir, env, "destroy", "--scope", "main", "--summary", dmd, "-var", objectsVar("a", "shared"))
	if got := string(readFile(t, dmd)); !strings.Contains(got, "2 destroyed — sponson destroy · ") || !strings.Contains(got, "-   fixture_object.o[\"a\"]  # destroy") {
		t.Errorf("destroy summary:\n%s", got)
	}
}
