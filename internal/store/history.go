package store

import (
	"context"
	"sort"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// History is a store that can list every receipt it kept of a scope, one
// per run, read-only: the overview's timeline (docs/design.md §4.8). It is
// not part of Store: every backend keeps each run's own receipt (§2.2), and
// reading them back is a listing beyond what a run needs.
type History interface {
	// ReceiptHistory returns the scope's receipts, one per run (a run's
	// latest write of its own receipt), oldest first (SortHistory); nil
	// when it has none.
	ReceiptHistory(ctx context.Context, key Key) ([]*receipt.Receipt, error)
}

// SortHistory orders receipts oldest first: by start time, then run id.
func SortHistory(rs []*receipt.Receipt) {
	sort.SliceStable(rs, func(i, j int) bool {
		if !rs[i].StartedAt.Equal(rs[j].StartedAt) {
			return rs[i].StartedAt.Before(rs[j].StartedAt)
		}
		return rs[i].RunID < rs[j].RunID
	})
}
