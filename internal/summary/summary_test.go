package summary_test

import (
	"bytes"
	"encoding/json"
	"flag"
	stdhtml "html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The secrets of testdata/plan.json: the plan of OpenTofu 1.12.6 for a
// configuration with a sensitive variable, changed from hunter2-SECRET to
// swordfish-SECRET2. The engine's own text (testdata/plan.txt) prints the
// first in terraform_data.db's prior output, which no mark covers.
var secrets = []string{"hunter2-SECRET", "swordfish-SECRET2"}

func loadPlan(t *testing.T) (*tfjson.Plan, string) {
	t.Helper()
	b, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var p tfjson.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	txt, err := os.ReadFile("testdata/plan.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(txt), secrets[0]) {
		t.Fatalf("testdata/plan.txt no longer shows the leak Redact exists for")
	}
	return &p, string(txt)
}

func runs(t *testing.T) map[string]summary.Run {
	p, txt := loadPlan(t)
	base := summary.Run{
		Stack: "github.com/acme/infra//preview", Environment: "preview", Scope: "pr-42",
		Commit: "0123456789abcdef0123456789abcdef01234567", RunID: "run-7aba4410", Engine: "opentofu 1.12.6",
	}
	with := func(f func(*summary.Run)) summary.Run { r := base; f(&r); return r }
	wait := time.Date(2026, 12, 1, 10, 2, 3, 0, time.UTC)
	return map[string]summary.Run{
		"plan": with(func(r *summary.Run) {
			r.Command, r.Status = "plan", "changes"
			r.Changes = summary.ChangesFromPlan(p)
			r.PlanText = summary.Redact(txt, p)
			r.SavedPlan = "pr-42.tfplan"
			r.ApprovalNeeded = true
		}),
		"plan-nochanges": with(func(r *summary.Run) {
			r.Command, r.Status = "plan", "unchanged"
			r.PlanText = "No changes. Your infrastructure matches the configuration.\n"
		}),
		"apply-inherited": with(func(r *summary.Run) {
			r.Command, r.Status = "apply", "applied"
			r.Environment = "production"
			r.ApprovalNeeded, r.ApprovedBy = true, "alice"
			r.InheritedFrom = "branch-feat-search"
			r.Inherited = []string{"terraform_data.db", "terraform_data.app"}
			r.LeaseWaits = []summary.LeaseWait{{Holder: "run-3c1f0a2b", Until: wait}}
			r.Changes = []summary.Change{
				{Address: "terraform_data.app", Action: summary.Update},
				{Address: "terraform_data.db", Action: summary.Replace},
				{Address: "terraform_data.cache", Action: summary.Create},
				{Address: "terraform_data.web", Action: summary.Move, From: "terraform_data.www"},
				{Address: "terraform_data.old", Action: summary.Delete},
			}
			r.Warnings = []string{"inherited 2 resources from branch-feat-search"}
			r.AppliesPlan = "production.tfplan (made by run-1f2e3d4c at 2026-12-01 10:00:00 UTC)"
			r.PlanText = summary.Redact(txt, p)
		}),
		"apply-refused": with(func(r *summary.Run) {
			r.Command, r.Status = "apply", "failed"
			r.Changes = []summary.Change{{Address: `terraform_data.shared["a|b"]`, Action: summary.Update}}
			r.Refusals = []summary.Refusal{{Address: `terraform_data.shared["a|b"]`, Owner: "pr-41", OwnerRun: "run-11112222"}}
			r.Failure = &summary.Failure{Code: "OWNED_BY_OTHER_SCOPE", Message: "1 planned change(s) touch resources another scope owns; nothing was written:\n  details", Hint: "Apply these changes from the owning scope (pr-41), or read the resources with a data source instead of managing them here."}
		}),
		"destroy": with(func(r *summary.Run) {
			r.Command, r.Status = "destroy", "destroyed"
			r.Changes = []summary.Change{{Address: "terraform_data.app", Action: summary.Delete}, {Address: "terraform_data.db", Action: summary.Delete}}
		}),
	}
}

// TestGolden renders each kind of summary and compares it with its golden
// file (go test -run TestGolden -update rewrites them), then checks that
// the Markdown renders to well-formed HTML and holds no secret.
func TestGolden(t *testing.T) {
	t.Parallel()
	for name, r := range runs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := r.Markdown(summary.Options{Marker: true})
			golden(t, name, got)
			checkWellFormed(t, got)
			noSecrets(t, got)
		})
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".md")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func noSecrets(t *testing.T, md string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(md, s) {
			t.Errorf("the summary holds the sensitive value %q", s)
		}
	}
}

var (
	tableRe  = regexp.MustCompile(`(?s)<table>.*?</table>`)
	rowRe    = regexp.MustCompile(`(?s)<tr>.*?</tr>`)
	cellRe   = regexp.MustCompile(`<t[hd][ >]`)
	detailRe = regexp.MustCompile(`(?s)<details><summary>[^<]*</summary>\s*<pre><code class="language-text">.*?</code></pre>.*?</details>`)
)

// checkWellFormed renders md as GitHub does (GitHub Flavored Markdown, raw
// HTML kept) and checks that every table row has as many cells as its
// header, that each collapsed block holds a code block and is closed, and
// that nothing of the summary escaped into raw HTML.
func checkWellFormed(t *testing.T, md string) string {
	t.Helper()
	var buf bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	if err := gm.Convert([]byte(md), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	wantTables := strings.Count(md, "\n| --- |")
	tables := tableRe.FindAllString(out, -1)
	if len(tables) != wantTables {
		t.Errorf("%d tables rendered, want %d:\n%s", len(tables), wantTables, out)
	}
	for _, tb := range tables {
		rows := rowRe.FindAllString(tb, -1)
		if len(rows) < 2 {
			t.Errorf("table without body rows: %s", tb)
		}
		n := len(cellRe.FindAllString(rows[0], -1))
		for _, r := range rows[1:] {
			if got := len(cellRe.FindAllString(r, -1)); got != n {
				t.Errorf("row has %d cells, header %d: %s", got, n, r)
			}
		}
	}
	opens := strings.Count(out, "<details>")
	if opens != strings.Count(out, "</details>") {
		t.Errorf("unbalanced <details> in:\n%s", out)
	}
	if got := len(detailRe.FindAllString(out, -1)); got != opens {
		t.Errorf("%d of %d collapsed blocks hold a code block:\n%s", got, opens, out)
	}
	if strings.Count(md, "<details>") != opens {
		t.Errorf("<details> in the Markdown did not all render as HTML")
	}
	// Only the marker, the collapsed blocks and the code inside them are
	// HTML of our own: any other tag means text escaped into HTML.
	stripped := detailRe.ReplaceAllString(out, "")
	for _, bad := range []string{"<script", "<img", "<b>"} {
		if strings.Contains(stripped, bad) {
			t.Errorf("raw HTML %s in the rendered summary", bad)
		}
	}
	return out
}

// TestHostileText: addresses, messages and warnings that hold Markdown or
// HTML of their own cannot break the document's structure.
func TestHostileText(t *testing.T) {
	t.Parallel()
	r := summary.Run{
		Command: "apply", Environment: "preview", Scope: "pr-1", RunID: "run-1", Status: "failed",
		Stack:    "a|b`c",
		Changes:  []summary.Change{{Address: "x.y[\"`|<script>\"]", Action: summary.Create}},
		Refusals: []summary.Refusal{{Address: "x.y[\"|\"]", Owner: "pr-2", Why: "<script>alert(1)</script> | *b*"}},
		Failure:  &summary.Failure{Code: "OWNED_BY_OTHER_SCOPE", Message: "<img src=x> **bold**"},
		Warnings: []string{"<b>loud</b>"},
		PlanText: "```\n</details>\n<script>\n",
	}
	md := r.Markdown(summary.Options{Marker: true})
	out := checkWellFormed(t, md)
	plain := stdhtml.UnescapeString(out)
	for _, a := range []string{r.Refusals[0].Address, r.Stack} {
		if !strings.Contains(plain, "<code>"+a+"</code>") {
			t.Errorf("%q is not rendered whole in one code span:\n%s", a, out)
		}
	}
	// The planned change is a line of the diff block, whole.
	if !regexp.MustCompile(`(?s)<pre><code class="language-diff">\+ +` + regexp.QuoteMeta(r.Changes[0].Address) + `  # create\n`).MatchString(plain) {
		t.Errorf("%q is not a line of the diff block:\n%s", r.Changes[0].Address, out)
	}
}

// TestCut: past the host's limit the summary is cut at a line, stays
// well-formed and says where the full plan is.
func TestCut(t *testing.T) {
	t.Parallel()
	p, txt := loadPlan(t)
	var big strings.Builder
	for big.Len() < 1_200_000 {
		big.WriteString(summary.Redact(txt, p))
	}
	r := summary.Run{
		Command: "plan", Environment: "preview", Scope: "pr-42", RunID: "run-1", Engine: "opentofu 1.12.6",
		Changes: summary.ChangesFromPlan(p), PlanText: big.String(),
	}
	where := "https://github.com/acme/infra/actions/runs/42"
	for _, limit := range []int{65_536, 1_000_000} {
		md := r.Markdown(summary.Options{Limit: limit, FullPlanAt: where, Marker: true})
		if len(md) > limit {
			t.Errorf("limit %d: summary of %d bytes", limit, len(md))
		}
		if !strings.Contains(md, "full plan is in "+where) {
			t.Errorf("limit %d: the cut summary does not say where the full plan is", limit)
		}
		if len(md) < limit-2000 {
			t.Errorf("limit %d: summary of %d bytes wastes the room", limit, len(md))
		}
		checkWellFormed(t, md)
		noSecrets(t, md)
	}
	small := r.Markdown(summary.Options{Limit: 3000, FullPlanAt: where, Marker: true})
	golden(t, "plan-cut", small)
	checkWellFormed(t, small)

	// So many changes that the diff block lists the first maxDiffLines and
	// says how many more there are; the whole still fits and is
	// well-formed.
	for i := range 5000 {
		r.Changes = append(r.Changes, summary.Change{Address: "terraform_data.n[" + strings.Repeat("9", i%7) + "]", Action: summary.Create})
	}
	md := r.Markdown(summary.Options{Limit: 65_536, FullPlanAt: where})
	if len(md) > 65_536 || !strings.Contains(md, where) || !strings.Contains(md, "  # … and 4704 more; every change is in the job's log\n```") {
		t.Errorf("a summary whose list is too long was not cut cleanly (%d bytes)", len(md))
	}
	checkWellFormed(t, md)
}

func TestRedact(t *testing.T) {
	t.Parallel()
	p, txt := loadPlan(t)
	got := summary.Redact(txt, p)
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("Redact left %q", s)
		}
	}
	if !strings.Contains(got, `password = "(sensitive value)"`) || !strings.Contains(got, "db-pr-42") {
		t.Errorf("Redact changed more than the secret:\n%s", got)
	}
}

func TestGitLabReport(t *testing.T) {
	t.Parallel()
	p, _ := loadPlan(t)
	cs := append(summary.ChangesFromPlan(p), summary.Change{Address: "a.b", Action: summary.Replace})
	got := string(summary.GitLabReport(cs))
	if want := `{"create":2,"update":2,"delete":2}` + "\n"; got != want {
		t.Errorf("GitLabReport = %s, want %s", got, want)
	}
}

func TestMarkerHasNoDoubleDash(t *testing.T) {
	t.Parallel()
	m := summary.Marker("a--b", "pre--view-->")
	inner := strings.TrimSuffix(strings.TrimPrefix(m, "<!--"), "-->")
	if strings.Contains(inner, "--") || strings.Contains(inner, ">") {
		t.Errorf("marker %q breaks the HTML comment", m)
	}
	if summary.Marker("a", "b") == summary.Marker("a", "c") || summary.Marker("a-b", "c") == summary.Marker("a", "b-c") {
		t.Errorf("markers of different stacks or environments collide")
	}
}

// TestDriftGolden: the drift summary of three scopes, one drifted and one
// that could not be checked.
func TestDriftGolden(t *testing.T) {
	t.Parallel()
	d := summary.Drift{Stack: "github.com/acme/infra", Environment: "preview", Engine: "opentofu 1.12.6", Scopes: []summary.DriftScope{
		{Scope: "main", Status: summary.InSync, Changes: []summary.Change{}},
		{Scope: "pr-1", Status: summary.Drifted, Changes: []summary.Change{{Address: "terraform_data.app", Action: summary.Update}, {Address: "terraform_data.db", Action: summary.Delete}},
			PlanText: "  # terraform_data.app has changed\n  ~ resource \"terraform_data\" \"app\" {\n      ~ input = \"a\" -> \"b\"\n    }\n"},
		{Scope: "pr-2", Status: summary.Failed, Changes: []summary.Change{}, Failure: &summary.Failure{Code: "ENGINE_FAILED", Message: "opentofu plan failed: exit status 1\nmore"}},
	}}
	md := d.Markdown(summary.Options{})
	golden(t, "drift", md)
	checkWellFormed(t, md)
	if in, dr, fa := d.Counts(); in != 1 || dr != 1 || fa != 1 {
		t.Errorf("counts %d %d %d", in, dr, fa)
	}
}

// TestRuleChanges: the rules a change proposes are listed as proposals,
// with the rules the run was judged by.
func TestRuleChanges(t *testing.T) {
	t.Parallel()
	r := summary.Run{
		Command: "plan", Environment: "preview", Scope: "pr-3", RunID: "run-1", Status: "changes",
		RulesFrom:   "the default branch (refs/remotes/origin/main)",
		RuleChanges: []string{"environment preview: identity of local_file [filename] → (none)"},
	}
	md := r.Markdown(summary.Options{})
	for _, want := range []string{"Rule changes, effective when merged", "refs/remotes/origin/main", `identity of local\_file \[filename\] → (none)`} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if md := (summary.Run{Command: "plan", Environment: "preview", Scope: "pr-3", RunID: "run-1"}).Markdown(summary.Options{}); strings.Contains(md, "Rule changes") {
		t.Errorf("a run without proposed rules shows a section for them:\n%s", md)
	}
}

// TestEngineErrorShown: a run the engine failed shows the engine's own
// error under the failure's first line, in a code block, cut after 30
// lines; other failures show only their first line.
func TestEngineErrorShown(t *testing.T) {
	t.Parallel()
	engineErr := "opentofu plan failed: exit status 1\n\nError: Reference to undeclared resource\n\n  on main.tf line 3, in resource \"local_file\" \"a\":\n   3:   content = null_resource.b.id\n"
	md := summary.Run{Command: "plan", Status: "failed", Failure: &summary.Failure{Code: "ENGINE_FAILED", Message: engineErr}}.Markdown(summary.Options{})
	if !strings.Contains(md, "```text\nError: Reference to undeclared resource\n\n  on main.tf line 3, in resource \"local_file\" \"a\":\n   3:   content = null_resource.b.id\n```") {
		t.Errorf("the engine's error is not shown:\n%s", md)
	}
	long := "opentofu apply failed: exit status 1\n" + strings.Repeat("Error: x\n", 40)
	md = summary.Run{Command: "apply", Status: "failed", Failure: &summary.Failure{Code: "ENGINE_FAILED", Message: long}}.Markdown(summary.Options{})
	if n := strings.Count(md, "Error: x"); n != 30 || !strings.Contains(md, "(10 more lines in the job's log)") {
		t.Errorf("%d lines of a 40-line error shown, want 30 and a note:\n%s", n, md)
	}
	md = summary.Run{Command: "plan", Status: "failed", Failure: &summary.Failure{Code: "LOCK_HELD", Message: "held\nby run-1"}}.Markdown(summary.Options{})
	if strings.Contains(md, "```text\nby run-1") {
		t.Errorf("a failure that is not the engine's shows its message as the engine's:\n%s", md)
	}
}

// TestCommandMarker: a plan's sticky comment keeps the marker every earlier
// version gave (an upgrade keeps updating the comment it posted); an apply
// and a destroy have one of their own, so the plan a reviewer reads is not
// replaced by the apply's summary and back again.
func TestCommandMarker(t *testing.T) {
	t.Parallel()
	plan := summary.CommandMarker("plan", "acme/app", "preview")
	if plan != "<!-- sponson-summary stack=acme/app environment=preview -->" || plan != summary.Marker("acme/app", "preview") {
		t.Errorf("plan's marker %q changed", plan)
	}
	apply := summary.CommandMarker("apply", "acme/app", "preview")
	if apply == plan || strings.HasPrefix(apply, strings.TrimSuffix(plan, " -->")+" -->") {
		t.Errorf("apply's marker %q is the plan's", apply)
	}
	md := summary.Run{Command: "apply", Stack: "acme/app", Environment: "preview", Status: "applied"}.Markdown(summary.Options{Marker: true})
	if !strings.HasPrefix(md, apply+"\n") {
		t.Errorf("an apply's summary does not start with its marker:\n%s", md)
	}
}

// TestProvisionalShown: a plan of many stacks that read another stack's
// outputs known only after that stack's apply says so in its summary, and
// so in its section of the composed review (issue 49).
func TestProvisionalShown(t *testing.T) {
	t.Parallel()
	md := summary.Run{Command: "plan", Status: "changes", Provisional: []summary.ProvisionalRead{{Stack: "github.com/acme/infra//stacks/network", Outputs: []string{"vpc_id", "cidr"}}}}.Markdown(summary.Options{})
	want := "> ⚠️ **Provisional:** `vpc_id`, `cidr` of `github.com/acme/infra//stacks/network` will be known only after that stack's apply."
	if !strings.Contains(md, want) {
		t.Errorf("the summary does not say what is provisional:\n%s", md)
	}
	if md := (summary.Run{Command: "plan", Status: "changes"}).Markdown(summary.Options{}); strings.Contains(md, "Provisional") {
		t.Errorf("a plan that read nothing provisional says so:\n%s", md)
	}
}
