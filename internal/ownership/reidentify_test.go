package ownership

import (
	"slices"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

func TestChangedSchemes(t *testing.T) {
	t.Parallel()
	was := map[string][]string{"a": {"x"}, "b": {"y"}, "gone": {"z"}}
	now := map[string][]string{"a": {"x"}, "b": {"y", "w"}, "new": {"v"}}
	if got := ChangedSchemes(was, now); !slices.Equal(got, []string{"b", "gone", "new"}) {
		t.Errorf("ChangedSchemes = %v", got)
	}
	if got := ChangedSchemes(nil, nil); got != nil {
		t.Errorf("no declaration either side: %v", got)
	}
	back, err := ParseSchemes(EncodeSchemes(now))
	if err != nil || len(ChangedSchemes(back, now)) != 0 {
		t.Errorf("the record does not round-trip: %v, %v", back, err)
	}
}

// A re-index computes the changed types' entries again from the state and
// keeps how they came to be owned; open entries and other types stay.
func TestReidentified(t *testing.T) {
	t.Parallel()
	file := Object{Address: "local_file.f", Provider: "p", Type: "local_file", ID: "sha", Attributes: map[string]any{"id": "sha", "filename": "out/f"}}
	data := Object{Address: "terraform_data.d", Provider: "p", Type: "terraform_data", ID: "u"}
	ledger, _ := Ledger(nil, []Object{file, data}, Policy{}, nil)
	for i := range ledger {
		ledger[i].CreatedBy = receipt.CreatedByInherited
	}
	ledger = append(ledger, receipt.Entry{Address: "local_file.open", Type: "local_file", CreatedBy: receipt.CreatedByUnresolved, Identity: "open"})
	pol := Policy{Declared: map[string][]string{"local_file": {"filename"}}}
	got, n := Reidentified(ledger, []Object{file, data}, pol, []string{"local_file"})
	if n != 1 || got[0].Identity != `p|local_file|filename="out/f"` || got[0].CreatedBy != receipt.CreatedByInherited || !slices.Equal(got[0].Scheme, []string{"filename"}) {
		t.Errorf("re-indexed %d: %+v", n, got[0])
	}
	if got[1].Identity != ledger[1].Identity || got[2].Identity != "open" {
		t.Errorf("entries of other types or open ones changed: %+v", got[1:])
	}
}
