package ownership

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The helpers of this file are named apart from ownership_test.go's, which
// other changes may edit.

const vercelSource = "registry.terraform.io/vercel/vercel"

// policyChange is a policyChange change of a managed fixture resource.
func policyChange(addr, typ string, actions tfjson.Actions, before, after, unknown map[string]any) *tfjson.ResourceChange {
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

var (
	actCreate  = tfjson.Actions{tfjson.ActionCreate}
	actUpdate  = tfjson.Actions{tfjson.ActionUpdate}
	actDelete  = tfjson.Actions{tfjson.ActionDelete}
	actReplace = tfjson.Actions{tfjson.ActionDelete, tfjson.ActionCreate}
	actNoop    = tfjson.Actions{tfjson.ActionNoop}
	actForget  = tfjson.Actions{tfjson.ActionForget}
)

// policyScope is the sponson_scope change whose policyChange values are vals, as
// the engine's JSON renders them.
func policyScope(actions tfjson.Actions, vals map[string]any) *tfjson.ResourceChange {
	rc := policyChange("sponson_scope.this", ScopeResourceType, actions, nil, vals, nil)
	if actions.Delete() {
		rc.Change.Before, rc.Change.After = vals, nil
	}
	rc.ProviderName = "registry.opentofu.org/sponson/sponson"
	return rc
}

func policyPlan(changes ...*tfjson.ResourceChange) *tfjson.Plan {
	return &tfjson.Plan{ResourceChanges: changes}
}

func TestRulesFromPlan(t *testing.T) {
	t.Parallel()
	full := map[string]any{
		"identity": map[string]any{"fixture_object": []any{"name"}},
		"production": map[string]any{
			"types":      []any{"fixture_object"},
			"addresses":  []any{"module.prod.*"},
			"attributes": map[string]any{"environment": "production"},
			"approvers":  []any{"alice", "bob"},
		},
		"parents":    map[string]any{"fixture_list_entry": []any{"list"}},
		"state_only": []any{"fixture_token"},
	}
	fullRules := Rules{
		StateOnly: []string{"fixture_token"},
		Production: ProductionRules{
			Types:      []string{"fixture_object"},
			Addresses:  []string{"module.prod.*"},
			Attributes: map[string]string{"environment": "production"},
			Approvers:  []string{"alice", "bob"},
		},
		Parents: map[string][]string{"fixture_list_entry": {"list"}},
	}

	tests := map[string]struct {
		plan *tfjson.Plan
		want Rules
	}{
		"no plan": {plan: nil, want: Rules{Parents: map[string][]string{}}},
		"no scope": {
			plan: policyPlan(policyChange("fixture_object.a", "fixture_object", actCreate, nil, map[string]any{"name": "a"}, nil)),
			want: Rules{Parents: map[string][]string{}},
		},
		"policy unset": {
			plan: policyPlan(policyScope(actNoop, map[string]any{"production": nil, "parents": nil, "identity": nil})),
			want: Rules{Parents: map[string][]string{}},
		},
		"full":            {plan: policyPlan(policyScope(actCreate, full)), want: fullRules},
		"scope destroyed": {plan: policyPlan(policyScope(actDelete, full)), want: fullRules},
		"approvers unset": {
			plan: policyPlan(policyScope(actUpdate, map[string]any{"production": map[string]any{
				"types": []any{"fixture_object"}, "addresses": nil, "attributes": nil, "approvers": nil,
			}})),
			want: Rules{Production: ProductionRules{Types: []string{"fixture_object"}}, Parents: map[string][]string{}},
		},
		"approvers empty": {
			plan: policyPlan(policyScope(actUpdate, map[string]any{"production": map[string]any{"approvers": []any{}}})),
			want: Rules{Production: ProductionRules{Approvers: []string{}}, Parents: map[string][]string{}},
		},
		"two scopes add up": {
			plan: policyPlan(
				policyScope(actNoop, full),
				policyScope(actNoop, map[string]any{
					"production": map[string]any{"types": []any{"fixture_var"}, "approvers": []any{"carol"},
						"attributes": map[string]any{"tier": "1"}},
					"parents": map[string]any{"fixture_var": []any{"project"}},
				}),
			),
			want: Rules{
				Production: ProductionRules{
					Types:      []string{"fixture_object", "fixture_var"},
					Addresses:  []string{"module.prod.*"},
					Attributes: map[string]string{"environment": "production", "tier": "1"},
					Approvers:  []string{"alice", "bob", "carol"},
				},
				Parents:   map[string][]string{"fixture_list_entry": {"list"}, "fixture_var": {"project"}},
				StateOnly: []string{"fixture_token"},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			got := RulesFromPlan(tt.plan)

			// nil and empty differ for Approvers (no allow-list, or nobody).
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RulesFromPlan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()

	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"module.prod.*", "module.prod.fixture_object.a", true},
		{"module.prod.*", "module.prod.module.inner.fixture_object.a[0]", true},
		{"module.prod.*", "module.prod", false},
		{"module.prod.*", "module.production.fixture_object.a", false},
		{"module.prod*", "module.production.fixture_object.a", true},
		{"*.db", "module.app[\"eu\"].aws_db_instance.db", true},
		{"fixture_object.web[0]", "fixture_object.web[0]", true},
		{"fixture_object.web[0]", "fixture_object.web0", false},
		{"fixture_object.web[?]", "fixture_object.web[7]", true},
		{"fixture_object.web[?]", "fixture_object.web[17]", false},
		{"*", "", true},
		{"", "", true},
		{"", "a", false},
		{"a*b*c", "a-x-b-y-c", true},
		{"a*b*c", "a-x-c-y-b", false},
		{"**", "anything", true},
		{"*a", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", false},
		{`module.app["prod"].*`, `module.app["prod"].fixture_object.x`, true},
		{"fixture_object.ü*", "fixture_object.über", true},
	}
	for _, tt := range tests {
		if got := Glob(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestProductionChanges(t *testing.T) {
	t.Parallel()
	rules := Rules{Production: ProductionRules{
		Types:     []string{"fixture_domain"},
		Addresses: []string{"module.prod.*"},
		Attributes: map[string]string{
			"environment":      "production",
			"tags.Environment": "prod",
			"protected":        "true",
		},
	}}
	prodEnv := map[string]any{"environment": "production"}
	previewEnv := map[string]any{"environment": "preview"}

	tests := map[string]struct {
		rules   *Rules // the rules above when nil
		changes []*tfjson.ResourceChange
		want    []ProductionHit
	}{
		"no rules mark nothing": {
			rules:   &Rules{},
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actCreate, nil, prodEnv, nil)},
		},
		"by type": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_domain.d", "fixture_domain", actCreate, nil, map[string]any{}, nil)},
			want:    []ProductionHit{{Address: "fixture_domain.d", Type: "fixture_domain", Actions: []string{"create"}, Rule: `type "fixture_domain"`}},
		},
		"by address": {
			changes: []*tfjson.ResourceChange{policyChange("module.prod.fixture_object.a", "fixture_object", actUpdate, previewEnv, previewEnv, nil)},
			want: []ProductionHit{{Address: "module.prod.fixture_object.a", Type: "fixture_object", Actions: []string{"update"},
				Rule: `address "module.prod.*"`}},
		},
		"by previous address": {
			changes: []*tfjson.ResourceChange{func() *tfjson.ResourceChange {
				rc := policyChange("fixture_object.a", "fixture_object", actUpdate, previewEnv, previewEnv, nil)
				rc.PreviousAddress = "module.prod.fixture_object.a"
				return rc
			}()},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"update"},
				Rule: `address "module.prod.*"`}},
		},
		"by attribute after a create": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actCreate, nil, prodEnv, nil)},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"create"},
				Rule: `attribute environment = "production"`}},
		},
		"by attribute before a delete": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actDelete, prodEnv, nil, nil)},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"delete"},
				Rule: `attribute environment = "production"`}},
		},
		"an actUpdate out of production": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actUpdate, prodEnv, previewEnv, nil)},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"update"},
				Rule: `attribute environment = "production"`}},
		},
		"a replacement into production": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actReplace, previewEnv, prodEnv, nil)},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"delete", "create"},
				Rule: `attribute environment = "production"`}},
		},
		"a delete of a preview object": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actDelete, previewEnv, nil, nil)},
		},
		"a nested attribute": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actCreate, nil,
				map[string]any{"tags": map[string]any{"Environment": "prod", "Team": "web"}}, nil)},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"create"},
				Rule: `attribute tags.Environment = "prod"`}},
		},
		"a nested attribute of another value": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actCreate, nil,
				map[string]any{"tags": map[string]any{"Environment": "dev"}}, nil)},
		},
		"a bool compares by its JSON text": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actCreate, nil, map[string]any{"protected": true}, nil)},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"create"},
				Rule: `attribute protected = "true"`}},
		},
		"an unknown attribute counts": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actCreate, nil, map[string]any{},
				map[string]any{"environment": true})},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"create"},
				Rule: `attribute environment = "production" (unknown until apply)`}},
		},
		"an unknown map counts for its keys": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actCreate, nil, map[string]any{},
				map[string]any{"tags": true})},
			want: []ProductionHit{{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"create"},
				Rule: `attribute tags.Environment = "prod" (unknown until apply)`}},
		},
		"reads, no-ops and forgets do not write": {
			changes: []*tfjson.ResourceChange{
				policyChange("fixture_domain.same", "fixture_domain", actNoop, prodEnv, prodEnv, nil),
				policyChange("fixture_domain.gone", "fixture_domain", actForget, prodEnv, nil, nil),
				{Address: "data.fixture_domain.d", Type: "fixture_domain", Mode: tfjson.DataResourceMode,
					Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionRead}, After: prodEnv}},
			},
		},
		"sorted by address, types first": {
			changes: []*tfjson.ResourceChange{
				policyChange("module.prod.fixture_domain.z", "fixture_domain", actCreate, nil, prodEnv, nil),
				policyChange("fixture_object.b", "fixture_object", actCreate, nil, previewEnv, nil),
				policyChange("fixture_object.a", "fixture_object", actCreate, nil, prodEnv, nil),
			},
			want: []ProductionHit{
				{Address: "fixture_object.a", Type: "fixture_object", Actions: []string{"create"}, Rule: `attribute environment = "production"`},
				{Address: "module.prod.fixture_domain.z", Type: "fixture_domain", Actions: []string{"create"}, Rule: `type "fixture_domain"`},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rules
			if tt.rules != nil {
				r = *tt.rules
			}

			got := r.ProductionChanges(policyPlan(tt.changes...))

			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ProductionChanges (-want +got):\n%s", diff)
			}
		})
	}

	if got := rules.ProductionChanges(nil); len(got) != 0 {
		t.Errorf("ProductionChanges(nil) = %v", got)
	}
}

func TestApproved(t *testing.T) {
	t.Parallel()
	open := Rules{}
	listed := Rules{Production: ProductionRules{Approvers: []string{"alice", "bob"}}}
	nobody := Rules{Production: ProductionRules{Approvers: []string{}}}

	tests := map[string]struct {
		rules    Rules
		approver string
		want     string
		wantErr  string // part of the message; the code is always ENV_NOT_APPROVED
		wantHint string
	}{
		"any name":                     {rules: open, approver: "carol", want: "carol"},
		"trimmed":                      {rules: open, approver: "  carol\t", want: "carol"},
		"empty is none":                {rules: open, approver: "", wantErr: "names no approver", wantHint: "--approved-by NAME"},
		"space is none":                {rules: open, approver: " \t\n", wantErr: "names no approver"},
		"on the allow-list":            {rules: listed, approver: "bob", want: "bob"},
		"on the allow-list, padded":    {rules: listed, approver: " alice ", want: "alice"},
		"off the allow-list":           {rules: listed, approver: "mallory", wantErr: `"mallory" is not an approver`, wantHint: "alice, bob"},
		"allow-list is case-sensitive": {rules: listed, approver: "Alice", wantErr: `"Alice" is not an approver`},
		"none with an allow-list":      {rules: listed, approver: " ", wantErr: "names no approver", wantHint: "alice, bob"},
		"empty allow-list":             {rules: nobody, approver: "alice", wantErr: "is not an approver", wantHint: "allows no approvers"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			got, err := tt.rules.Approved(tt.approver)

			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("Approved(%q) = %q, %v; want %q", tt.approver, got, err, tt.want)
				}
				return
			}
			if !errcode.Is(err, errcode.EnvNotApproved) || got != "" {
				t.Fatalf("Approved(%q) = %q, %v; want ENV_NOT_APPROVED", tt.approver, got, err)
			}
			ce := errcode.As(err)
			if !strings.Contains(ce.Message, tt.wantErr) || !strings.Contains(ce.Hint, tt.wantHint) {
				t.Errorf("Approved(%q) = %q (hint %q); want %q, hint with %q", tt.approver, ce.Message, ce.Hint, tt.wantErr, tt.wantHint)
			}
			if ce.Exit() != errcode.ExitRefused {
				t.Errorf("exit code = %d, want %d", ce.Exit(), errcode.ExitRefused)
			}
		})
	}
}

func TestNeedsApproval(t *testing.T) {
	t.Parallel()
	hit := []ProductionHit{{Address: "fixture_domain.d"}}

	tests := []struct {
		environment string
		hits        []ProductionHit
		want        bool
	}{
		{"production", nil, true},
		{"preview", nil, false},
		{"preview", hit, true},
		{"Production", nil, false}, // names are case-sensitive, like the store's
	}
	for _, tt := range tests {
		if got := NeedsApproval(tt.environment, tt.hits); got != tt.want {
			t.Errorf("NeedsApproval(%q, %d hits) = %v, want %v", tt.environment, len(tt.hits), got, tt.want)
		}
	}
}

func TestParentsOf(t *testing.T) {
	t.Parallel()
	rules := Rules{Parents: map[string][]string{
		"fixture_list_entry":                   {"list"},
		"vercel_project_environment_variable":  {"project_id"},
		"vercel_project_environment_variables": {"project_id"},
		"fixture_grid_cell":                    {"row", "grid"}, // listed out of order
		"fixture_numbered":                     {"n"},
	}}
	entry := func(addr string, actions tfjson.Actions, before, after string) *tfjson.ResourceChange {
		var b, a map[string]any
		if before != "" {
			b = map[string]any{"list": before, "entry": addr}
		}
		if after != "" {
			a = map[string]any{"list": after, "entry": addr}
		}
		return policyChange(addr, "fixture_list_entry", actions, b, a, nil)
	}
	envVar := func(addr, typ, project string) *tfjson.ResourceChange {
		rc := policyChange(addr, typ, actCreate, nil, map[string]any{"project_id": project, "key": "K"}, nil)
		rc.ProviderName = vercelSource
		return rc
	}

	tests := map[string]struct {
		changes        []*tfjson.ResourceChange
		want           []Parent
		wantUnresolved []UnresolvedParent
	}{
		"none declared for the type": {
			changes: []*tfjson.ResourceChange{policyChange("fixture_object.a", "fixture_object", actCreate, nil, map[string]any{"list": "x"}, nil)},
		},
		"one parent, entries deduplicated": {
			changes: []*tfjson.ResourceChange{
				entry("fixture_list_entry.b", actCreate, "", "allow-urls"),
				entry("fixture_list_entry.a", actDelete, "allow-urls", ""),
				entry("fixture_list_entry.c", actUpdate, "allow-urls", "allow-urls"),
			},
			want: []Parent{{
				Key:      "fixture|list=allow-urls",
				Name:     "list=allow-urls (parent of fixture_list_entry)",
				Children: []string{"fixture_list_entry.a", "fixture_list_entry.b", "fixture_list_entry.c"},
			}},
		},
		"sorted by key, whatever the plan's order": {
			changes: []*tfjson.ResourceChange{
				entry("fixture_list_entry.z", actCreate, "", "zeta"),
				entry("fixture_list_entry.a", actCreate, "", "alpha"),
				entry("fixture_list_entry.m", actCreate, "", "mu"),
			},
			want: []Parent{
				{Key: "fixture|list=alpha", Name: "list=alpha (parent of fixture_list_entry)", Children: []string{"fixture_list_entry.a"}},
				{Key: "fixture|list=mu", Name: "list=mu (parent of fixture_list_entry)", Children: []string{"fixture_list_entry.m"}},
				{Key: "fixture|list=zeta", Name: "list=zeta (parent of fixture_list_entry)", Children: []string{"fixture_list_entry.z"}},
			},
		},
		"a replacement moving an entry counts under both parents": {
			changes: []*tfjson.ResourceChange{entry("fixture_list_entry.a", actReplace, "old", "new")},
			want: []Parent{
				{Key: "fixture|list=new", Name: "list=new (parent of fixture_list_entry)", Children: []string{"fixture_list_entry.a"}},
				{Key: "fixture|list=old", Name: "list=old (parent of fixture_list_entry)", Children: []string{"fixture_list_entry.a"}},
			},
		},
		"no-ops, reads and forgets take no lease": {
			changes: []*tfjson.ResourceChange{
				entry("fixture_list_entry.a", actNoop, "x", "x"),
				entry("fixture_list_entry.b", actForget, "y", ""),
			},
		},
		"two entry types of one parent share it": {
			changes: []*tfjson.ResourceChange{
				envVar("vercel_project_environment_variables.all", "vercel_project_environment_variables", "prj_1"),
				envVar("vercel_project_environment_variable.one", "vercel_project_environment_variable", "prj_1"),
			},
			want: []Parent{{
				Key:      "vercel|project_id=prj_1",
				Name:     "project_id=prj_1 (parent of vercel_project_environment_variable, vercel_project_environment_variables)",
				Children: []string{"vercel_project_environment_variable.one", "vercel_project_environment_variables.all"},
			}},
		},
		"several attributes, sorted by name; non-strings as JSON": {
			changes: []*tfjson.ResourceChange{
				policyChange("fixture_grid_cell.c", "fixture_grid_cell", actCreate, nil, map[string]any{"row": float64(3), "grid": "g"}, nil),
				policyChange("fixture_numbered.n", "fixture_numbered", actCreate, nil, map[string]any{"n": map[string]any{"b": 1.0, "a": true}}, nil),
			},
			want: []Parent{
				{Key: "fixture|grid=g,row=3", Name: "grid=g,row=3 (parent of fixture_grid_cell)", Children: []string{"fixture_grid_cell.c"}},
				{Key: `fixture|n={"a":true,"b":1}`, Name: `n={"a":true,"b":1} (parent of fixture_numbered)`, Children: []string{"fixture_numbered.n"}},
			},
		},
		"unknown or null parent attributes are unresolved": {
			changes: []*tfjson.ResourceChange{
				policyChange("fixture_list_entry.new", "fixture_list_entry", actCreate, nil, map[string]any{"entry": "e"}, map[string]any{"list": true}),
				policyChange("fixture_grid_cell.c", "fixture_grid_cell", actCreate, nil, map[string]any{"row": nil, "grid": "g"}, nil),
				// Its old parent is known: the lease on it is still taken.
				policyChange("fixture_list_entry.moved", "fixture_list_entry", actUpdate, map[string]any{"list": "old"}, map[string]any{}, map[string]any{"list": true}),
			},
			want: []Parent{{Key: "fixture|list=old", Name: "list=old (parent of fixture_list_entry)", Children: []string{"fixture_list_entry.moved"}}},
			wantUnresolved: []UnresolvedParent{
				{Address: "fixture_grid_cell.c", Type: "fixture_grid_cell", Unknown: []string{"row"}},
				{Address: "fixture_list_entry.moved", Type: "fixture_list_entry", Unknown: []string{"list"}},
				{Address: "fixture_list_entry.new", Type: "fixture_list_entry", Unknown: []string{"list"}},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := policyPlan(tt.changes...)

			got := rules.ParentsOf(p)
			unresolved := rules.UnresolvedParents(p)

			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParentsOf (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUnresolved, unresolved, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("UnresolvedParents (-want +got):\n%s", diff)
			}
		})
	}

	if got := rules.ParentsOf(nil); len(got) != 0 {
		t.Errorf("ParentsOf(nil) = %v", got)
	}
}

func TestParentLeaseScope(t *testing.T) {
	t.Parallel()
	keys := []string{"fixture|list=allow-urls", "fixture|list=allow-urls2", "", "../../etc", strings.Repeat("x", 10000), "ü|a=b"}
	seen := map[string]string{}
	for _, k := range keys {
		s := ParentLeaseScope(k)
		if err := runctx.ValidName("scope", s); err != nil {
			t.Errorf("ParentLeaseScope(%q) = %q, not a valid scope: %v", k, s, err)
		}
		if !store.IsParentScope(s) || len(s) != len(ParentLeaseScopePrefix)+32 {
			t.Errorf("ParentLeaseScope(%q) = %q, want %s and 32 hex digits", k, s, ParentLeaseScopePrefix)
		}
		if ParentLeaseScope(k) != s {
			t.Errorf("ParentLeaseScope(%q) is not deterministic", k)
		}
		if other, dup := seen[s]; dup {
			t.Errorf("ParentLeaseScope(%q) = ParentLeaseScope(%q) = %q", k, other, s)
		}
		seen[s] = k
	}
	// Pinned: the wrapper and sponson_lease of different versions must agree.
	if got, want := ParentLeaseScope("fixture|list=allow-urls"), "_parent-7b5a2444ab63d4a59805682a70a60636"; got != want {
		t.Errorf("ParentLeaseScope = %q, want %q", got, want)
	}
	for _, scope := range []string{"main", "pr-42", "branch-feat-x"} {
		if store.IsParentScope(scope) {
			t.Errorf("store.IsParentScope(%q) = true", scope)
		}
	}
}

func TestProviderType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"registry.terraform.io/vercel/vercel":   "vercel",
		"registry.opentofu.org/vercel/vercel":   "vercel",
		"registry.opentofu.org/sponson/fixture": "fixture",
		"fixture":                               "fixture",
		"":                                      "",
	} {
		if got := ProviderType(in); got != want {
			t.Errorf("ProviderType(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStateOnly: the table matches a provider by namespace and type on any
// registry host; a policy adds types; other types of the same providers
// are not state-only.
func TestStateOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider, typ string
		extra         []string
		want          bool
	}{
		{"terraform.io/builtin/terraform", "terraform_data", nil, true},
		{"registry.terraform.io/hashicorp/random", "random_pet", nil, true},
		{"registry.opentofu.org/hashicorp/random", "random_id", nil, true},
		{"registry.opentofu.org/hashicorp/tls", "tls_private_key", nil, true},
		{"registry.terraform.io/hashicorp/null", "null_resource", nil, true},
		{"registry.terraform.io/hashicorp/local", "local_file", nil, false},
		{"registry.terraform.io/acme/random", "random_pet", nil, false},
		{"registry.terraform.io/acme/token", "acme_token", []string{"acme_token"}, true},
		{"registry.terraform.io/hashicorp/aws", "aws_s3_bucket", nil, false},
	} {
		if got := StateOnly(tc.provider, tc.typ, tc.extra); got != tc.want {
			t.Errorf("StateOnly(%s, %s, %v) = %v, want %v", tc.provider, tc.typ, tc.extra, got, tc.want)
		}
	}
}
