package ownership

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// TestCheckUnderEverySchemeInUse (issue 12 item 1): whatever identity policy
// the owner and the checking scope declare, a planned change to the owner's
// object collides with the owner's index rows.
func TestCheckUnderEverySchemeInUse(t *testing.T) {
	t.Parallel()
	byName := Policy{Identity: map[string][]string{"fixture_object": {"name"}}}
	obj := Object{Address: "fixture_object.a", Provider: fixture, Type: "fixture_object", ID: "u-1", Attributes: map[string]any{"id": "u-1", "name": "shared"}}
	existing := map[string]any{"id": "u-1", "name": "shared", "value": "old"}
	update := change("fixture_object.b", "fixture_object", tfjson.Actions{tfjson.ActionUpdate}, existing, map[string]any{"id": "u-1", "name": "shared", "value": "new"}, nil)
	create := change("fixture_object.c", "fixture_object", tfjson.Actions{tfjson.ActionCreate}, nil, map[string]any{"name": "shared"}, map[string]any{"id": true})
	for _, c := range []struct {
		name          string
		owner, runner Policy
		rc            *tfjson.ResourceChange
		want          bool
	}{
		{"update, owner by name, runner by id", byName, Policy{}, update, true},
		{"update, owner by id, runner by name", Policy{}, byName, update, true},
		{"create, owner by name, runner by id", byName, Policy{}, create, true},
		// The owner identifies its objects by id: a create is a new id.
		{"create, owner by id, runner by name", Policy{}, byName, create, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			entries, _ := Ledger(nil, []Object{obj}, c.owner, nil)
			rec := &receipt.Receipt{RunID: "run-1", Ledger: entries}
			index := store.OwnersOf(store.Key{Stack: "acme/app", Environment: "preview", Scope: "main"}, rec, nil, rec.StartedAt)
			plan := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{c.rc}}
			planned := Identify(plan, c.runner)
			var schemeRows []store.Owner
			for _, o := range index {
				if o.Identity == store.SchemeIdentity(fixture, "fixture_object") {
					schemeRows = append(schemeRows, o)
				}
			}
			planned = WithKeys(plan, planned, c.runner, SchemesFrom(schemeRows))
			got := Check(planned, index, store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-2"})
			if (len(got) > 0) != c.want {
				t.Fatalf("conflicts %+v, want any: %v\nplanned %+v\nindex %+v", got, c.want, planned, index)
			}
			if len(got) > 1 {
				t.Errorf("one owning entry reported %d times: %+v", len(got), got)
			}
		})
	}
}

func TestSchemesFrom(t *testing.T) {
	t.Parallel()
	rows := []store.Owner{
		{Scope: "a", Identity: store.SchemeIdentity(fixture, "fixture_list_entry"), Address: "list,entry", CreatedBy: store.SchemeCreatedBy},
		{Scope: "b", Identity: store.SchemeIdentity(fixture, "fixture_list_entry"), Address: "list,entry", CreatedBy: store.SchemeCreatedBy},
		{Scope: "b", Identity: "x|y|id=\"1\"", Address: "y.z", CreatedBy: receipt.CreatedBySponson},
	}
	want := []Scheme{{Provider: fixture, Type: "fixture_list_entry", Attributes: []string{"list", "entry"}}}
	if diff := cmp.Diff(want, SchemesFrom(rows)); diff != "" {
		t.Errorf("SchemesFrom (-want +got):\n%s", diff)
	}
}

// TestUnmatchable: a policy naming an attribute that an owned object lacks
// is refused; objects the plan deletes, and objects the scope does not
// own, are not held against it.
func TestUnmatchable(t *testing.T) {
	t.Parallel()
	prev := &receipt.Receipt{Ledger: []receipt.Entry{
		{Address: "fixture_object.a", CreatedBy: receipt.CreatedBySponson},
		{Address: "fixture_object.gone", CreatedBy: receipt.CreatedBySponson},
	}}
	objects := []Object{
		{Address: "fixture_object.a", Provider: fixture, Type: "fixture_object", ID: "1", Attributes: map[string]any{"id": "1", "name": "n"}},
		{Address: "fixture_object.gone", Provider: fixture, Type: "fixture_object", ID: "2", Attributes: map[string]any{"id": "2", "name": "m"}},
		{Address: "fixture_object.new", Provider: fixture, Type: "fixture_object", ID: "3", Attributes: map[string]any{"id": "3"}},
	}
	del := []Planned{{Address: "fixture_object.gone", Actions: []string{"delete"}}}
	if err := Unmatchable(prev, objects, Policy{Identity: map[string][]string{"fixture_object": {"name"}}}, del); err != nil {
		t.Errorf("a policy every owned object matches: %v", err)
	}
	err := Unmatchable(prev, objects, Policy{Identity: map[string][]string{"fixture_object": {"nosuch"}}}, del)
	if err == nil || !strings.Contains(err.Error(), "IDENTITY_POLICY") || !strings.Contains(err.Error(), "fixture_object.a has no value for nosuch") || strings.Contains(err.Error(), "gone") || strings.Contains(err.Error(), ".new") {
		t.Errorf("a misspelt attribute: %v", err)
	}
}

// TestLedgerKeepsHowOwnedAcrossAPolicyChange: an entry recorded under the
// id is found again under a new policy by its key.
func TestLedgerKeepsHowOwnedAcrossAPolicyChange(t *testing.T) {
	t.Parallel()
	obj := Object{Address: "fixture_object.a", Provider: fixture, Type: "fixture_object", ID: "1", Attributes: map[string]any{"id": "1", "name": "n"}}
	first, _ := Ledger(nil, []Object{obj}, Policy{}, nil)
	first[0].CreatedBy = receipt.CreatedByInherited
	second, _ := Ledger(&receipt.Receipt{Ledger: first}, []Object{obj}, Policy{Identity: map[string][]string{"fixture_object": {"name"}}}, nil)
	want := receipt.Entry{Identity: fixture + `|fixture_object|name="n"`, Address: "fixture_object.a", Provider: fixture, Type: "fixture_object", ID: "1",
		CreatedBy: receipt.CreatedByInherited, Keys: []string{fixture + `|fixture_object|id="1"`}, Scheme: []string{"name"}}
	if diff := cmp.Diff([]receipt.Entry{want}, second); diff != "" {
		t.Errorf("Ledger (-want +got):\n%s", diff)
	}
}
