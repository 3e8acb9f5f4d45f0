package summary

import (
	"fmt"
	"strings"
)

// maxDiffLines bounds the changes the diff block lists; past it the block
// says how many more there are and where the whole plan is (the job's log,
// the --json envelope's changes).
const maxDiffLines = 300

// maxAddressWidth is the widest address the block aligns on; longer ones
// push their own words to the right.
const maxAddressWidth = 60

// symbol is what the engine prints before a resource of each action in its
// plan ("Resource actions are indicated with the following symbols"); the
// actions that do not change an object get a blank, a diff's context line.
func symbol(c Change) string {
	switch c.Action {
	case Create:
		return "+"
	case Delete:
		return "-"
	case Update:
		return "~"
	case Replace:
		if c.CreateFirst {
			return "+/-"
		}
		return "-/+"
	}
	return ""
}

// words is what the engine says of each action, in the plan's own terms,
// and whether what it plans is provisional.
func words(c Change) string {
	w := actionWords(c)
	if c.Provisional {
		w += "; provisional: derives from another stack's output known only after its apply"
	}
	return w
}

func actionWords(c Change) string {
	switch c.Action {
	case Create:
		return "create"
	case Delete:
		return "destroy"
	case Update:
		return "update in-place"
	case Replace:
		w := "destroy and then create replacement"
		if c.CreateFirst {
			w = "create replacement and then destroy"
		}
		if len(c.ReplacedBy) > 0 {
			w += "; forced by " + strings.Join(c.ReplacedBy, ", ")
		}
		return w
	case Forget:
		return "forget: removed from the state, the object kept"
	case Import:
		return "import"
	case Move:
		return "move"
	}
	return string(c.Action)
}

// diffBlock is the plan as a diff: one line per planned change, with the
// engine's symbol first so that GitHub and GitLab colour it (+ green,
// - red), what cannot be undone first, each group in natural order. It is
// built from the plan JSON's addresses and actions, never from the engine's
// text, and holds no attribute value (docs/design.md §4.3). A refused change
// says so on its line, and so does a refusal of no planned change.
func diffBlock(cs []Change, refusals []Refusal) string {
	if len(cs) == 0 && len(refusals) == 0 {
		return ""
	}
	refused := map[string]string{}
	for _, x := range refusals {
		refused[x.Address] = refusalWords(x)
	}
	type line struct{ sym, addr, words string }
	var lines []line
	g := group(cs)
	for _, a := range actionOrder {
		for _, c := range g[a] {
			w := words(c)
			if c.From != "" {
				w += " from " + c.From
			}
			if why, ok := refused[c.Address]; ok {
				w += "; REFUSED: " + why
				delete(refused, c.Address)
			}
			lines = append(lines, line{symbol(c), c.Address, w})
		}
	}
	for _, x := range refusals {
		if why, ok := refused[x.Address]; ok {
			lines = append(lines, line{"!", nonEmpty(x.Address, "(the plan)"), "REFUSED: " + why})
			delete(refused, x.Address)
		}
	}
	width := 0
	for _, l := range lines {
		width = max(width, min(len(l.addr), maxAddressWidth))
	}
	var b strings.Builder
	shown := 0
	for _, l := range lines {
		if shown == maxDiffLines {
			fmt.Fprintf(&b, "  # … and %d more; every change is in the job's log\n", len(lines)-shown)
			break
		}
		fmt.Fprintf(&b, "%-3s %-*s  # %s\n", l.sym, width, l.addr, strings.ReplaceAll(l.words, "\n", " "))
		shown++
	}
	body := strings.TrimRight(b.String(), "\n")
	fence := fenceFor(body)
	return "\n" + fence + "diff\n" + body + "\n" + fence + "\n"
}

func refusalWords(x Refusal) string {
	switch {
	case x.Owner != "" && x.OwnerRun != "":
		return "owned by scope " + x.Owner + " (" + x.OwnerRun + ")"
	case x.Owner != "":
		return "owned by scope " + x.Owner
	case x.Why != "":
		return x.Why
	}
	return "refused"
}
