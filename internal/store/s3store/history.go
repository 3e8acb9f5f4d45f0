package s3store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// historyReads is how many receipt bodies ReceiptHistory reads at a time.
const historyReads = 8

// Every store lists its receipts for the overview.
var _ store.History = (*Store)(nil)

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
	if err := s.ready(ctx, false); err != nil {
		return nil, err
	}
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	dir := s.scopeDir(key)
	objs, err := s.list(ctx, dir+"receipts/")
	if err != nil {
		return nil, err
	}
	cur, err := s.readPointer(ctx, key)
	if err != nil {
		return nil, err
	}
	var names []string
	at := map[string]time.Time{}
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, dir)
		if rest, ok := strings.CutPrefix(name, "receipts/"); ok && strings.HasSuffix(rest, ".json") && !strings.Contains(rest, "/") {
			names = append(names, name)
			at[name] = o.At
		}
	}
	if c := cur.p.Receipt; c != "" {
		if _, listed := at[c]; !listed {
			names = append(names, c)
		}
	}
	got := make([]*receipt.Receipt, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, historyReads)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			o, err := s.get(ctx, dir+name)
			if errors.Is(err, errNotFound) {
				return // retired since the listing: its run's later body replaced it
			}
			if err == nil {
				got[i], err = parseReceipt(dir+name, o.Data)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	type kept struct {
		r       *receipt.Receipt
		at      time.Time
		current bool
	}
	byRun := map[string]kept{}
	for i, name := range names {
		r := got[i]
		if r == nil {
			continue
		}
		k := kept{r: r, at: at[name], current: name == cur.p.Receipt}
		if prev, seen := byRun[r.RunID]; seen && (prev.current || !k.current && !k.at.After(prev.at)) {
			continue
		}
		byRun[r.RunID] = k
	}
	var out []*receipt.Receipt
	for _, k := range byRun {
		out = append(out, k.r)
	}
	store.SortHistory(out)
	return out, nil
}
