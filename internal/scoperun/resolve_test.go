package scoperun

import (
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// An entry left unresolved is not vouched for by whatever a person puts at
// its address later (`state mv`, an import): it stays unresolved.
func TestSettleKeepsUnresolvedWhenAnotherObjectIsAtItsAddress(t *testing.T) {
	t.Parallel()
	e := receipt.Entry{Address: "terraform_data.x", Type: "terraform_data", CreatedBy: receipt.CreatedByUnresolved}
	prev := &receipt.Receipt{RunID: "run-1", Ledger: []receipt.Entry{e}}
	s := newSettlement(&runner{}, t.Context(), nil, prev, nil, map[string]string{"terraform_data.x": "moved-here"})
	s.settleOne(e)
	if len(s.out) != 1 || s.out[0].Outcome != receipt.SettledUnresolved || len(s.unresolved) != 1 {
		t.Fatalf("settled %+v, unresolved %v; want it unresolved", s.out, s.unresolved)
	}
	// An intent of a run that stopped before its receipt is vouched for by
	// the new object the engine wrote at its address.
	e.CreatedBy = receipt.CreatedByIntent
	prev.Ledger = []receipt.Entry{e}
	s = newSettlement(&runner{}, t.Context(), nil, prev, nil, map[string]string{"terraform_data.x": "new"})
	s.settleOne(e)
	if s.out[0].Outcome != receipt.SettledClaimed {
		t.Errorf("an intent with a new object at its address: %+v, want claimed", s.out[0])
	}
}
