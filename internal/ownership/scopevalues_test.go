package ownership

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"
)

// TestPolicyOfAPlanThatLeavesTheScopeOut: a plan made with -target of
// another resource (or -refresh-only) has no change for sponson_scope; its
// policy still applies, read from the prior state.
func TestPolicyOfAPlanThatLeavesTheScopeOut(t *testing.T) {
	t.Parallel()
	scope := map[string]any{
		"identity":   map[string]any{"fixture_object": []any{"name"}},
		"production": map[string]any{"types": []any{"fixture_object"}},
	}
	plan := &tfjson.Plan{
		ResourceChanges: []*tfjson.ResourceChange{{
			Address: "fixture_object.a", Mode: tfjson.ManagedResourceMode, Type: "fixture_object",
			Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionCreate}, After: map[string]any{"name": "a"}},
		}},
		PriorState: &tfjson.State{Values: &tfjson.StateValues{RootModule: &tfjson.StateModule{
			ChildModules: []*tfjson.StateModule{{Resources: []*tfjson.StateResource{{
				Address: "module.m.sponson_scope.this", Mode: tfjson.ManagedResourceMode, Type: ScopeResourceType, AttributeValues: scope,
			}}}},
		}}},
	}
	if diff := cmp.Diff(map[string][]string{"fixture_object": {"name"}}, PolicyFromPlan(plan).Identity); diff != "" {
		t.Errorf("identity policy (-want +got):\n%s", diff)
	}
	if got := RulesFromPlan(plan).Production.Types; len(got) != 1 || got[0] != "fixture_object" {
		t.Errorf("production types %q", got)
	}
	// A plan that changes the scope uses its planned values, not the
	// prior ones as well.
	plan.ResourceChanges = append(plan.ResourceChanges, &tfjson.ResourceChange{
		Address: "module.m.sponson_scope.this", Mode: tfjson.ManagedResourceMode, Type: ScopeResourceType,
		Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionUpdate}, After: map[string]any{"identity": map[string]any{"fixture_object": []any{"id"}}}},
	})
	if diff := cmp.Diff(map[string][]string{"fixture_object": {"id"}}, PolicyFromPlan(plan).Identity); diff != "" {
		t.Errorf("identity policy of a plan changing the scope (-want +got):\n%s", diff)
	}
}
