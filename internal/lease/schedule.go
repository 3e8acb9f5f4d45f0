package lease

import (
	"context"
	"errors"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Schedule is the renewal pacing of a lease with one TTL (docs/design.md
// §2.7 "Lease"). The wrapper's background renewal (Held) and the provider's
// sponson_lease, whose renewals the engine calls at the time it was given,
// both follow it.
type Schedule struct{ TTL time.Duration }

// Deadline is the holder's own deadline after a grant or renewal sent at
// sent: a slow answer never extends it.
func (s Schedule) Deadline(sent time.Time) time.Time { return sent.Add(s.TTL) }

// Next is when the renewal after one sent at sent is due: TTL/3 later.
func (s Schedule) Next(sent time.Time) time.Time { return sent.Add(s.TTL / 3) }

// SelfStop is when, without a successful renewal, the holder counts the
// lease as lost: TTL/5 before its own deadline, before anyone else could
// take it over.
func (s Schedule) SelfStop(deadline time.Time) time.Time { return deadline.Add(-s.TTL / 5) }

// Retry is when a renewal the store failed (without refusing it) is tried
// again by a holder paced from outside: a tenth of the TTL later, between a
// second and ten seconds, so that a brief outage costs one retry and not
// the lease. The background renewal instead keeps its TTL/3 pace.
func (s Schedule) Retry(now time.Time) time.Time {
	return now.Add(min(max(s.TTL/10, time.Second), 10*time.Second))
}

// RetryBudget is how long a renewal sent at sent by a holder paced from
// outside may take: until its self-stop, but at least a second and at most
// TTL/3, the time to the next renewal.
func (s Schedule) RetryBudget(sent, deadline time.Time) time.Duration {
	return min(max(s.SelfStop(deadline).Sub(sent), time.Second), s.TTL/3)
}

// renew runs the paced renewal. A renewal is sent TTL/3 after the previous
// one was sent, but never before the previous one finished: at most one is
// in flight, and a slow store slows the pace instead of queueing renewals.
// Between renewals a deadline check stops the run at its own deadline even
// when a renewal hangs in the store.
func (h *Held) renew() {
	defer close(h.renewDone)
	lastSent := h.cfg.Now()
	for {
		h.mu.Lock()
		selfStop := h.sched.SelfStop(h.validUntil)
		h.mu.Unlock()
		next := h.sched.Next(lastSent)
		wake := next
		if selfStop.Before(wake) {
			wake = selfStop
		}
		timer := h.cfg.Clock.NewTimer(max(wake.Sub(h.cfg.Now()), 0))
		select {
		case <-h.stop:
			timer.Stop()
			return
		case <-h.lost:
			timer.Stop()
			return
		case <-timer.Chan():
		}
		if h.Check() != nil {
			return
		}
		if h.cfg.Now().Before(next) {
			continue // woke for the deadline check, not for a renewal
		}
		lastSent = h.renewOnce()
	}
}

// renewOnce sends one renewal and waits for it, at most until the run's own
// deadline. It returns the send time.
func (h *Held) renewOnce() time.Time {
	cur := h.Lease()
	h.mu.Lock()
	budget := max(h.sched.SelfStop(h.validUntil).Sub(h.cfg.Now()), time.Millisecond)
	h.mu.Unlock()
	// The budget is on the lease's clock (Config.Clock): for the real one
	// this is context.WithTimeout.
	ctx, cancel := clockwork.WithTimeout(context.Background(), h.cfg.Clock, budget)
	defer cancel()
	type answer struct {
		l   store.Lease
		err error
	}
	sent := h.cfg.Now()
	answered := make(chan answer, 1)
	go func() {
		l, err := h.st.Renew(ctx, cur, h.cfg.TTL)
		answered <- answer{l, err}
	}()
	// The store may ignore ctx; the run's deadline must not depend on it.
	select {
	case <-h.stop:
	case <-ctx.Done():
		h.markLost(errors.New("the store did not answer the renewal before the run's own deadline"))
	case a := <-answered:
		switch {
		case a.err == nil:
			h.mu.Lock()
			h.lease = a.l
			h.validUntil = h.sched.Deadline(sent)
			h.renewals++
			h.mu.Unlock()
		case errors.Is(a.err, store.ErrLeaseLost):
			h.markLost(a.err)
		default:
			// A store that is slow or briefly unavailable is retried at
			// the next interval; the deadline decides when to give up.
		}
	}
	return sent
}
