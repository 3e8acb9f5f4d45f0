package store

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// JournalRecord is the record (Records) in which a run under way keeps the
// completions of its apply (receipt.Journal; docs/design.md §2.4
// "Intent"). Each write replaces the one before, fenced like every write
// of the run; the next run's journal replaces it in turn.
const JournalRecord = "completions"

// LatestReader reads what Latest joins: a scope's latest receipt and its
// records.
type LatestReader interface {
	LatestReceipt(ctx context.Context, key Key) (*receipt.Receipt, error)
	RecordReader
}

// Latest returns the scope's latest receipt as a run reads it: its ledger
// whole (read against its base when it is compact, WriteCompact), and when
// it is the checkpoint of a run under way or killed, with the completions
// that run recorded in its journal since. Every reader of a scope's receipt
// outside the stores reads it here, so none sees a checkpoint without its
// completions or a ledger without its base. A finished receipt of a small
// ledger costs no second read.
func Latest(ctx context.Context, s LatestReader, key Key) (*receipt.Receipt, error) {
	r, err := s.LatestReceipt(ctx, key)
	if err == nil {
		r, err = expand(ctx, s, key, r)
	}
	if err != nil || r == nil || r.Status != receipt.StatusRunning {
		return r, err
	}
	data, err := s.ReadRecord(ctx, key, JournalRecord)
	if err != nil || data == nil {
		return r, err
	}
	j, err := receipt.ParseJournal(data)
	if err != nil {
		// Keep ParseJournal's code; say whose journal it was.
		e := errcode.As(err)
		e.Message = "the checkpoint journal of " + key.String() + ": " + e.Message
		return nil, e.With("scope", key.String())
	}
	return r.Joined(j), nil
}
