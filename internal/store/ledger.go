package store

import (
	"context"
	"sync"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// A scope's large ledger is kept as a base record (receipt.Base), written
// once under the lease like every record, and its receipts carry only how
// they differ from it (docs/design.md §2.17 "Ledger base"). It is done here,
// above the backends, so that every backend keeps it the same way: a
// backend stores the compact receipt WriteCompact gives it, and indexes the
// whole ledger (EncodeReceipt returns it); Latest and ListScopes expand
// what they read.

// CompactFrom is the ledger size from which a run's receipts are written
// against a base: below it a whole receipt (under about 600 KB) costs less
// than a base's second write and read.
const CompactFrom = 2000

// rebaseAt is the share of a ledger its delta may write out before the next
// receipt starts a new base: a write is then at most that share of the
// ledger, and usually the few entries the runs since the base changed.
const rebaseAt = 4

// RecordReader reads a scope's records: what expanding a compact receipt
// needs, and the reading part of Records.
type RecordReader interface {
	// ReadRecord returns a record, nil if there is none.
	ReadRecord(ctx context.Context, key Key, name string) ([]byte, error)
}

// CompactWriter is what WriteCompact needs of a store.
type CompactWriter interface {
	Receipts
	RecordReader
	WriteRecord(ctx context.Context, l Lease, name string, data []byte) error
}

// WriteCompact stores r as the scope's latest receipt, fenced by l, against
// the scope's ledger base when its ledger has at least from entries
// (CompactFrom): known is the base the caller last wrote or found, nil at
// first. It returns the base to give the next write (nil when r was
// written whole). A new base, written when there is none or the delta has
// grown past a quarter of the ledger, is a fenced record write of its own,
// before the receipt that names it; a base is never changed or removed
// while its scope lives, so a receipt never names a base that is gone.
func WriteCompact(ctx context.Context, s CompactWriter, l Lease, r *receipt.Receipt, known *receipt.Base, from int) (*receipt.Base, error) {
	if r == nil || len(r.Ledger) < from {
		return nil, s.WriteReceipt(ctx, l, r)
	}
	b := known
	if b == nil {
		var err error
		if b, err = currentBase(ctx, s, l.Key); err != nil {
			return nil, err
		}
	}
	if b == nil || receipt.Literal(receipt.Delta(b.Entries, r.Ledger))*rebaseAt > len(r.Ledger) {
		nb, data, err := receipt.NewBase(r.Ledger)
		if err != nil {
			return nil, err
		}
		if err := s.WriteRecord(ctx, l, nb.Name, data); err != nil {
			return nil, err
		}
		bases.put(nb)
		b = nb
	}
	return b, s.WriteReceipt(ctx, l, r.Against(b))
}

// currentBase is the base the scope's latest receipt is written against,
// nil when it is written whole or there is none.
func currentBase(ctx context.Context, s CompactWriter, key Key) (*receipt.Base, error) {
	r, err := s.LatestReceipt(ctx, key)
	if err != nil || r == nil || !r.Compact() {
		return nil, err
	}
	return readBase(ctx, s, key, r.LedgerBase)
}

// expand returns r with its ledger whole: read against its base when r is
// compact, r itself otherwise.
func expand(ctx context.Context, s RecordReader, key Key, r *receipt.Receipt) (*receipt.Receipt, error) {
	if r == nil || !r.Compact() {
		return r, nil
	}
	b, err := readBase(ctx, s, key, r.LedgerBase)
	if err != nil {
		return nil, err
	}
	return r.Expand(b)
}

// readBase returns the base called name of the scope key, from the cache
// when this process has read or written it.
func readBase(ctx context.Context, s RecordReader, key Key, name string) (*receipt.Base, error) {
	if b := bases.get(name); b != nil {
		return b, nil
	}
	if err := CheckName("ledger base", name); err != nil || !receipt.IsBase(name) {
		return nil, errcode.New(errcode.ReceiptCorrupt, "the latest receipt of %s names %q as its ledger base", key, name).With("scope", key.String())
	}
	data, err := s.ReadRecord(ctx, key, name)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, errcode.New(errcode.ReceiptCorrupt, "the ledger base %s of %s is missing: its latest receipt cannot be read", name, key).With("scope", key.String())
	}
	b, err := receipt.ParseBase(name, data)
	if err != nil {
		e := errcode.As(err)
		e.Message = "the ledger of " + key.String() + ": " + e.Message
		return nil, e.With("scope", key.String())
	}
	bases.put(b)
	return b, nil
}

// bases keeps the last few bases this process read or wrote. A base is
// named by its content's hash, so a cached one is right for any store that
// names it; a run reads and writes one scope, so a few suffice.
var bases = &baseCache{max: 4}

type baseCache struct {
	mu    sync.Mutex
	max   int
	order []*receipt.Base
}

func (c *baseCache) get(name string) *receipt.Base {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.order {
		if b.Name == name {
			return b
		}
	}
	return nil
}

func (c *baseCache) put(b *receipt.Base) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, have := range c.order {
		if have.Name == b.Name {
			return
		}
	}
	if len(c.order) == c.max {
		c.order = append(c.order[:0], c.order[1:]...)
	}
	c.order = append(c.order, b)
}
