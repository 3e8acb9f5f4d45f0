package overview

import (
	"context"
	"slices"
	"sync"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Timelines keeps the scopes' timelines from one Build to the next (serve,
// whose page asks for the model every 2 s): a scope's timeline is read
// from the store (HistoryReader) again only when its last run changed.
// Every store keeps a run's receipt as written and adds one only as the
// scope's latest (§2.2), so an unchanged last run is an unchanged
// timeline; on S3, GCS and Azure a timeline costs a listing and a read per
// run, on git a read of the branch. It holds the timelines' lines, never a
// receipt. The zero value is ready; a nil *Timelines keeps nothing.
type Timelines struct {
	mu sync.Mutex
	m  map[store.Key]kept
}

type kept struct {
	last     Run
	timeline []Run
}

// timeline returns key's timeline: the one kept when last is the run it
// was read after, else the store's, kept for the next Build.
func (c *Timelines) timeline(ctx context.Context, hr HistoryReader, key store.Key, last *Run) ([]Run, error) {
	if c != nil && last != nil {
		c.mu.Lock()
		k, ok := c.m[key]
		c.mu.Unlock()
		if ok && sameRun(k.last, *last) {
			return slices.Clone(k.timeline), nil
		}
	}
	rs, err := hr.ReceiptHistory(ctx, key)
	if err != nil {
		return nil, err
	}
	tl := make([]Run, 0, len(rs))
	for _, r := range rs {
		tl = append(tl, runOf(r))
	}
	if c != nil && last != nil {
		c.mu.Lock()
		if c.m == nil {
			c.m = map[store.Key]kept{}
		}
		c.m[key] = kept{last: *last, timeline: slices.Clone(tl)}
		c.mu.Unlock()
	}
	return tl, nil
}

// sameRun reports whether two lines are of the same receipt as written:
// every field alike, times as instants.
func sameRun(a, b Run) bool {
	if !a.StartedAt.Equal(b.StartedAt) || !a.FinishedAt.Equal(b.FinishedAt) {
		return false
	}
	a.StartedAt, a.FinishedAt = b.StartedAt, b.FinishedAt
	return a == b
}
