package settle_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/settle"
)

// kinds are the types the generated receipts hold: one of each way.
var kinds = []struct{ provider, typ string }{
	{"registry.terraform.io/sponson/fixture", "fixture_object"}, // import and read
	{builtin, "terraform_data"},                                 // state only, import with the plan's values
	{"registry.opentofu.org/hashicorp/null", "null_resource"},   // state only, written
	{"registry.opentofu.org/hashicorp/tls", "tls_private_key"},  // state only, nothing restores it
	{"registry.opentofu.org/hashicorp/local", "local_file"},     // written in place
}

// world is a generated stopped run: its receipt and the state the next
// run finds.
type world struct {
	prev    *receipt.Receipt
	present map[string]string
}

func genWorld(t *rapid.T) world {
	n := rapid.IntRange(1, 5).Draw(t, "n")
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("r.a%d", i)
	}
	prev := &receipt.Receipt{RunID: "run-1", HeldCompletions: rapid.Bool().Draw(t, "held")}
	present := map[string]string{}
	for i, a := range addrs {
		k := rapid.SampledFrom(kinds).Draw(t, "kind "+a)
		e := receipt.Entry{Address: a, Provider: k.provider, Type: k.typ, CreatedBy: receipt.CreatedByIntent,
			Provisioned: rapid.Bool().Draw(t, "provisioned "+a)}
		if rapid.IntRange(0, 4).Draw(t, "unresolved "+a) == 0 {
			e.CreatedBy = receipt.CreatedByUnresolved
			if rapid.Bool().Draw(t, "given "+a) {
				e.ID = "given-" + a
			}
		}
		if k.typ == "local_file" && rapid.Bool().Draw(t, "place known "+a) {
			e.Planned = map[string]string{"filename": "/o/" + a}
		}
		if k.typ == "terraform_data" || k.typ == "null_resource" {
			r := settle.Of(k.provider, k.typ, true)
			e.Restore = map[string]json.RawMessage{}
			for _, arg := range r.Args {
				if rapid.Bool().Draw(t, "recorded "+a+" "+arg) {
					e.Restore[arg] = json.RawMessage(`"v"`)
				}
			}
		}
		for _, w := range addrs[:i] {
			if rapid.Bool().Draw(t, "waits "+a+" "+w) {
				e.After = append(e.After, w)
			}
		}
		replaces := rapid.Bool().Draw(t, "replaces "+a)
		if replaces {
			prev.Ledger = append(prev.Ledger, receipt.Entry{Address: a, Provider: k.provider, Type: k.typ, ID: "old-" + a, CreatedBy: receipt.CreatedBySponson})
			if rapid.Bool().Draw(t, "delete first "+a) {
				prev.Changes = append(prev.Changes, receipt.Change{Address: a, Actions: []string{"delete", "create"}})
			}
			if rapid.Bool().Draw(t, "deleted "+a) {
				prev.Completed = append(prev.Completed, receipt.Completion{Address: a, Action: "delete"})
			}
		}
		prev.Ledger = append(prev.Ledger, e)
		switch rapid.IntRange(0, 3).Draw(t, "completion "+a) {
		case 1:
			prev.Completed = append(prev.Completed, receipt.Completion{Address: a, ID: "new-" + a, Action: "create"})
		case 2:
			prev.Completed = append(prev.Completed, receipt.Completion{Address: a, Action: "provision"})
		case 3:
			prev.Completed = append(prev.Completed, receipt.Completion{Address: a, Action: "update"})
		}
		switch rapid.IntRange(0, 3).Draw(t, "state "+a) {
		case 1:
			present[a] = "new-" + a
		case 2:
			if replaces {
				present[a] = "old-" + a
			}
		case 3:
			present[a] = "other-" + a
		}
	}
	return world{prev: prev, present: present}
}

// TestSettleInvariants: over generated stopped runs, every open entry is
// settled so that
//   - claimed means the state holds an object at its address;
//   - an adoption is asked only for an object known to exist, by a way
//     that makes it whole, and ends adopted, or dropped (state only) or
//     unresolved (any other) when it fails;
//   - dropped means its type keeps nothing outside the state, or the
//     create cannot have started (a run that paused its engine, a wait or
//     a delete without its completion);
//   - a state-only object is never a person's decision but for the
//     rewrite rule, which the next create settles;
//   - unresolved, and only that, keeps the entry as unresolved, and every
//     outcome but claimed and adopted says why;
//   - a re-run is said exactly for a dropped create with provisioners
//     that may have started.
func TestSettleInvariants(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t)
		present := map[string]string{}
		for a, id := range w.present {
			present[a] = id
		}
		g := settle.NewGround(w.prev, nil, w.present)
		completed := map[string]bool{}
		for _, c := range w.prev.Completed {
			if c.Action != "delete" && c.Action != "provision" {
				completed[c.Address] = true
			}
		}
		for _, e := range w.prev.Ledger {
			if !settle.Open(e) {
				continue
			}
			stateOnly := ownership.StateOnly(e.Provider, e.Type, nil)
			_, known := g.Known(e.Address)
			v := g.Settle(e)
			if v.Adopt {
				restore := settle.Of(e.Provider, e.Type, stateOnly)
				if !known || v.Settlement.ID == "" {
					t.Fatalf("%s: adoption asked without a known id: %+v", e.Address, v)
				}
				if a, _ := settle.Decide(settle.Known{Restore: restore, Recorded: e.Restore, StateOnly: stateOnly}); a != settle.Adopt {
					t.Fatalf("%s: adoption asked of a %s no way restores whole (recorded %v)", e.Address, e.Type, e.Restore)
				}
				failed := rapid.Bool().Draw(t, "adoption fails "+e.Address)
				why := ""
				if failed {
					why = "the import failed"
				}
				v = g.Adopted(e, v, why)
				switch {
				case !failed && v.Settlement.Outcome != receipt.SettledAdopted:
					t.Fatalf("%s: adopted, then %+v", e.Address, v.Settlement)
				case failed && stateOnly && v.Settlement.Outcome != receipt.SettledDropped:
					t.Fatalf("%s: a state-only adoption failed, then %+v", e.Address, v.Settlement)
				case failed && !stateOnly && v.Settlement.Outcome != receipt.SettledUnresolved:
					t.Fatalf("%s: an adoption failed, then %+v", e.Address, v.Settlement)
				}
			}
			st := v.Settlement
			if st.Address != e.Address || st.FromRun != "run-1" {
				t.Fatalf("%s: settled as %+v", e.Address, st)
			}
			switch st.Outcome {
			case receipt.SettledClaimed:
				if _, ok := present[e.Address]; !ok {
					t.Fatalf("%s: claimed, and the state lacks it", e.Address)
				}
			case receipt.SettledAdopted:
				if !known {
					t.Fatalf("%s: adopted without a known id", e.Address)
				}
			case receipt.SettledDropped:
				notStarted := st.Reason == receipt.ReasonNotStarted || st.Reason == receipt.ReasonReplaceFirst
				if !stateOnly && (!notStarted || !w.prev.HeldCompletions || !settle.Intent(e)) {
					t.Fatalf("%s: a %s dropped (%s) that may exist: %s", e.Address, e.Type, st.Reason, st.Note)
				}
				if st.Reason == receipt.ReasonNotStarted && !slices.ContainsFunc(e.After, func(a string) bool { return !completed[a] }) {
					t.Fatalf("%s: not started, and everything it waits for completed", e.Address)
				}
			case receipt.SettledUnresolved:
				if stateOnly && st.Reason != receipt.ReasonInPlace {
					t.Fatalf("%s: a state-only %s asked of a person: %s", e.Address, e.Type, st.Note)
				}
			default:
				t.Fatalf("%s: outcome %q", e.Address, st.Outcome)
			}
			if (st.Outcome == receipt.SettledUnresolved) != (v.Unresolved != nil) {
				t.Fatalf("%s: outcome %s, kept unresolved %v", e.Address, st.Outcome, v.Unresolved)
			}
			if v.Unresolved != nil && (v.Unresolved.CreatedBy != receipt.CreatedByUnresolved || v.Unresolved.Address != e.Address) {
				t.Fatalf("%s: kept as %+v", e.Address, *v.Unresolved)
			}
			if (st.Outcome == receipt.SettledDropped || st.Outcome == receipt.SettledUnresolved) && st.Note == "" {
				t.Fatalf("%s: %s without a reason", e.Address, st.Outcome)
			}
			mayHaveRun := st.Outcome == receipt.SettledDropped && e.Provisioned &&
				st.Reason != receipt.ReasonNotStarted && st.Reason != receipt.ReasonReplaceFirst
			if (st.Rerun != "") != mayHaveRun {
				t.Fatalf("%s: rerun %q for %+v (provisioned %v)", e.Address, st.Rerun, st, e.Provisioned)
			}
		}
	})
}
