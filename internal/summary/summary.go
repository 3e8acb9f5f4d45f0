// Package summary renders the Markdown summary of one run (plan, apply,
// destroy) or of a drift check, for people: CI step summaries, a file, and
// the sticky comment on a pull request or merge request (package comment).
// It shows no attribute value of its own: the structure comes from the plan
// JSON (addresses and actions only), and the engine's own text, which the
// engine already redacts ("(sensitive value)"), goes into a collapsed block
// with what the engine missed redacted too (Redact; docs/design.md §4.3):
// a provider-computed copy of a sensitive input carries no mark in the state
// and the engine prints it (OpenTofu 1.12.6, terraform_data), so every
// string under a sensitive mark of the plan JSON is redacted from the text.
// A host's size limit is met by cutting at a line, never inside a table or
// the collapsed block. The output that url_output names becomes a GitHub
// deployment of ENV/SCOPE (internal/github) and GitLab's dotenv SPONSON_URL.
package summary

import (
	"fmt"
	"sort"
	"strings"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
)

// Action is what a run does to one resource address, as people read it.
type Action string

// The actions, in the order a summary lists them: what cannot be undone
// first (replacements and deletes), then the rest.
const (
	Replace Action = "replace"
	Delete  Action = "delete"
	Create  Action = "create"
	Update  Action = "update"
	Forget  Action = "forget"
	Import  Action = "import"
	Move    Action = "move"
)

var actionOrder = []Action{Replace, Delete, Create, Update, Forget, Import, Move}

// Change is one planned action on one address.
type Change struct {
	Address string `json:"address"`
	Action  Action `json:"action"`
	// From is the previous address of a moved resource.
	From string `json:"from,omitempty"`
	// CreateFirst is set for a replacement that creates the new object
	// before it destroys the old one (create_before_destroy): the engine's
	// "+/-" rather than "-/+".
	CreateFirst bool `json:"-"`
	// ReplacedBy names the attributes whose change forces a replacement
	// (the plan's replace_paths), as attribute paths: names, never values.
	ReplacedBy []string `json:"-"`
	// Provisional is set when the change's values derive from another
	// stack's output known only after that stack's apply
	// (stackoutputs.ProvisionalObjects): the review says so on its line.
	Provisional bool `json:"-"`
}

// Refusal is a planned change Sponson refused before the engine wrote.
type Refusal struct {
	Address string `json:"address"`
	// Owner and OwnerRun name the scope (and its run) that owns the object.
	Owner    string `json:"owner,omitempty"`
	OwnerRun string `json:"ownerRun,omitempty"`
	// Why says it in words when there is no owner (an approval, a stale
	// saved plan).
	Why string `json:"why,omitempty"`
}

// LeaseWait is one wait for the scope's lease.
type LeaseWait struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// ProvisionalRead is what a plan read of another stack's outputs before
// that stack's apply decided them.
type ProvisionalRead struct {
	Stack   string   `json:"stack"`
	Outputs []string `json:"outputs"`
}

// Failure is how the run ended when it did not succeed.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// Run is everything a run's summary shows.
type Run struct {
	Command     string // plan, apply, destroy
	Stack       string
	Environment string
	Scope       string
	Commit      string
	RunID       string
	Engine      string // "opentofu 1.12.6"
	// Status is the run's status (changes, unchanged, applied, failed, ...).
	Status  string
	Changes []Change
	// Refusals are the planned changes that were refused.
	Refusals []Refusal
	// ApprovalNeeded is set when the run (or the apply of this plan) needs
	// a named approver; ApprovedBy names the one it had.
	ApprovalNeeded bool
	ApprovedBy     string
	// InheritedFrom names the predecessor scope whose resources this run
	// inherits (succession); Inherited lists their addresses.
	InheritedFrom string
	Inherited     []string
	LeaseWaits    []LeaseWait
	Warnings      []string
	Failure       *Failure
	// Provisional are the other stacks' outputs this plan read that are
	// known only after their apply, in a plan of many stacks: the plan used
	// their current values, so what it shows from them may change.
	Provisional []ProvisionalRead
	// PlanText is the engine's own rendering of the plan (show of the saved
	// plan), sensitive values redacted by the engine.
	PlanText string
	// SavedPlan names the saved plan file a later apply will apply;
	// AppliesPlan the saved plan this run applies.
	SavedPlan   string
	AppliesPlan string
	// JobURL is the CI job of the run (runctx.DetectJob), linked from the
	// summary's second line.
	JobURL string
	// Outputs are the scope's root module outputs after an apply, by name;
	// PreviewURL the one the configuration names as the preview's address.
	Outputs    []Output
	PreviewURL string
	// RuleChanges are how the change's own rules (sponson.hcl, policies)
	// differ from the trusted ones the run used, which RulesFrom names:
	// proposed, effective when merged (docs/design.md §2.18).
	RulesFrom   string
	RuleChanges []string
	// Policies is the verdict of the environment's trusted policies on
	// the plan, nil when it declares none; ProposedPolicies the verdict of
	// the change's own policies where they differ, for the review alone
	// (docs/design.md §2.19 Policies).
	Policies         *PolicyVerdict
	ProposedPolicies *PolicyVerdict
}

// PolicyVerdict is what policies say of a plan, one line per message:
// "message (rule, file)".
type PolicyVerdict struct {
	Deny []string `json:"deny,omitempty"`
	Warn []string `json:"warn,omitempty"`
}

// ChangesFromPlan lists the managed-resource changes of a plan. No-ops are
// left out unless the resource moves or is imported.
func ChangesFromPlan(p *tfjson.Plan) []Change {
	if p == nil {
		return nil
	}
	return changesOf(p.ResourceChanges)
}

// DriftFromPlan lists what changed outside the engine, as a refresh-only
// plan reports it (resource_drift).
func DriftFromPlan(p *tfjson.Plan) []Change {
	if p == nil {
		return nil
	}
	return changesOf(p.ResourceDrift)
}

func changesOf(rcs []*tfjson.ResourceChange) []Change {
	var out []Change
	for _, rc := range rcs {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode {
			continue
		}
		a := rc.Change.Actions
		c := Change{Address: rc.Address}
		switch {
		case a.Replace():
			c.Action = Replace
		case a.Delete():
			c.Action = Delete
		case a.Create():
			c.Action = Create
		case a.Update():
			c.Action = Update
		case a.Forget():
			c.Action = Forget
		case rc.Change.Importing != nil:
			c.Action = Import
		case rc.PreviousAddress != "" && rc.PreviousAddress != rc.Address:
			c.Action = Move
		default:
			continue
		}
		if rc.PreviousAddress != rc.Address {
			c.From = rc.PreviousAddress
		}
		if c.Action == Replace {
			c.CreateFirst = len(a) == 2 && a[0] == tfjson.ActionCreate
			c.ReplacedBy = replacePaths(rc.Change.ReplacePaths)
		}
		out = append(out, c)
	}
	return out
}

// replacePaths renders the plan's replace_paths (each a list of attribute
// names and element keys) as attribute paths: name.sub[0]["key"].
func replacePaths(paths []any) []string {
	var out []string
	for _, p := range paths {
		steps, ok := p.([]any)
		if !ok || len(steps) == 0 {
			continue
		}
		var b strings.Builder
		for i, st := range steps {
			switch v := st.(type) {
			case string:
				if i == 0 {
					b.WriteString(v)
				} else {
					fmt.Fprintf(&b, "[%q]", v)
				}
			case float64:
				fmt.Fprintf(&b, "[%d]", int64(v))
			default:
				fmt.Fprintf(&b, "[%v]", v)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// Counts are the engine's three numbers.
type Counts struct{ Add, Change, Destroy int }

func (c Counts) String() string {
	return fmt.Sprintf("%d to add, %d to change, %d to destroy", c.Add, c.Change, c.Destroy)
}

// Count counts changes as the engine does (a replacement adds and destroys).
func Count(cs []Change) Counts {
	var n Counts
	for _, c := range cs {
		switch c.Action {
		case Replace:
			n.Add++
			n.Destroy++
		case Create:
			n.Add++
		case Update:
			n.Change++
		case Delete:
			n.Destroy++
		}
	}
	return n
}

// group returns the changes by action, each group in the natural order of
// their addresses (NaturalLess).
func group(cs []Change) map[Action][]Change {
	g := map[Action][]Change{}
	for _, c := range cs {
		g[c.Action] = append(g[c.Action], c)
	}
	for _, l := range g {
		sort.SliceStable(l, func(i, j int) bool { return NaturalLess(l[i].Address, l[j].Address) })
	}
	return g
}

// NaturalLess orders addresses as people count: a run of digits compares
// by its number, so r[2] comes before r[10] and module.m["a9"] before
// module.m["a10"]; everything else compares byte by byte. Numbers that are
// equal but spelled with different leading zeros fall back to the bytes, so
// the order stays total.
func NaturalLess(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			continue
		}
		if ca != cb {
			return ca < cb
		}
		i++
		j++
	}
	if len(a)-i != len(b)-j {
		return len(a)-i < len(b)-j
	}
	return a < b
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Marker is the hidden line that identifies the sticky comment of one pull
// request, stack and environment for a plan: the comment is found by it and
// updated in place. "--" may not appear inside an HTML comment, so it is
// spelled out.
func Marker(stack, environment string) string {
	return CommandMarker("plan", stack, environment)
}

// CommandMarker is Marker for the runs of command: a plan's comment has
// the marker earlier versions gave every run (so an upgrade keeps updating
// it); an apply or destroy has its own comment, so that one sticky comment
// does not alternate between the plan a reviewer reads and the apply that
// followed it.
func CommandMarker(command, stack, environment string) string {
	clean := func(s string) string {
		s = strings.ReplaceAll(s, "-", "%2D")
		s = strings.ReplaceAll(s, ">", "%3E")
		return strings.ReplaceAll(s, "\n", " ")
	}
	if command == "" || command == "plan" {
		return fmt.Sprintf("<!-- sponson-summary stack=%s environment=%s -->", clean(stack), clean(environment))
	}
	return fmt.Sprintf("<!-- sponson-summary stack=%s environment=%s command=%s -->", clean(stack), clean(environment), clean(command))
}
