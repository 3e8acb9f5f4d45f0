package e2e_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/comment/commenttest"
)

// TestE2EReviewComment: the comment of a real plan of several resources,
// with a replacement and a refusal, as a reviewer reads it (the verdict
// first, the stack and environment, the job's link, the plan as a diff in
// natural order); then an apply shows the scope's outputs (the secret
// hidden), records a GitHub deployment of preview/pr-7 with the preview's
// address on the local API stand-in, writes the GitLab dotenv report, and
// the destroy marks the deployment inactive. The preview's address is the
// output sponson_scope's url_output names; --preview-url-output names
// another for one run. SPONSON_REVIEW_OUT, when set, keeps the rendered
// comment.
func TestE2EReviewComment(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	srv := commenttest.New("gh-token")
	defer srv.Close()
	dir := h.workdir("testdata/review")
	gh := append(env,
		"GITHUB_ACTIONS=true", "GITHUB_REPOSITORY=acme/infra", "GITHUB_TOKEN=gh-token", "GITHUB_API_URL="+srv.URL, rulesFromCheckout,
		"GITHUB_SERVER_URL=https://github.example", "GITHUB_RUN_ID=77", "GITHUB_EVENT_NAME=pull_request",
		"GITHUB_REF_NAME=7/merge", "GITHUB_SHA=0123456789abcdef0123456789abcdef01234567", "GITHUB_HEAD_REF=feat-x",
	)
	// main owns "shared"; pr-7 owns r[0..1], db and its own object.
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", objectsVar("a", "shared"))
	first := h.mustRunEnv(dir, gh, "apply", "--pr", "7", "-var", "n=2", "-var", objectsVar("mine", "mine-7"))
	if !strings.Contains(first.stderr, "GitHub deployment 10") {
		t.Errorf("the first apply recorded no deployment:\n%s", first.stderr)
	}
	cs := srv.Comments("acme/infra#7")
	if len(cs) != 0 {
		t.Fatalf("an apply without --comment commented: %v", cs)
	}

	// The plan under review: 10 more instances, db replaced (its
	// triggers_replace), and main's object, which is refused.
	r := h.run(dir, gh, "plan", "--pr", "7", "--comment", "-var", "n=12", "-var", "db_version=2", "-var", objectsVar("mine", "mine-7", "theirs", "shared"))
	if r.exit != 1 {
		t.Fatalf("the plan touching main's object: exit %d, want 1 (refused)\n%s", r.exit, r.stderr)
	}
	cs = srv.Comments("acme/infra#7")
	if len(cs) != 1 {
		t.Fatalf("%d comments, want 1\n%s", len(cs), r.stderr)
	}
	body := cs[0].Body
	if p := os.Getenv("SPONSON_REVIEW_OUT"); p != "" {
		_ = os.WriteFile(p, []byte(body), 0o644)
	}
	lines := strings.Split(body, "\n")
	if want := "### ❌ 11 to add · 1 to replace · refused: 1 · nothing written (OWNED_BY_OTHER_SCOPE) — sponson plan · `"; len(lines) < 2 || !strings.HasPrefix(lines[1], want) || !strings.HasSuffix(lines[1], "` · preview/pr-7") {
		t.Errorf("the comment's first line is not the verdict, the stack and the environment:\n%s", body)
	}
	if !strings.Contains(body, "[The job's log](https://github.example/acme/infra/actions/runs/77)") {
		t.Errorf("the comment has no link to the job:\n%s", body)
	}
	diff := between(t, body, "```diff\n", "\n```")
	var order []string
	for _, l := range strings.Split(diff, "\n") {
		addr, _, _ := strings.Cut(strings.TrimSpace(l[3:]), " ")
		order = append(order, l[:3]+" "+addr)
	}
	want := []string{"-/+ terraform_data.db"}
	want = append(want, `+   fixture_object.o["theirs"]`)
	for i := 2; i < 12; i++ {
		want = append(want, "+   terraform_data.r["+strconv.Itoa(i)+"]")
	}
	if strings.Join(order, "\n") != strings.Join(want, "\n") {
		t.Errorf("the diff's lines:\n%s\nwant:\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(diff, `# create; REFUSED: owned by scope main (run-`) || !strings.Contains(diff, "forced by triggers_replace") {
		t.Errorf("the diff does not say what is refused and what forces the replacement:\n%s", diff)
	}

	// The apply of an accepted plan: outputs, deployment, dotenv.
	dotenv := filepath.Join(t.TempDir(), "deploy.env")
	md := filepath.Join(t.TempDir(), "apply.md")
	h.mustRunEnv(dir, gh, "apply", "--pr", "7", "--summary", md, "--gitlab-dotenv", dotenv, "-var", "n=12", "-var", objectsVar("mine", "mine-7"))
	sum := string(readFile(t, md))
	for _, w := range []string{"**Preview:** [https://pr-7.preview.example](https://pr-7.preview.example)", "| `instances` | `12` |", "| `secret` | (sensitive value) |", "| `url` | `https://pr-7.preview.example` |"} {
		if !strings.Contains(sum, w) {
			t.Errorf("the apply's summary lacks %q:\n%s", w, sum)
		}
	}
	if strings.Contains(sum, "s3cret-") {
		t.Errorf("the apply's summary shows the sensitive output:\n%s", sum)
	}
	if got := string(readFile(t, dotenv)); got != "SPONSON_URL=https://pr-7.preview.example\n" {
		t.Errorf("dotenv report %q", got)
	}
	ds := srv.Deployments("acme/infra")
	// The first apply made one too (its url output was there): two
	// deployments of preview/pr-7, the first made inactive by the second.
	if len(ds) != 2 {
		t.Fatalf("%d deployments, want 2: %+v", len(ds), ds)
	}
	last := ds[1]
	if last.Environment != "preview/pr-7" || !last.Transient || last.Production || last.AutoMerge || len(last.Statuses) != 1 ||
		last.Statuses[0].State != "success" || last.Statuses[0].EnvironmentURL != "https://pr-7.preview.example" ||
		last.Statuses[0].LogURL != "https://github.example/acme/infra/actions/runs/77" {
		t.Errorf("deployment %+v", last)
	}
	if st := ds[0].Statuses; len(st) != 2 || st[1].State != "inactive" {
		t.Errorf("the earlier deployment's statuses %+v, want success then inactive", st)
	}

	// The flag names another output for one run: a sensitive one is
	// refused as the preview's address, and no deployment is made.
	other := h.mustRunEnv(dir, gh, "apply", "--pr", "7", "--preview-url-output", "secret", "-var", "n=12", "-var", objectsVar("mine", "mine-7"))
	if !strings.Contains(other.stderr, "--preview-url-output secret: the output is sensitive") {
		t.Errorf("--preview-url-output did not name the output for this run:\n%s", other.stderr)
	}
	if n := len(srv.Deployments("acme/infra")); n != 2 {
		t.Errorf("%d deployments after an apply without a preview address, want still 2", n)
	}

	h.mustRunEnv(dir, gh, "destroy", "--pr", "7", "-var", "n=12", "-var", objectsVar("mine", "mine-7"))
	for _, d := range srv.Deployments("acme/infra") {
		if st := d.Statuses; st[len(st)-1].State != "inactive" {
			t.Errorf("deployment %d is %s after the destroy, want inactive", d.ID, st[len(st)-1].State)
		}
	}
}

func between(t *testing.T, s, from, to string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		t.Fatalf("no %q in:\n%s", from, s)
	}
	in, _, ok := strings.Cut(rest, to)
	if !ok {
		t.Fatalf("no %q after %q in:\n%s", to, from, s)
	}
	return in
}
