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
	cfg.About = r.holderInfo()
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	var since time.Time
	cfg.OnWait = func(l store.LeaseInfo) {
		if n := len(r.res.LeaseWaits); n > 0 && r.res.LeaseWaits[n-1].Holder == l.Holder {
			r.res.LeaseWaits[n-1] = l
		} else {
			r.res.LeaseWaits = append(r.res.LeaseWaits, l)
		}
		if since.IsZero() {
			since = now()
		}
		ev := WaitEvent{Key: r.key, Lease: l, Waited: now().Sub(since)}
		r.progress(Progress{Step: StepLease, Message: ev.Line()})
		if r.o.Report.OnWait != nil {
			r.o.Report.OnWait(ev)
		} else {
			r.info(ev.Line())
		}
	}
	held, err := lease.Acquire(ctx, r.o.Store, r.key, r.o.RunID, cfg)
	if !since.IsZero() && r.o.Report.OnWait != nil {
		r.o.Report.OnWait(WaitEvent{Key: r.key, Done: true})
	}
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

// WaitEvent is one poll of a run waiting for its scope's lease, or, with
// Done, the end of the wait (granted or not). The wrapper renders it: on a
// terminal one line updated in place, in a CI log a line at most every 30 s.
type WaitEvent struct {
	Key    store.Key
	Lease  store.LeaseInfo // the lease waited for
	Waited time.Duration   // since the first poll found it held
	Done   bool
}

// Line is the event as one line: "waiting for preview/pr-42 (stack app):
// held by run 3c1f2a9b (https://…/runs/123, @alice, commit 1a2b3c4) since
// 10:02, lease until 10:17 — waited 40s".
func (e WaitEvent) Line() string {
	return fmt.Sprintf("waiting for %s: held by %s — waited %s", e.Key, lease.Describe(e.Lease), e.Waited.Round(time.Second))
}
