package ownership

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

const fixture = "registry.opentofu.org/sponson/fixture"

func change(addr, typ string, actions tfjson.Actions, before, after, unknown map[string]any) *tfjson.ResourceChange {
	rc := &tfjson.ResourceChange{Address: addr, Type: typ, Mode: tfjson.ManagedResourceMode, ProviderName: fixture,
		Change: &tfjson.Change{Actions: actions}}
	if before != nil {
		rc.Change.Before = before
	}
	if after != nil {
		rc.Change.After = after
	}
	if unknown != nil {
		rc.Change.AfterUnknown = unknown
	}
	return rc
}

func scopeChange(identity map[string]any) *tfjson.ResourceChange {
	rc := change("sponson_scope.this", ScopeResourceType, tfjson.Actions{tfjson.ActionNoop}, nil, map[string]any{"identity": identity}, nil)
	rc.ProviderName = "registry.opentofu.org/sponson/sponson"
	return rc
}

func TestPolicyAndIdentify(t *testing.T) {
	t.Parallel()
	plan := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		scopeChange(map[string]any{"fixture_object": []any{"name"}, "fixture_var": []any{"project", "key"}}),
		change("fixture_object.a", "fixture_object", tfjson.Actions{tfjson.ActionCreate}, nil, map[string]any{"name": "shared"}, map[string]any{"id": true}),
		change("fixture_var.v", "fixture_var", tfjson.Actions{tfjson.ActionUpdate}, map[string]any{"project": "p", "key": "K", "id": "7"}, map[string]any{"project": "p", "key": "K"}, nil),
		change("fixture_object.late", "fixture_object", tfjson.Actions{tfjson.ActionCreate}, nil, map[string]any{}, map[string]any{"name": true}),
		change("terraform_data.old", "terraform_data", tfjson.Actions{tfjson.ActionDelete}, map[string]any{"id": "u-1"}, nil, nil),
		change("terraform_data.new", "terraform_data", tfjson.Actions{tfjson.ActionCreate}, nil, map[string]any{}, map[string]any{"id": true}),
		change("terraform_data.same", "terraform_data", tfjson.Actions{tfjson.ActionNoop}, map[string]any{"id": "u-2"}, map[string]any{"id": "u-2"}, nil),
		change("fixture_object.r", "fixture_object", tfjson.Actions{tfjson.ActionDelete, tfjson.ActionCreate}, map[string]any{"name": "r"}, map[string]any{"name": "r"}, map[string]any{"id": true}),
	}}
	plan.ResourceChanges = append(plan.ResourceChanges, &tfjson.ResourceChange{Address: "data.fixture_object.x", Mode: tfjson.DataResourceMode, Type: "fixture_object", Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionRead}}})

	pol := PolicyFromPlan(plan)
	if diff := cmp.Diff(map[string][]string{"fixture_object": {"name"}, "fixture_var": {"project", "key"}}, pol.Identity); diff != "" {
		t.Fatalf("policy (-want +got):\n%s", diff)
	}
	got := map[string]string{}
	unknown := map[string][]string{}
	for _, p := range Identify(plan, pol) {
		got[p.Address] = p.Identity
		if len(p.Unknown) > 0 {
			unknown[p.Address] = p.Unknown
		}
	}
	want := map[string]string{
		"fixture_object.a":    fixture + `|fixture_object|name="shared"`,
		"fixture_var.v":       fixture + `|fixture_var|project="p",key="K"`,
		"fixture_object.late": "",
		"terraform_data.old":  fixture + `|terraform_data|id="u-1"`,
		"terraform_data.new":  "",
		"fixture_object.r":    fixture + `|fixture_object|name="r"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identities (-want +got); no-ops and reads must be left out:\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"fixture_object.late": {"name"}, "terraform_data.new": {"id"}}, unknown); diff != "" {
		t.Errorf("unknown attributes (-want +got):\n%s", diff)
	}
}

func TestProviderIdentityIsUsedWithoutADeclaration(t *testing.T) {
	t.Parallel()
	id, unknown := Policy{}.Of("p", "t", "t.a", map[string]any{"id": "x"}, nil, map[string]any{"region": "eu", "name": "n"})
	if id != `p|t|identity={"name":"n","region":"eu"}` || unknown != nil {
		t.Errorf("identity %q unknown %v", id, unknown)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	planned := []Planned{
		{Address: "fixture_object.a", Identity: "A", Actions: []string{"create"}},
		{Address: "fixture_object.b", Identity: "B", Actions: []string{"update"}},
		{Address: "fixture_object.c", Identity: "", Actions: []string{"create"}},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	owners := []store.Owner{
		{Scope: "main", Identity: "B", CreatedBy: "created", Since: t0},
		{Scope: "pr-2", Identity: "A", CreatedBy: "intent", Since: t0.Add(time.Second)},
		{Scope: "pr-1", Identity: "A", CreatedBy: "intent", Since: t0.Add(2 * time.Second)},
	}
	var got []string
	for _, c := range Check(planned, owners, store.Key{Scope: "pr-1"}) {
		got = append(got, c.Change.Address+"<-"+c.Owner.Scope)
	}
	if diff := cmp.Diff([]string{"fixture_object.a<-pr-2", "fixture_object.b<-main"}, got); diff != "" {
		t.Errorf("conflicts of pr-1 (-want +got); its own entries never conflict:\n%s", diff)
	}
}

func TestLedger(t *testing.T) {
	t.Parallel()
	pol := Policy{Identity: map[string][]string{"fixture_object": {"name"}}}
	prev := &receipt.Receipt{Ledger: []receipt.Entry{
		{Identity: fixture + `|fixture_object|name="kept"`, Address: "fixture_object.old_name", ID: "1", CreatedBy: "inherited"},
		{Identity: fixture + `|fixture_object|name="outside"`, Address: "fixture_object.outside", ID: "2", CreatedBy: "created"},
		{Identity: fixture + `|fixture_object|name="gone"`, Address: "fixture_object.gone", ID: "3", CreatedBy: "created"},
		{Identity: IntentIdentity(fixture, "fixture_object", "fixture_object.new"), Address: "fixture_object.new", CreatedBy: "intent"},
	}}
	objects := []Object{
		{Address: "fixture_object.new_name", Provider: fixture, Type: "fixture_object", ID: "1", Attributes: map[string]any{"name": "kept"}},
		{Address: "fixture_object.outside", Provider: fixture, Type: "fixture_object", ID: "9", Attributes: map[string]any{"name": "outside"}},
		{Address: "fixture_object.new", Provider: fixture, Type: "fixture_object", ID: "4", Attributes: map[string]any{"name": "new"}},
		{Address: "terraform_data.t", Provider: "terraform.io/builtin/terraform", Type: "terraform_data", ID: "u-5"},
	}
	planned := []Planned{{Address: "fixture_object.new", Actions: []string{"create"}}}
	entries, notes := Ledger(prev, objects, pol, planned)
	got := map[string]string{}
	for _, e := range entries {
		got[e.Address] = e.Identity + " " + e.CreatedBy
	}
	want := map[string]string{
		"fixture_object.new_name": fixture + `|fixture_object|name="kept" inherited`,
		"fixture_object.outside":  fixture + `|fixture_object|name="outside" adopted`,
		"fixture_object.new":      fixture + `|fixture_object|name="new" created`,
		"terraform_data.t":        `terraform.io/builtin/terraform|terraform_data|id="u-5" created`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	if len(notes) != 2 {
		t.Errorf("notes %q, want one for the move and one for the outside replacement", notes)
	}
}

func TestIntents(t *testing.T) {
	t.Parallel()
	got := Intents([]Planned{
		{Address: "a", Provider: "p", Type: "t", Identity: "p|t|name=\"a\"", Actions: []string{"create"}},
		{Address: "b", Provider: "p", Type: "t", Actions: []string{"create"}},
		{Address: "c", Provider: "p", Type: "t", Identity: "C", Actions: []string{"update"}},
	})
	want := []receipt.Entry{
		{Identity: "p|t|name=\"a\"", Address: "a", Provider: "p", Type: "t", CreatedBy: "intent"},
		{Identity: "p|t|intent:b", Address: "b", Provider: "p", Type: "t", CreatedBy: "intent"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("intents (-want +got):\n%s", diff)
	}
}

// TestIdentifyKeepsImports (issue 12 item 3): an import is a change of
// ownership, also when the engine plans no change to the object.
func TestIdentifyKeepsImports(t *testing.T) {
	t.Parallel()
	obj := map[string]any{"id": "u-1", "name": "shared"}
	noop := change(`fixture_object.o["x"]`, "fixture_object", tfjson.Actions{tfjson.ActionNoop}, obj, obj, nil)
	noop.Change.Importing = &tfjson.Importing{ID: "shared"}
	untouched := change(`fixture_object.o["y"]`, "fixture_object", tfjson.Actions{tfjson.ActionNoop}, obj, obj, nil)
	got := Identify(&tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{noop, untouched}}, Policy{Identity: map[string][]string{"fixture_object": {"name"}}})
	want := []Planned{{Address: `fixture_object.o["x"]`, Type: "fixture_object", Provider: fixture, Actions: []string{ActionImport},
		Identity: fixture + `|fixture_object|name="shared"`, Imports: true, Scheme: []string{"name"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Identify (-want +got):\n%s", diff)
	}
}

func TestSamePlace(t *testing.T) {
	t.Parallel()
	const local = "registry.opentofu.org/hashicorp/local"
	at := func(f string) map[string]string { return map[string]string{"filename": f, "content": "x"} }
	cases := []struct {
		name, provider, typ string
		a, b                map[string]string
		want                bool
	}{
		{"same filename", local, "local_file", at("/o/a"), at("/o/a"), true},
		{"other content, same filename", local, "local_sensitive_file", at("/o/a"), map[string]string{"filename": "/o/a"}, true},
		{"other filename", local, "local_file", at("/o/a"), at("/o/b"), false},
		{"filename unknown", local, "local_file", at("/o/a"), map[string]string{"content": "x"}, false},
		{"not in the table", local, "local_command", at("/o/a"), at("/o/a"), false},
		{"another provider", "registry.terraform.io/acme/local", "local_file", at("/o/a"), at("/o/a"), false},
		{"terraform host", "registry.terraform.io/hashicorp/local", "local_file", at("/o/a"), at("/o/a"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := SamePlace(tc.provider, tc.typ, tc.a, tc.b); got != tc.want {
				t.Errorf("SamePlace = %v, want %v", got, tc.want)
			}
		})
	}
}
