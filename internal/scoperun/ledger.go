package scoperun

import "github.com/sponson/terraform-provider-sponson/internal/receipt"

// What the phases read of a ledger entry: whether a run has vouched for it
// yet (settle, record), and the ledger carried forward (commit, unchanged).

// isIntent reports whether a ledger entry is an unsettled intent.
func isIntent(e receipt.Entry) bool { return e.CreatedBy == receipt.CreatedByIntent }

// isOpen reports whether no run has vouched for e yet.
func isOpen(e receipt.Entry) bool {
	return isIntent(e) || e.CreatedBy == receipt.CreatedByUnresolved
}

// carried returns a copy of the previous ledger, empty when there is none.
func carried(prev *receipt.Receipt) []receipt.Entry {
	out := []receipt.Entry{}
	if prev != nil {
		out = append(out, prev.Ledger...)
	}
	return out
}
