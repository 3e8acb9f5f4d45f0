package summary

import (
	"fmt"
	"strings"
)

// Options shape one rendering.
type Options struct {
	// Limit is the largest summary, in bytes, the destination takes (a
	// GitHub comment: 65,536 characters); 0 means no limit. Bytes are never
	// fewer than characters, so a byte limit is safe on every host.
	Limit int
	// FullPlanAt says where the whole plan can be read when the summary is
	// cut (the CI job's URL); "the job's log" when empty.
	FullPlanAt string
	// Marker starts the summary with the hidden marker of the sticky
	// comment (see Marker).
	Marker bool
}

// minPlanBudget is the least room worth giving the engine's text in a cut
// summary; with less, the collapsed block is left out and the cut notice says
// where the text is.
const minPlanBudget = 400

// Markdown renders the summary of a run.
func (r Run) Markdown(o Options) string {
	head := r.head(o)
	body := r.body()
	return fit(head, body, r.planBlock, o)
}

// fit assembles head, body lines and the plan block within o.Limit. What is
// cut is cut at a line (never inside a table row, a code span or the
// collapsed block, which are closed properly) and a notice says where the
// whole is.
func fit(head string, body []string, plan func(budget int, where string) string, o Options) string {
	full := head + strings.Join(body, "") + plan(-1, "")
	if o.Limit <= 0 || len(full) <= o.Limit {
		return full
	}
	where := o.FullPlanAt
	if where == "" {
		where = "the job's log"
	}
	notice := fmt.Sprintf("\n> [!NOTE]\n> This summary is cut at the host's limit of %s characters: the full plan is in %s.\n", thousands(o.Limit), where)
	budget := o.Limit - len(head) - len(notice)
	moreLines := func(n int) string { return fmt.Sprintf("\n_… %d more lines of this summary are cut._\n", n) }
	var b strings.Builder
	b.WriteString(head)
	used := 0
	for i, line := range body {
		last := i == len(body)-1
		if (last && used+len(line) > budget) || (!last && used+len(line)+len(moreLines(len(body))) > budget) {
			b.WriteString(moreLines(len(body) - i))
			used = budget
			break
		}
		b.WriteString(line)
		used += len(line)
	}
	if rest := budget - used; rest >= minPlanBudget {
		b.WriteString(plan(rest, where))
	}
	b.WriteString(notice)
	return b.String()
}

func (r Run) head(o Options) string {
	var b strings.Builder
	if o.Marker {
		b.WriteString(CommandMarker(r.Command, r.Stack, r.Environment) + "\n")
	}
	// The verdict first, then what it is about: several comments on one
	// pull request (a stack and environment each) are told apart by the
	// rest of the line.
	fmt.Fprintf(&b, "### %s %s — sponson %s · %s · %s\n\n", r.icon(), r.Verdict(), r.Command, inline(nonEmpty(r.Stack, "this stack")), text(r.Environment+"/"+r.Scope))
	if r.JobURL != "" {
		fmt.Fprintf(&b, "[The job's log](%s)\n\n", linkTarget(r.JobURL))
	}
	b.WriteString("| stack | environment | scope | commit | run | engine |\n| --- | --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(r.Stack), cell(r.Environment), cell(r.Scope), cell(short(r.Commit)), cell(r.RunID), text(r.Engine))
	return b.String()
}

// linkTarget makes a URL safe as a Markdown link target: spaces and
// parentheses would end it early.
func linkTarget(u string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E", "\n", "").Replace(u)
}

func (r Run) icon() string {
	switch {
	case r.Failure != nil:
		return "❌"
	case len(r.Changes) == 0:
		return "✅"
	default:
		return "📝"
	}
}

// Verdict is the run in one line, the first of its summary: what the plan
// will do or the run did, action by action ("2 to add · 1 to replace"),
// then what was refused ("refused: 1") or how it failed.
func (r Run) Verdict() string {
	done := r.Failure == nil && r.Command != "plan" && r.Status != "changes"
	var parts []string
	n := map[Action]int{}
	for _, c := range r.Changes {
		n[c.Action]++
	}
	for _, a := range verdictOrder {
		if n[a] == 0 {
			continue
		}
		w := verdictWords[a]
		if done {
			parts = append(parts, fmt.Sprintf("%d %s", n[a], w[1]))
		} else {
			parts = append(parts, fmt.Sprintf("%d to %s", n[a], w[0]))
		}
	}
	if len(parts) == 0 {
		switch {
		case r.Command == "plan" || r.Failure != nil:
			parts = append(parts, "no changes")
		default:
			parts = append(parts, r.Status+", no changes")
		}
	}
	if len(r.Refusals) > 0 {
		parts = append(parts, fmt.Sprintf("refused: %d", len(r.Refusals)))
	}
	if f := r.Failure; f != nil {
		word := "failed"
		if len(r.Refusals) > 0 {
			word = "nothing written"
		}
		parts = append(parts, word+" ("+f.Code+")")
	}
	return strings.Join(parts, " · ")
}

// verdictOrder is the order of the verdict: the engine's own (add, change,
// destroy), replacements beside the changes.
var verdictOrder = []Action{Create, Update, Replace, Delete, Forget, Import, Move}

// verdictWords are each action's words in a plan and after a run.
var verdictWords = map[Action][2]string{
	Create: {"add", "added"}, Update: {"change", "changed"}, Replace: {"replace", "replaced"},
	Delete: {"destroy", "destroyed"}, Forget: {"forget", "forgotten"}, Import: {"import", "imported"}, Move: {"move", "moved"},
}

// body is the summary below its header, one element per line (or per block
// that must not be split), so that a cut never leaves a table or list
// half-formed.
func (r Run) body() []string {
	out := append(r.failureLines(), r.provisionalLines()...)
	if len(r.Refusals) > 0 {
		out = append(out, "\n**Refused before the engine wrote anything:**\n\n| address | owned by | run | why |\n| --- | --- | --- | --- |\n")
		for _, x := range r.Refusals {
			out = append(out, fmt.Sprintf("| %s | %s | %s | %s |\n", cell(x.Address), cell(x.Owner), cell(x.OwnerRun), text(x.Why)))
		}
	}
	out = append(out, r.policyLines()...)
	if r.ApprovalNeeded {
		if r.ApprovedBy != "" {
			out = append(out, "\n**Approved by** "+inline(r.ApprovedBy)+" (this run writes production).\n")
		} else {
			out = append(out, "\n**Needs approval:** applying this writes production; the apply must name its approver (`--approved-by`).\n")
		}
	}
	if r.InheritedFrom != "" {
		out = append(out, fmt.Sprintf("\n**Inherits** %d resources from %s (succession); this plan includes them.\n", len(r.Inherited), inline(r.InheritedFrom)))
	}
	for _, w := range r.LeaseWaits {
		out = append(out, fmt.Sprintf("\n**Waited for the lease:** held by %s until %s.\n", inline(w.Holder), w.Until.UTC().Format("2006-01-02 15:04:05 UTC")))
	}
	if r.SavedPlan != "" {
		out = append(out, "\n**Saved plan:** "+inline(r.SavedPlan)+"; `sponson apply "+r.SavedPlan+"` applies exactly this plan, or refuses if it went stale.\n")
	}
	if r.AppliesPlan != "" {
		out = append(out, "\n**Applies the saved plan** "+text(r.AppliesPlan)+", as reviewed.\n")
	}
	if d := diffBlock(r.Changes, r.Refusals); d != "" {
		out = append(out, d)
	}
	out = append(out, r.outputLines()...)
	if len(r.RuleChanges) > 0 {
		out = append(out, "\n**Rule changes, effective when merged** (this run was judged by the rules of "+text(r.RulesFrom)+"; the change's own are not used)\n\n")
		for _, c := range r.RuleChanges {
			out = append(out, "- "+text(c)+"\n")
		}
	}
	if len(r.Warnings) > 0 {
		out = append(out, "\n**Warnings**\n\n")
		for _, w := range r.Warnings {
			out = append(out, "- "+text(firstLine(w))+"\n")
		}
	}
	return out
}

// changeLines lists changes grouped by action, replacements and deletes
// first.
func changeLines(cs []Change, titles map[Action]string) []string {
	var out []string
	g := group(cs)
	for _, a := range actionOrder {
		l := g[a]
		if len(l) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("\n#### %s (%d)\n\n", titles[a], len(l)))
		for _, c := range l {
			line := "- " + inline(c.Address)
			if c.From != "" {
				line += " (from " + inline(c.From) + ")"
			}
			out = append(out, line+"\n")
		}
	}
	return out
}

// planBlock renders the engine's text in a collapsed block. budget < 0
// means all of it; otherwise the text is cut at a line so that the block
// fits in budget bytes, and says so.
func (r Run) planBlock(budget int, where string) string {
	return collapsed("Plan output ("+r.engineName()+")", r.PlanText, budget, where)
}

func (r Run) engineName() string {
	if r.Engine == "" {
		return "engine"
	}
	return r.Engine
}

func collapsed(title, body string, budget int, where string) string {
	if strings.TrimSpace(body) == "" {
		return ""
	}
	body = strings.TrimRight(strings.TrimLeft(body, "\n"), "\n")
	fence := fenceFor(body)
	open := "\n<details><summary>" + htmlEscape(title) + "</summary>\n\n" + fence + "text\n"
	closing := "\n" + fence + "\n\n</details>\n"
	if budget < 0 || len(open)+len(body)+len(closing) <= budget {
		return open + body + closing
	}
	lines := strings.Split(body, "\n")
	tail := func(shown int) string {
		return fmt.Sprintf("\n%s\n\n_The plan output is cut after %d of %d lines; the full plan is in %s._\n\n</details>\n", fence, shown, len(lines), where)
	}
	room := budget - len(open) - len(tail(len(lines)))
	var b strings.Builder
	shown := 0
	for _, l := range lines {
		if b.Len()+len(l)+1 > room {
			break
		}
		if shown > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		shown++
	}
	return open + b.String() + tail(shown)
}

// fenceFor returns a code fence longer than any run of backticks in s, so
// the engine's text can never close the block early.
func fenceFor(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// inline renders s as a code span whatever it holds.
func inline(s string) string {
	if s == "" {
		return "—"
	}
	s = strings.ReplaceAll(s, "\n", " ")
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	ticks := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return ticks + s + ticks
}

// cell is inline for a table cell: a pipe must be escaped even inside a code
// span (GitHub Flavored Markdown splits cells before spans).
func cell(s string) string { return strings.ReplaceAll(inline(s), "|", `\|`) }

// text escapes free text for a line or a table cell: HTML and Markdown that
// would change the document's structure.
func text(s string) string {
	if s == "" {
		return "—"
	}
	s = htmlEscape(strings.ReplaceAll(s, "\n", " "))
	r := strings.NewReplacer(`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// failureLines say how the run failed: the code and the message's first
// line, the engine's own error when it failed, and the hint.
func (r Run) failureLines() []string {
	f := r.Failure
	if f == nil {
		return nil
	}
	out := []string{"\n**" + inline(f.Code) + "**: " + text(firstLine(f.Message)) + "\n"}
	if said := engineSaid(f.Message); said != "" && f.Code == "ENGINE_FAILED" {
		// The engine's own error (its diagnostics), so that a failed stack
		// of a composed review shows why without its log.
		fence := fenceFor(said)
		out = append(out, "\n"+fence+"text\n"+said+"\n"+fence+"\n")
	}
	if f.Hint != "" {
		out = append(out, "\n"+text(f.Hint)+"\n")
	}
	return out
}

// provisionalLines say which other stacks' outputs the plan read before
// their apply decided them (issue 49).
func (r Run) provisionalLines() []string {
	if len(r.Provisional) == 0 {
		return nil
	}
	var reads []string
	for _, p := range r.Provisional {
		names := make([]string, len(p.Outputs))
		for i, o := range p.Outputs {
			names[i] = inline(o)
		}
		reads = append(reads, strings.Join(names, ", ")+" of "+inline(p.Stack))
	}
	return []string{"\n> ⚠️ **Provisional:** " + strings.Join(reads, "; ") + " will be known only after that stack's apply. This plan used the current values; what it shows from them, and what derives from them, may change.\n"}
}

// engineSaidLines is how much of the engine's error a summary shows.
const engineSaidLines = 30

// engineSaid is what a failure's message holds after its first line: the
// engine's own error output, when the engine failed (engine.Session.wrap);
// empty lines around it trimmed, cut after engineSaidLines lines.
func engineSaid(message string) string {
	_, rest, ok := strings.Cut(strings.TrimSpace(message), "\n")
	rest = strings.Trim(rest, "\n ")
	if !ok || rest == "" {
		return ""
	}
	lines := strings.Split(rest, "\n")
	if len(lines) > engineSaidLines {
		lines = append(lines[:engineSaidLines], fmt.Sprintf("(%d more lines in the job's log)", len(lines)-engineSaidLines))
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// policyLines are the policies' verdicts: the trusted policies', which
// judged the run, and the change's proposed ones', which did not.
func (r Run) policyLines() []string {
	var out []string
	verdict := func(title string, v *PolicyVerdict) {
		switch {
		case len(v.Deny) > 0:
			out = append(out, fmt.Sprintf("\n**%s: denied** (%d)\n\n", title, len(v.Deny)))
		case len(v.Warn) > 0:
			out = append(out, fmt.Sprintf("\n**%s: passed with warnings** (%d)\n\n", title, len(v.Warn)))
		default:
			out = append(out, "\n**"+title+": passed**\n")
			return
		}
		for _, m := range v.Deny {
			out = append(out, "- deny: "+text(m)+"\n")
		}
		for _, m := range v.Warn {
			out = append(out, "- warn: "+text(m)+"\n")
		}
	}
	if r.Policies != nil {
		verdict("Policies", r.Policies)
	}
	if r.ProposedPolicies != nil {
		verdict("Proposed policies, effective when merged (they do not judge this run)", r.ProposedPolicies)
	}
	return out
}
