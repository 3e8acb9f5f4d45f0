package store

import (
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// What every backend does at a fenced write (docs/design.md §2.8 "Fenced
// write"): the receipt it stores, and the error of a refused write.

// Lost returns ErrLeaseLost for k with the reason, as every backend reports a
// refused fenced write.
func Lost(k Key, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrLeaseLost, k, why)
}

// EncodeReceipt checks r for a write under the lease of k and renders it as
// stored, compact when r is written against a base (WriteCompact); it
// returns the copy that reads back, its ledger whole, for the backend's
// index. A backend never stores a receipt it would later report as corrupt.
func EncodeReceipt(k Key, r *receipt.Receipt) ([]byte, *receipt.Receipt, error) {
	if r == nil {
		return nil, nil, errcode.New(errcode.Internal, "no receipt to write for %s", k)
	}
	if r.Compact() {
		// Read as stored and never expanded: its Ledger is empty, and
		// writing it would index a scope that owns nothing.
		return nil, nil, errcode.New(errcode.Internal, "the receipt of run %s for %s names a ledger base but was not expanded", r.RunID, k)
	}
	if err := CheckName("run id", r.RunID); err != nil {
		return nil, nil, err
	}
	if r.Stack == "" && k.Stack != "" {
		// A receipt carried over from before stacks (a predecessor being
		// rewritten after a migration) takes the stack it is stored under.
		c := *r
		c.Stack = k.Stack
		r = &c
	}
	if r.Environment != k.Environment || r.Scope != k.Scope || r.Stack != k.Stack {
		return nil, nil, errcode.New(errcode.Internal, "receipt of %s/%s (stack %q) written under the lease of %s", r.Environment, r.Scope, r.Stack, k)
	}
	data, err := receipt.Marshal(r)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "encode the receipt of run %s", r.RunID)
	}
	parsed, err := receipt.Parse(data)
	if err == nil {
		parsed, err = parsed.Expand(r.WriteAgainst)
	}
	if err == nil && len(parsed.Ledger) != len(r.Ledger) {
		err = fmt.Errorf("its ledger of %d entries reads back as %d", len(r.Ledger), len(parsed.Ledger))
	}
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "refusing to store a receipt that would not read back")
	}
	return data, parsed, nil
}
