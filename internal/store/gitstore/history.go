package gitstore

import (
	"context"
	"errors"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Every store lists its receipts for the overview.
var _ store.History = (*Store)(nil)

// ReceiptHistory returns every receipt the scope's branch keeps, one per
// run (receipts/<runId>.json at its tip, which WriteReceipt writes beside
// latest.json), oldest first (store.SortHistory); nil when it has none. It
// reads the tip the store reads anyway, never the branch's history: the
// overview's timeline (docs/design.md §4.8), store.History.
func (s *Store) ReceiptHistory(ctx context.Context, key store.Key) ([]*receipt.Receipt, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	dir, ok := snap.root[receiptsDir]
	if !ok || dir.mode != modeTree {
		return nil, nil
	}
	entries, err := s.tree(dir.id)
	if err != nil {
		return nil, err
	}
	var out []*receipt.Receipt
	for n := range entries {
		runID, ok := strings.CutSuffix(n, ".json")
		if !ok || checkName("run id", runID) != nil {
			continue
		}
		path := receiptsDir + "/" + n
		b, _, err := s.readFile(snap, path)
		if err != nil {
			return nil, err
		}
		r, err := receipt.Parse(b)
		if err != nil {
			where := branchOf(key) + ":" + path
			var e *errcode.Error
			if errors.As(err, &e) {
				return nil, (&errcode.Error{Code: e.Code, Message: where + ": " + e.Message, Hint: e.Hint, Err: e}).With("branch", branchOf(key))
			}
			return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "%s", where)
		}
		out = append(out, r)
	}
	store.SortHistory(out)
	return out, nil
}
