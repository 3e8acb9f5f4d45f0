package engine_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
)

func rc(addr string, mode tfjson.ResourceMode, actions ...tfjson.Action) *tfjson.ResourceChange {
	return &tfjson.ResourceChange{
		Address: addr,
		Mode:    mode,
		Type:    "null_resource",
		Change:  &tfjson.Change{Actions: actions},
	}
}

func managed(addr string, actions ...tfjson.Action) *tfjson.ResourceChange {
	return rc(addr, tfjson.ManagedResourceMode, actions...)
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		changes []*tfjson.ResourceChange
		want    engine.Summary
	}{
		{"no changes", nil, engine.Summary{}},
		{"create", []*tfjson.ResourceChange{managed("a", tfjson.ActionCreate)}, engine.Summary{Add: 1}},
		{"update", []*tfjson.ResourceChange{managed("a", tfjson.ActionUpdate)}, engine.Summary{Change: 1}},
		{"delete", []*tfjson.ResourceChange{managed("a", tfjson.ActionDelete)}, engine.Summary{Destroy: 1}},
		{"replace, destroy first", []*tfjson.ResourceChange{managed("a", tfjson.ActionDelete, tfjson.ActionCreate)}, engine.Summary{Add: 1, Destroy: 1}},
		{"replace, create first", []*tfjson.ResourceChange{managed("a", tfjson.ActionCreate, tfjson.ActionDelete)}, engine.Summary{Add: 1, Destroy: 1}},
		{"no-op", []*tfjson.ResourceChange{managed("a", tfjson.ActionNoop)}, engine.Summary{}},
		{"data source read", []*tfjson.ResourceChange{rc("data.a", tfjson.DataResourceMode, tfjson.ActionRead)}, engine.Summary{}},
		{"data source with a create action", []*tfjson.ResourceChange{rc("data.a", tfjson.DataResourceMode, tfjson.ActionCreate)}, engine.Summary{}},
		{"no change body", []*tfjson.ResourceChange{{Address: "a", Mode: tfjson.ManagedResourceMode}}, engine.Summary{}},
		{
			name: "mixed plan",
			changes: []*tfjson.ResourceChange{
				managed("c1", tfjson.ActionCreate),
				managed("c2", tfjson.ActionCreate),
				managed("u1", tfjson.ActionUpdate),
				managed("d1", tfjson.ActionDelete),
				managed("r1", tfjson.ActionDelete, tfjson.ActionCreate),
				managed("r2", tfjson.ActionCreate, tfjson.ActionDelete),
				managed("n1", tfjson.ActionNoop),
				rc("data.x", tfjson.DataResourceMode, tfjson.ActionRead),
				rc("data.y", tfjson.DataResourceMode, tfjson.ActionNoop),
			},
			want: engine.Summary{Add: 4, Change: 1, Destroy: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := engine.Summarize(&tfjson.Plan{ResourceChanges: tt.changes})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
			if gotEmpty, wantEmpty := got.Empty(), tt.want == (engine.Summary{}); gotEmpty != wantEmpty {
				t.Errorf("Empty() = %v, want %v", gotEmpty, wantEmpty)
			}
		})
	}
}

func TestSummarizeNilPlan(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(engine.Summary{}, engine.Summarize(nil)); diff != "" {
		t.Errorf("Summarize(nil) (-want +got):\n%s", diff)
	}
}

func TestSummaryString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    engine.Summary
		want string
	}{
		{engine.Summary{}, "0 to add, 0 to change, 0 to destroy"},
		{engine.Summary{Add: 4, Change: 1, Destroy: 3}, "4 to add, 1 to change, 3 to destroy"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.s, got, tt.want)
		}
	}
}
