package pgstore

import (
	"context"
	"errors"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Every store lists its receipts for the overview.
var _ store.History = (*Store)(nil)

// ReceiptHistory returns every receipt the receipts table keeps of the
// scope, one row per run (WriteReceipt replaces a run's checkpoint with its
// outcome), oldest first (store.SortHistory); nil when it has none. One
// SELECT, read-only: the overview's timeline (docs/design.md §4.8),
// store.History.
func (s *Store) ReceiptHistory(ctx context.Context, key store.Key) ([]*receipt.Receipt, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	type row struct{ runID, body string }
	var rows []row
	err := s.do(ctx, "read the receipts of "+key.String(), func(ctx context.Context, _ int) error {
		rows = nil
		rs, err := s.pool.Query(ctx, s.sql(`
SELECT run_id, body::text FROM {s}.receipts
 WHERE env = $1 AND scope = $2 AND stack = $3`), key.Environment, key.Scope, key.Stack)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.runID, &r.body); err != nil {
				return err
			}
			rows = append(rows, r)
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	var out []*receipt.Receipt
	for _, r := range rows {
		rec, err := receipt.Parse([]byte(r.body))
		if err != nil {
			where := "the receipt of run " + r.runID + " of " + key.String()
			var e *errcode.Error
			if errors.As(err, &e) {
				return nil, (&errcode.Error{Code: e.Code, Message: where + ": " + e.Message, Hint: e.Hint, Err: e}).With("scope", key.String())
			}
			return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "%s", where)
		}
		out = append(out, rec)
	}
	store.SortHistory(out)
	return out, nil
}
