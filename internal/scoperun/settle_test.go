package scoperun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
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

// TestInPlaceIntents: a local_file a stopped run may have made (its
// completion recorded or not) that the state lacks stays unresolved with
// ReasonInPlace, without an import; the check lets a create of it at the
// same filename through (a rewrite) and refuses one elsewhere, and one
// whose filename was unknown to the plan.
func TestInPlaceIntents(t *testing.T) {
	t.Parallel()
	const local = "registry.opentofu.org/hashicorp/local"
	file := func(addr, filename string, after ...string) receipt.Entry {
		e := receipt.Entry{Address: addr, Provider: local, Type: "local_file", CreatedBy: receipt.CreatedByIntent, After: after}
		if filename != "" {
			e.Planned = map[string]string{"filename": filename, "content": "x"}
		}
		return e
	}
	prev := &receipt.Receipt{
		RunID:           "run-1",
		HeldCompletions: true,
		Ledger: []receipt.Entry{
			file("local_file.done", "/o/done"),
			file("local_file.flight", "/o/flight"),
			file("local_file.unknown", ""),
			file("local_file.waits", "/o/waits", "local_file.flight"),
			file("local_file.held", "/o/held"),
			{Address: "local_file.replaced", Provider: local, Type: "local_file", ID: "sha-old", CreatedBy: receipt.CreatedBySponson},
			file("local_file.replaced", "/o/replaced"),
			{Address: "local_file.halfway", Provider: local, Type: "local_file", ID: "sha-old2", CreatedBy: receipt.CreatedBySponson},
			file("local_file.halfway", "/o/halfway"),
		},
		Changes: []receipt.Change{
			{Address: "local_file.replaced", Actions: []string{"delete", "create"}},
			{Address: "local_file.halfway", Actions: []string{"delete", "create"}},
		},
		Completed: []receipt.Completion{
			{Address: "local_file.done", ID: "sha-done", Action: "create"},
			{Address: "local_file.held", ID: "sha-held", Action: "create"},
			{Address: "local_file.replaced", Action: "delete"},
			{Address: "local_file.replaced", ID: "sha-new", Action: "create"},
			{Address: "local_file.halfway", Action: "delete"},
		},
	}
	s := newSettlement(&runner{}, t.Context(), nil, prev, nil, map[string]string{"local_file.held": "sha-held", "local_file.replaced": "sha-old", "local_file.halfway": "sha-old2"})
	for _, e := range openEntries(prev) {
		s.settleOne(e)
	}
	got := map[string]string{}
	for _, st := range s.out {
		got[st.Address] = st.Outcome + "/" + st.Reason + "/" + st.ID
	}
	want := map[string]string{
		"local_file.done":    "unresolved/in-place/sha-done",
		"local_file.flight":  "unresolved/in-place/",
		"local_file.unknown": "unresolved//",
		"local_file.waits":   "dropped/not-started/",
		"local_file.held":    "claimed//",
		// Replaced (delete, then create): the delete completed, so the
		// state's object is gone, and the new one is at the filename.
		"local_file.replaced": "unresolved/in-place/sha-new",
		"local_file.halfway":  "unresolved/in-place/",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}

	r := &runner{}
	created := func(addr string) ownership.Planned {
		return ownership.Planned{Address: addr, Provider: local, Type: "local_file", Actions: []string{"create"}}
	}
	change := func(addr, filename string) *tfjson.ResourceChange {
		return &tfjson.ResourceChange{Address: addr, Change: &tfjson.Change{After: map[string]any{"filename": filename, "content": "y"}}}
	}
	c := &checked{
		planned: []ownership.Planned{created("local_file.done"), created("local_file.flight")},
		plan:    &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{change("local_file.done", "/o/done"), change("local_file.flight", "/o/flight")}},
	}
	if err := r.checkUnresolved(c, s.unresolved); err != nil {
		t.Fatalf("creates at the same filename: %v", err)
	}
	if len(c.rewrites) != 2 {
		t.Errorf("rewrites %v, want local_file.done and local_file.flight", c.rewrites)
	}
	for name, c := range map[string]*checked{
		"another filename": {
			planned: []ownership.Planned{created("local_file.done")},
			plan:    &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{change("local_file.done", "/p/done")}},
		},
		"filename unknown to the stopped run's plan": {
			planned: []ownership.Planned{created("local_file.unknown")},
			plan:    &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{change("local_file.unknown", "/o/unknown")}},
		},
	} {
		if err := r.checkUnresolved(c, s.unresolved); errcode.As(err).Code != errcode.IntentUnresolved {
			t.Errorf("%s: %v, want INTENT_UNRESOLVED", name, err)
		}
	}

	// After the apply: the rewritten entries leave the ledger's
	// unresolved ones and are settled as rewritten.
	c.rewrites = map[string]receipt.Entry{"local_file.done": s.unresolved[0]}
	settled := rewritten(s.out, c, []stateResource{{Address: "local_file.done", ID: "sha-new"}})
	for _, st := range settled {
		if st.Address == "local_file.done" && (st.Outcome != receipt.SettledRewritten || st.ID != "sha-new" || st.FromRun != "run-1") {
			t.Errorf("local_file.done settled %+v after its rewrite", st)
		}
	}
}
