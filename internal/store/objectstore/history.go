package objectstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Every store lists its receipts for the overview.
var _ store.History = (*Store)(nil)

// historyReads is how many receipt bodies ReceiptHistory reads at a time.
const historyReads = 8

// ReceiptHistory returns every receipt body kept under the scope's
// receipts/, one per run, oldest first (store.SortHistory); nil when it has
// none. WriteReceipt keeps each run's receipt, retiring only the run's own
// earlier one (its checkpoint), and CollectGarbage never takes receipts:
// the bodies are the history. It reads, never writes: one listing, the
// pointer, and one read per body (historyReads at a time); the overview's
// timeline (docs/design.md §4.8), store.History.
//
// Where a run has two bodies (a retire that failed, or a refused write whose
// body outlived its deletion), the one the pointer names wins, else the
// newer. The pointer is read after the listing, so a receipt written in
// between, which the listing missed, is still the timeline's last.
func (s *Store) ReceiptHistory(ctx context.Context, key store.Key) ([]*receipt.Receipt, error) {
	if err := s.objects.Ready(ctx, false); err != nil {
		return nil, err
	}
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	dir := s.scopeDir(key)
	objs, err := s.objects.List(ctx, dir+"receipts/")
	if err != nil {
		return nil, err
	}
	cur, err := s.readPointer(ctx, key)
	if err != nil {
		return nil, err
	}
	var bodies []historyBody
	listed := map[string]bool{}
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, dir)
		if rest, ok := strings.CutPrefix(name, "receipts/"); ok && strings.HasSuffix(rest, ".json") && !strings.Contains(rest, "/") {
			bodies = append(bodies, historyBody{name: name, at: o.At, current: name == cur.p.Receipt})
			listed[name] = true
		}
	}
	if c := cur.p.Receipt; c != "" && !listed[c] {
		bodies = append(bodies, historyBody{name: c, current: true})
	}
	if err := s.readHistory(ctx, dir, bodies); err != nil {
		return nil, err
	}
	return oneReceiptPerRun(bodies), nil
}

// historyBody is one receipt body of a scope: its name under the scope,
// when it was written, whether the pointer names it, and, once read, the
// receipt (nil when it was retired since the listing).
type historyBody struct {
	name    string
	at      time.Time
	current bool
	r       *receipt.Receipt
}

// readHistory reads and parses the bodies, historyReads at a time.
func (s *Store) readHistory(ctx context.Context, dir string, bodies []historyBody) error {
	errs := make([]error, len(bodies))
	sem := make(chan struct{}, historyReads)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			b := &bodies[i]
			o, err := s.objects.Get(ctx, dir+b.name)
			if errors.Is(err, ErrNotFound) {
				return // retired since the listing: its run's later body replaced it
			}
			if err == nil {
				b.r, err = parseReceipt(dir+b.name, o.Data)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// oneReceiptPerRun keeps one body of each run, the one the pointer names
// or else the newer, oldest run first.
func oneReceiptPerRun(bodies []historyBody) []*receipt.Receipt {
	byRun := map[string]historyBody{}
	for _, b := range bodies {
		if b.r == nil {
			continue
		}
		if prev, seen := byRun[b.r.RunID]; seen && (prev.current || !b.current && !b.at.After(prev.at)) {
			continue
		}
		byRun[b.r.RunID] = b
	}
	var out []*receipt.Receipt
	for _, b := range byRun {
		out = append(out, b.r)
	}
	store.SortHistory(out)
	return out
}
