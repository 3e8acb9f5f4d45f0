package scoperun

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// TestDroppedIntents: the intents a stopped run left that the state does
// not hold are dropped when they left nothing (a state-only type, a wait
// without a completion, a replacement whose delete had not completed), and
// unresolved otherwise.
func TestDroppedIntents(t *testing.T) {
	t.Parallel()
	const fixture = "registry.terraform.io/sponson/fixture"
	intent := func(addr string, after ...string) receipt.Entry {
		return receipt.Entry{Address: addr, Provider: fixture, Type: "fixture_object", CreatedBy: receipt.CreatedByIntent, After: after}
	}
	prev := &receipt.Receipt{
		RunID:           "run-1",
		HeldCompletions: true,
		Ledger: []receipt.Entry{
			{Address: "fixture_object.old", Provider: fixture, Type: "fixture_object", ID: "old-1", CreatedBy: receipt.CreatedBySponson},
			intent("fixture_object.a"),
			{Address: "terraform_data.gate", Provider: "terraform.io/builtin/terraform", Type: "terraform_data", CreatedBy: receipt.CreatedByIntent, After: []string{"fixture_object.a"}},
			intent("fixture_object.b", "terraform_data.gate"),
			intent("fixture_object.c", "fixture_object.a"),
			intent("fixture_object.d", "fixture_object.u"),
			intent("fixture_object.e", "fixture_object.u2"),
			intent("fixture_object.old"),
			{Address: "fixture_object.policy", Provider: fixture, Type: "fixture_object", CreatedBy: receipt.CreatedByIntent, StateOnly: true},
			{Address: "fixture_object.again", Provider: fixture, Type: "fixture_object", CreatedBy: receipt.CreatedByUnresolved, After: []string{"terraform_data.gate"}},
		},
		Changes: []receipt.Change{{Address: "fixture_object.old", Actions: []string{"delete", "create"}}},
		// a completed (and the state has it: claimed); u was updated, u2 not.
		Completed: []receipt.Completion{{Address: "fixture_object.u", Action: "update"}},
	}
	present := map[string]string{"fixture_object.a": "id-a", "fixture_object.old": "old-1"}
	s := newSettlement(&runner{}, t.Context(), nil, prev, nil, present)
	for _, e := range openEntries(prev) {
		s.settleOne(e)
	}
	got := map[string]string{}
	for _, st := range s.out {
		got[st.Address] = st.Outcome + "/" + st.Reason
	}
	want := map[string]string{
		"fixture_object.a":      "claimed/",
		"terraform_data.gate":   "dropped/state-only",
		"fixture_object.b":      "dropped/not-started",
		"fixture_object.c":      "unresolved/",
		"fixture_object.d":      "unresolved/",
		"fixture_object.e":      "dropped/not-started",
		"fixture_object.old":    "dropped/replace-not-started",
		"fixture_object.policy": "dropped/state-only",
		// Left unresolved by an earlier settlement: its run's completions
		// are not this receipt's.
		"fixture_object.again": "unresolved/",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}

	// A run that could not pause its engine proves nothing by a missing
	// completion: only the state-only rule is left.
	prev.HeldCompletions = false
	s = newSettlement(&runner{}, t.Context(), nil, prev, nil, map[string]string{"fixture_object.a": "id-a", "fixture_object.old": "old-1"})
	for _, e := range openEntries(prev) {
		s.settleOne(e)
	}
	for _, st := range s.out {
		if st.Reason == receipt.ReasonNotStarted || st.Reason == receipt.ReasonReplaceFirst {
			t.Errorf("%s dropped (%s) after a run that could not pause its engine", st.Address, st.Reason)
		}
	}
}
