package summary

import (
	"fmt"
	"strings"
)

// Drift statuses of one scope.
const (
	InSync  = "in-sync"
	Drifted = "drifted"
	Failed  = "failed"
)

// DriftScope is what a drift check found in one scope.
type DriftScope struct {
	Scope   string   `json:"scope"`
	Status  string   `json:"status"`
	RunID   string   `json:"runId,omitempty"`
	Changes []Change `json:"changes"`
	Failure *Failure `json:"error,omitempty"`
	// PlanText is the engine's text of the refresh-only plan, redacted.
	PlanText string `json:"-"`
}

// Drift is the summary of one `sponson drift`.
type Drift struct {
	Stack       string
	Environment string
	Engine      string
	Scopes      []DriftScope
}

// Counts returns how many scopes are in sync, drifted and failed.
func (d Drift) Counts() (inSync, drifted, failed int) {
	for _, s := range d.Scopes {
		switch s.Status {
		case InSync:
			inSync++
		case Drifted:
			drifted++
		default:
			failed++
		}
	}
	return
}

var driftTitle = map[Action]string{
	Update: "Changed outside the engine", Delete: "Deleted outside the engine", Replace: "Replaced outside the engine",
	Create: "Appeared outside the engine", Forget: "Forgotten", Import: "Imported", Move: "Moved",
}

// Markdown renders the drift summary: one table row per scope, then what
// drifted in each drifted scope, and the engine's text collapsed.
func (d Drift) Markdown(o Options) string {
	in, dr, fa := d.Counts()
	icon := "✅"
	switch {
	case fa > 0:
		icon = "❌"
	case dr > 0:
		icon = "⚠️"
	}
	var head strings.Builder
	if o.Marker {
		head.WriteString(Marker(d.Stack, d.Environment) + "\n")
	}
	fmt.Fprintf(&head, "### %s sponson drift · %s: %d in sync, %d drifted, %d failed\n\n", icon, d.Environment, in, dr, fa)
	fmt.Fprintf(&head, "| stack | environment | engine |\n| --- | --- | --- |\n| %s | %s | %s |\n", cell(d.Stack), cell(d.Environment), text(d.Engine))

	var body []string
	if len(d.Scopes) == 0 {
		body = append(body, "\nNo scope of this environment has a state to check.\n")
	} else {
		body = append(body, "\n| scope | status | what |\n| --- | --- | --- |\n")
		for _, s := range d.Scopes {
			what := "—"
			switch s.Status {
			case Drifted:
				what = text(driftWords(s.Changes))
			case Failed:
				if s.Failure != nil {
					what = inline(s.Failure.Code) + " " + text(firstLine(s.Failure.Message))
				}
			}
			body = append(body, fmt.Sprintf("| %s | %s | %s |\n", cell(s.Scope), text(s.Status), what))
		}
	}
	for _, s := range d.Scopes {
		if s.Status != Drifted {
			continue
		}
		body = append(body, fmt.Sprintf("\n#### %s drifted\n", inline(s.Scope)))
		body = append(body, changeLines(s.Changes, driftTitle)...)
	}
	plans := func(budget int, where string) string {
		var b strings.Builder
		for _, s := range d.Scopes {
			if s.Status != Drifted || s.PlanText == "" {
				continue
			}
			room := budget
			if budget >= 0 {
				room = budget - b.Len()
				if room < minPlanBudget {
					break
				}
			}
			b.WriteString(collapsed("Refresh-only plan of "+s.Scope+" ("+nonEmpty(d.Engine, "engine")+")", s.PlanText, room, where))
		}
		return b.String()
	}
	return fit(head.String(), body, plans, o)
}

// driftWords says in a few words what drifted: "2 changed, 1 deleted".
func driftWords(cs []Change) string {
	n := map[Action]int{}
	for _, c := range cs {
		n[c.Action]++
	}
	var parts []string
	for _, a := range []struct {
		act  Action
		word string
	}{{Update, "changed"}, {Delete, "deleted"}, {Replace, "replaced"}, {Create, "appeared"}} {
		if n[a.act] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[a.act], a.word))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d changes", len(cs))
	}
	return strings.Join(parts, ", ") + " outside the engine"
}

func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
