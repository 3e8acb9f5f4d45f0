package scoperun

import (
	"context"
	"fmt"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// acquire is the second phase: a run that writes takes the scope's lease,
// waiting for it when configured to, and holds it until release. A plan
// takes none; it only says when an apply of the scope is running.
func (r *runner) acquire(ctx, bg context.Context) error {
	if r.o.Command == Plan {
		r.seeRunning(ctx)
		return nil
	}
	cfg := r.o.Lease
	cfg.OnWait = func(l store.LeaseInfo) {
		if n := len(r.res.LeaseWaits); n > 0 && r.res.LeaseWaits[n-1].Holder == l.Holder {
			r.res.LeaseWaits[n-1] = l
		} else {
			r.res.LeaseWaits = append(r.res.LeaseWaits, l)
		}
		r.info(fmt.Sprintf("waiting for the lease of %s: held by %s until %s", r.key, l.Holder, l.ExpiresAt.Local().Format("15:04:05")))
	}
	held, err := lease.Acquire(ctx, r.o.Store, r.key, r.o.RunID, cfg)
	if err != nil {
		return err
	}
	r.held = held
	if p := held.Preempted; p != nil {
		r.warn(fmt.Sprintf("took over an expired lease held by %s since %s", p.Holder, p.AcquiredAt.Local().Format(time.RFC3339)))
	}
	r.onRelease(func() {
		if w := held.Release(bg); w != "" {
			r.warn(w)
		}
	})
	return nil
}

// seeRunning records and reports the live lease of an apply in progress,
// which the plan may be outdated by.
func (r *runner) seeRunning(ctx context.Context) {
	if l, err := r.o.Store.ReadLease(ctx, r.key); err == nil && l.Live(time.Now()) {
		r.res.Running = &l
		r.warn(fmt.Sprintf("apply running in this scope since %s (run %s); this plan may be outdated when it finishes", l.AcquiredAt.Local().Format("15:04"), l.Holder))
	}
}
