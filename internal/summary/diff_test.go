package summary_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

func TestNaturalLess(t *testing.T) {
	t.Parallel()
	got := []string{
		`r[10]`, `r[2]`, `r[1]`, `module.m[10].x`, `module.m[9].x`, `r["b10"]`, `r["b9"]`, `r["a"]`, `r[02]`, `a.b`, `r`,
	}
	sort.SliceStable(got, func(i, j int) bool { return summary.NaturalLess(got[i], got[j]) })
	want := []string{`a.b`, `module.m[9].x`, `module.m[10].x`, `r`, `r["a"]`, `r["b9"]`, `r["b10"]`, `r[1]`, `r[02]`, `r[2]`, `r[10]`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("natural order (-want +got):\n%s", diff)
	}
	for _, p := range [][2]string{{"r[2]", "r[2]"}, {"r[02]", "r[2]"}} {
		if summary.NaturalLess(p[0], p[1]) && summary.NaturalLess(p[1], p[0]) {
			t.Errorf("%q and %q are each less than the other", p[0], p[1])
		}
	}
}

// reviewPlan is a plan of several resources: count instances past 9, string
// keys, a replacement forced by an attribute, one created before it is
// destroyed, a delete, an update and a data source (left out).
func reviewPlan(t *testing.T) *tfjson.Plan {
	t.Helper()
	raw := `{"format_version":"1.2","resource_changes":[
	 {"address":"random_pet.r[10]","mode":"managed","type":"random_pet","name":"r","index":10,"change":{"actions":["create"]}},
	 {"address":"random_pet.r[2]","mode":"managed","type":"random_pet","name":"r","index":2,"change":{"actions":["create"]}},
	 {"address":"terraform_data.db","mode":"managed","type":"terraform_data","name":"db","change":{"actions":["delete","create"],"replace_paths":[["input"],["triggers_replace",0,"key"]]}},
	 {"address":"terraform_data.lb","mode":"managed","type":"terraform_data","name":"lb","change":{"actions":["create","delete"]}},
	 {"address":"terraform_data.app[\"b\"]","mode":"managed","type":"terraform_data","name":"app","index":"b","change":{"actions":["update"]}},
	 {"address":"terraform_data.app[\"a\"]","mode":"managed","type":"terraform_data","name":"app","index":"a","change":{"actions":["update"]}},
	 {"address":"terraform_data.old","mode":"managed","type":"terraform_data","name":"old","change":{"actions":["delete"]}},
	 {"address":"terraform_data.same","mode":"managed","type":"terraform_data","name":"same","change":{"actions":["no-op"]}},
	 {"address":"data.terraform_remote_state.x","mode":"data","type":"terraform_remote_state","name":"x","change":{"actions":["read"]}}
	]}`
	var p tfjson.Plan
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// TestReviewGolden: the comment of a plan of several resources with a
// replacement and a refusal, as a reviewer reads it: the verdict first, the
// stack and environment in the heading, the link to the job, the plan as a
// diff in natural order.
func TestReviewGolden(t *testing.T) {
	t.Parallel()
	r := summary.Run{
		Command: "plan", Status: "failed", Stack: "github.com/acme/infra//network", Environment: "preview", Scope: "pr-42",
		Commit: "0123456789abcdef0123456789abcdef01234567", RunID: "run-7aba4410", Engine: "opentofu 1.12.6",
		JobURL:   "https://github.com/acme/infra/actions/runs/4242",
		Changes:  summary.ChangesFromPlan(reviewPlan(t)),
		Refusals: []summary.Refusal{{Address: `terraform_data.app["b"]`, Owner: "pr-41", OwnerRun: "run-11112222"}},
		Failure:  &summary.Failure{Code: "OWNED_BY_OTHER_SCOPE", Message: "1 planned change(s) touch resources another scope owns; nothing was written", Hint: "Apply these changes from the owning scope (pr-41)."},
	}
	if got, want := r.Verdict(), "2 to add · 2 to change · 2 to replace · 1 to destroy · refused: 1 · nothing written (OWNED_BY_OTHER_SCOPE)"; got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
	md := r.Markdown(summary.Options{Marker: true})
	golden(t, "plan-review", md)
	checkWellFormed(t, md)
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	cs := []summary.Change{{Address: "a", Action: summary.Create}, {Address: "b", Action: summary.Create}, {Address: "c", Action: summary.Replace}}
	for _, tc := range []struct {
		name string
		r    summary.Run
		want string
	}{
		{"plan", summary.Run{Command: "plan", Status: "changes", Changes: cs}, "2 to add · 1 to replace"},
		{"refused", summary.Run{Command: "plan", Changes: cs, Refusals: []summary.Refusal{{Address: "c"}}}, "2 to add · 1 to replace · refused: 1"},
		{"nothing", summary.Run{Command: "plan", Status: "unchanged"}, "no changes"},
		{"applied", summary.Run{Command: "apply", Status: "applied", Changes: cs}, "2 added · 1 replaced"},
		{"applied nothing", summary.Run{Command: "apply", Status: "unchanged"}, "unchanged, no changes"},
		{"failed", summary.Run{Command: "apply", Status: "failed", Changes: cs, Failure: &summary.Failure{Code: "ENGINE_FAILED"}}, "2 to add · 1 to replace · failed (ENGINE_FAILED)"},
		{"destroyed", summary.Run{Command: "destroy", Status: "destroyed", Changes: []summary.Change{{Address: "a", Action: summary.Delete}}}, "1 destroyed"},
	} {
		if got := tc.r.Verdict(); got != tc.want {
			t.Errorf("%s: verdict %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestOutputsGolden: an apply shows the scope's outputs, sensitive ones
// hidden, and the preview's address as a link.
func TestOutputsGolden(t *testing.T) {
	t.Parallel()
	r := summary.Run{
		Command: "apply", Status: "applied", Stack: "github.com/acme/infra", Environment: "preview", Scope: "pr-42", RunID: "run-1",
		Changes:    []summary.Change{{Address: "terraform_data.web", Action: summary.Create}},
		Outputs:    []summary.Output{{Name: "db_password", Sensitive: true}, {Name: "ports", Value: `[80,443]`}, {Name: "url", Value: "https://pr-42.preview.example"}},
		PreviewURL: "https://pr-42.preview.example",
	}
	md := r.Markdown(summary.Options{Marker: true})
	golden(t, "apply-outputs", md)
	checkWellFormed(t, md)
}

// TestProvisionalChangeMarked: a change whose values derive from another
// stack's output known only after its apply says so on its own line of the
// diff, and only that change (issue 49 item 2: at the value, not only in a
// note above).
func TestProvisionalChangeMarked(t *testing.T) {
	t.Parallel()
	r := summary.Run{
		Command: "plan", Status: "changes", Stack: "acme//stacks/app", Environment: "preview", Scope: "pr-7",
		Changes: []summary.Change{
			{Address: "terraform_data.app", Action: summary.Update, Provisional: true},
			{Address: "terraform_data.docs", Action: summary.Create},
		},
		Provisional: []summary.ProvisionalRead{{Stack: "acme//stacks/network", Outputs: []string{"vpc_id"}}},
	}
	md := r.Markdown(summary.Options{})
	var app, docs string
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.Contains(l, "terraform_data.app"):
			app = l
		case strings.Contains(l, "terraform_data.docs"):
			docs = l
		}
	}
	if !strings.Contains(app, "update in-place; provisional: derives from another stack's output known only after its apply") {
		t.Errorf("the provisional change's line: %q\n%s", app, md)
	}
	if docs == "" || strings.Contains(docs, "provisional") {
		t.Errorf("the other change's line: %q", docs)
	}
}
