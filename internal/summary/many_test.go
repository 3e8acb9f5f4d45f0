package summary_test

import (
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

func manyRun() summary.Many {
	return summary.Many{Command: "plan", Environment: "preview", Scope: "pr-7", Selection: "--all", Stacks: []summary.ManyStack{
		{Directory: "stacks/docs", Status: "succeeded", Outcome: "no changes", Markdown: "### docs own"},
		{Directory: "stacks/network", Status: "succeeded", Outcome: "1 to add, 0 to change, 0 to destroy", Changes: true, Markdown: "### network own"},
		{Directory: "stacks/app", Needs: []string{"stacks/network"}, Status: "failed", Outcome: "ENGINE_FAILED: x | y", Markdown: "### app own"},
		{Directory: "stacks/web", Needs: []string{"stacks/app"}, Status: "skipped", Because: "it waits for stacks/app, which failed"},
	}}
}

// One review: its marker, a diagram with an arrow per dependency and each
// stack's class, a table, and the stacks' own summaries with changes and
// failures first.
func TestManyMarkdown(t *testing.T) {
	t.Parallel()
	md := manyRun().Markdown(summary.Options{Marker: true})
	for _, want := range []string{
		summary.ManyMarker("plan", "preview") + "\n### sponson plan --all · preview · pr-7: 4 stacks",
		"```mermaid\nflowchart LR\n",
		`s1["stacks/network<br/>1 to add, 0 to change, 0 to destroy"]`,
		"  s1 --> s2\n  s2 --> s3\n",
		"class s1 changes", "class s2 failed", "class s3 skipped",
		"| `stacks/app` | failed | ENGINE\\_FAILED: x \\| y |",
		"| `stacks/web` | skipped | it waits for stacks/app, which failed |",
		"<details open><summary><code>stacks/network</code>",
		"<details><summary><code>stacks/docs</code>: no changes</summary>\n\n### docs own\n\n</details>",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the review lacks %q:\n%s", want, md)
		}
	}
	if n, a, d := strings.Index(md, "### network own"), strings.Index(md, "### app own"), strings.Index(md, "### docs own"); n > a || a > d {
		t.Errorf("sections not in the order network, app, docs:\n%s", md)
	}
	if summary.ManyMarker("plan", "preview") == summary.Marker("stacks/app", "preview") {
		t.Error("the review's marker is a stack's")
	}
}

// Within a limit the sections that do not fit are named, never cut inside.
func TestManyMarkdownLimit(t *testing.T) {
	t.Parallel()
	m := manyRun()
	m.Stacks[0].Markdown = strings.Repeat("docs line\n", 300)
	full := m.Markdown(summary.Options{})
	md := m.Markdown(summary.Options{Limit: len(full) - 100, FullPlanAt: "the job"})
	if len(md) > len(full)-100 {
		t.Fatalf("%d bytes, over the limit %d", len(md), len(full)-100)
	}
	if !strings.Contains(md, "_The summaries of stacks/docs did not fit; they are in the job._") || strings.Contains(md, "docs line") {
		t.Errorf("docs' section is not cut whole and named:\n%s", md)
	}
	if !strings.Contains(md, "### app own") {
		t.Errorf("a section that fits was cut:\n%s", md)
	}
}
