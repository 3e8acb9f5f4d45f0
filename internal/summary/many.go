package summary

import (
	"fmt"
	"strings"
)

// Many is the one review of a run of many stacks (plan, apply or destroy
// with --all or --changed; docs/design.md §4.7): a diagram of the stacks in
// the run with what each will change, a table, and each stack's own summary,
// the stacks with changes or failures first.
type Many struct {
	Command     string
	Environment string
	Scope       string
	// Selection is "--all", or "--changed since BASE".
	Selection string
	Stacks    []ManyStack
}

// ManyStack is one stack of a run of many.
type ManyStack struct {
	Directory string
	Stack     string
	// Needs are the directories of the stacks of the run it depends on.
	Needs []string
	// Status is succeeded, failed or skipped; Because says why a stack was
	// skipped.
	Status, Because string
	// Outcome is the stack's own closing words ("1 to add, 0 to change,
	// 0 to destroy", "no changes", an error code).
	Outcome string
	// Changes is whether the stack's plan changes anything.
	Changes bool
	// Markdown is the stack's own summary; "" when it did not run.
	Markdown string
}

// ManyMarker is the hidden line of the sticky comment of the runs of many
// stacks of one pull request and environment: one comment for all of them
// (one for plans, one for each other command, as CommandMarker), beside
// the comments of single-stack runs, which are left alone.
func ManyMarker(command, environment string) string {
	return CommandMarker(command, "*", environment)
}

// Markdown renders the review within o.Limit: the head, diagram and table
// always, then each stack's section as long as it fits, a notice for the
// rest.
func (m Many) Markdown(o Options) string {
	var head strings.Builder
	if o.Marker {
		head.WriteString(ManyMarker(m.Command, m.Environment) + "\n")
	}
	fmt.Fprintf(&head, "### sponson %s %s · %s · %s: %d stacks\n\n", m.Command, m.Selection, m.Environment, m.Scope, len(m.Stacks))
	head.WriteString(m.diagram())
	head.WriteString("\n| stack | status | outcome |\n| --- | --- | --- |\n")
	order := m.reviewOrder()
	for _, s := range order {
		outcome := s.Outcome
		if s.Status == "skipped" {
			outcome = s.Because
		}
		fmt.Fprintf(&head, "| %s | %s | %s |\n", cell(s.Directory), s.Status, text(outcome))
	}
	out := head.String()
	at := o.FullPlanAt
	if at == "" {
		at = "the job's log"
	}
	var cut []string
	for _, s := range order {
		if s.Markdown == "" {
			continue
		}
		open := ""
		if s.Changes || s.Status == "failed" {
			open = " open"
		}
		section := fmt.Sprintf("\n<details%s><summary><code>%s</code>: %s</summary>\n\n%s\n\n</details>\n",
			open, htmlEscape(s.Directory), text(s.Outcome), strings.TrimSpace(s.Markdown))
		// Room is kept for the notice naming the stacks cut.
		if o.Limit > 0 && len(out)+len(section)+noticeRoom(order, at) > o.Limit {
			cut = append(cut, s.Directory)
			continue
		}
		out += section
	}
	if len(cut) > 0 {
		out += fmt.Sprintf("\n_The summaries of %s did not fit; they are in %s._\n", strings.Join(cut, ", "), at)
	}
	return out
}

// noticeRoom is the most the notice of cut sections can take.
func noticeRoom(stacks []ManyStack, at string) int {
	n := 80 + len(at)
	for _, s := range stacks {
		n += len(s.Directory) + 2
	}
	return n
}

// reviewOrder is the stacks with changes or failures first, then the rest,
// each group in the run's order.
func (m Many) reviewOrder() []ManyStack {
	var first, rest []ManyStack
	for _, s := range m.Stacks {
		if s.Changes || s.Status == "failed" {
			first = append(first, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(first, rest...)
}

// diagram is a Mermaid flowchart of the stacks, an arrow from each to the
// stacks that depend on it, each node coloured by what it does: GitHub and
// GitLab render it.
func (m Many) diagram() string {
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart LR\n")
	id := map[string]string{}
	for i, s := range m.Stacks {
		id[s.Directory] = fmt.Sprintf("s%d", i)
	}
	for i, s := range m.Stacks {
		fmt.Fprintf(&b, "  s%d[\"%s<br/>%s\"]\n", i, mermaidText(s.Directory), mermaidText(nodeText(s)))
	}
	for _, s := range m.Stacks {
		for _, n := range s.Needs {
			if from, ok := id[n]; ok {
				fmt.Fprintf(&b, "  %s --> %s\n", from, id[s.Directory])
			}
		}
	}
	b.WriteString("  classDef changes fill:#fff3cd,stroke:#b58900\n  classDef failed fill:#f8d7da,stroke:#dc322f\n  classDef skipped fill:#eeeeee,stroke:#999999,stroke-dasharray: 4 2\n")
	for i, s := range m.Stacks {
		switch {
		case s.Status == "failed":
			fmt.Fprintf(&b, "  class s%d failed\n", i)
		case s.Status == "skipped":
			fmt.Fprintf(&b, "  class s%d skipped\n", i)
		case s.Changes:
			fmt.Fprintf(&b, "  class s%d changes\n", i)
		}
	}
	b.WriteString("```\n")
	return b.String()
}

func nodeText(s ManyStack) string {
	if s.Status == "skipped" {
		return "skipped"
	}
	return s.Outcome
}

// mermaidText escapes what would end a quoted Mermaid label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "\n", " ").Replace(s)
}
