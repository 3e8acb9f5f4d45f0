package scoperun

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"
)

// TestPlannedValues: an intent keeps the known, non-sensitive scalar
// values of its planned change, capped, and nothing of a change the plan
// marks sensitive as a whole.
func TestPlannedValues(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxPlannedValue+10)
	got := plannedValues(&tfjson.Change{
		After: map[string]any{"name": "logs", "count": float64(3), "on": true, "id": nil, "secret": "s3cr3t",
			"tags": map[string]any{"a": "b"}, "arn": nil, "long": long, "part": map[string]any{"k": "v"}},
		AfterUnknown:   map[string]any{"arn": true, "id": true},
		AfterSensitive: map[string]any{"secret": true, "part": map[string]any{"k": true}},
	})
	want := map[string]string{"name": "logs", "count": "3", "on": "true", "long": long[:maxPlannedValue] + "…"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("planned values (-want +got):\n%s", diff)
	}
	if got := plannedValues(&tfjson.Change{After: map[string]any{"name": "x"}, AfterSensitive: true}); got != nil {
		t.Errorf("a change sensitive as a whole kept %v", got)
	}
}
