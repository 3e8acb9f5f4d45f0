// Package lease holds a scope lease for the length of a run: it acquires it
// (or waits for it), renews it in the background, keeps the run's own
// deadline, and releases it. It is the one place this logic lives; the
// wrapper and the provider both use it.
//
// The rules (DESIGN.md §2 "Lease", ADR 0008 of the original tool):
//   - renewal every TTL/3, each renewal scheduled only after the previous one
//     finished: a fixed ticker queued renewals faster than a slow store
//     completed them, and the run's own writes waited behind the queue;
//   - the run's deadline counts from the time each grant or renewal was
//     *sent*, not answered, so a slow answer never extends it;
//   - when less than TTL/5 remains without a successful renewal the run
//     stops itself (LOCK_LOST), before anyone else could take the lease over.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// DefaultTTL is the lease TTL when none is configured.
const DefaultTTL = 15 * time.Minute

// Config tunes Acquire.
type Config struct {
	TTL          time.Duration // DefaultTTL when zero
	Wait         bool          // poll while another run holds the lease
	WaitTimeout  time.Duration // how long to poll; 10 minutes when zero
	PollInterval time.Duration // 2 s when zero
	// OnWait is called before each poll with the lease being waited for.
	OnWait func(store.LeaseInfo)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (c *Config) defaults() {
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = 10 * time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Held is a lease this run holds.
type Held struct {
	st  store.Store
	cfg Config

	mu         sync.Mutex
	lease      store.Lease
	validUntil time.Time // the run's own deadline: last send time + TTL
	lostErr    error

	lost      chan struct{}
	lostOnce  sync.Once
	stop      chan struct{}
	renewDone chan struct{}
	stopOnce  sync.Once

	// Preempted is the expired lease this run took over, if any.
	Preempted *store.LeaseInfo
	// Renewals counts successful renewals (for tests and reports).
	renewals int
}

// Acquire takes the lease of key for holder, waiting for it when cfg.Wait,
// and starts the background renewal.
func Acquire(ctx context.Context, st store.Store, key store.Key, holder string, cfg Config) (*Held, error) {
	cfg.defaults()
	waitUntil := cfg.Now().Add(cfg.WaitTimeout)
	for {
		sent := cfg.Now()
		g, err := st.Acquire(ctx, key, holder, cfg.TTL)
		if err == nil {
			h := &Held{
				st: st, cfg: cfg, lease: g.Lease, validUntil: sent.Add(cfg.TTL), Preempted: g.Preempted,
				lost: make(chan struct{}), stop: make(chan struct{}), renewDone: make(chan struct{}),
			}
			go h.renew()
			return h, nil
		}
		var held *store.HeldError
		if !errors.As(err, &held) {
			return nil, err
		}
		if !cfg.Wait {
			return nil, heldError(key, held.Lease)
		}
		if !cfg.Now().Before(waitUntil) {
			return nil, errcode.New(errcode.WaitTimeout, "waited %s for the lease of %s; it is still held by %s until %s",
				cfg.WaitTimeout, key, held.Lease.Holder, held.Lease.ExpiresAt.Format(time.RFC3339)).
				With("holder", held.Lease.Holder).With("expiresAt", held.Lease.ExpiresAt)
		}
		if cfg.OnWait != nil {
			cfg.OnWait(held.Lease)
		}
		select {
		case <-ctx.Done():
			return nil, errcode.Wrap(errcode.Interrupted, ctx.Err(), "stopped waiting for the lease of %s", key)
		case <-time.After(cfg.PollInterval):
		}
	}
}

func heldError(key store.Key, l store.LeaseInfo) *errcode.Error {
	return errcode.New(errcode.LockHeld, "scope %s is leased by run %s until %s", key, l.Holder, l.ExpiresAt.Format(time.RFC3339)).
		With("holder", l.Holder).With("expiresAt", l.ExpiresAt).With("acquiredAt", l.AcquiredAt)
}

// Lease returns the lease as last granted or renewed: the proof for fenced
// writes.
func (h *Held) Lease() store.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// Lost is closed when the run lost its lease or stopped itself.
func (h *Held) Lost() <-chan struct{} { return h.lost }

// Err returns the LOCK_LOST error once the lease is lost, nil before.
func (h *Held) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostErr
}

// Check returns LOCK_LOST when the lease is lost or the run's own deadline
// (TTL/5 before validUntil) has passed. Call it before any write the store
// cannot fence.
func (h *Held) Check() error {
	if err := h.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	deadline := h.validUntil.Add(-h.cfg.TTL / 5)
	h.mu.Unlock()
	if !h.cfg.Now().Before(deadline) {
		h.markLost(fmt.Errorf("no successful renewal since %s", deadline.Add(-h.cfg.TTL+h.cfg.TTL/5).Format(time.RFC3339)))
		return h.Err()
	}
	return nil
}

// MarkLost records that a fenced write was refused: the lease is gone.
func (h *Held) MarkLost(cause error) { h.markLost(cause) }

func (h *Held) markLost(cause error) {
	h.lostOnce.Do(func() {
		h.mu.Lock()
		h.lostErr = errcode.Wrap(errcode.LockLost, cause, "lost the lease of %s (run %s, token %d)", h.lease.Key, h.lease.Holder, h.lease.Token).
			With("holder", h.lease.Holder).With("token", h.lease.Token)
		h.mu.Unlock()
		close(h.lost)
	})
}

// renew runs the paced renewal. A renewal is sent TTL/3 after the previous
// one was sent, but never before the previous one finished: at most one is
// in flight, and a slow store slows the pace instead of queueing renewals.
// Between renewals a deadline check stops the run at its own deadline even
// when a renewal hangs in the store.
func (h *Held) renew() {
	defer close(h.renewDone)
	interval := h.cfg.TTL / 3
	lastSent := h.cfg.Now()
	for {
		h.mu.Lock()
		selfStop := h.validUntil.Add(-h.cfg.TTL / 5)
		h.mu.Unlock()
		next := lastSent.Add(interval)
		wake := next
		if selfStop.Before(wake) {
			wake = selfStop
		}
		select {
		case <-h.stop:
			return
		case <-h.lost:
			return
		case <-time.After(max(wake.Sub(h.cfg.Now()), 0)):
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
	budget := max(time.Until(h.validUntil.Add(-h.cfg.TTL/5)), time.Millisecond)
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
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
	case <-time.After(budget):
		h.markLost(errors.New("the store did not answer the renewal before the run's own deadline"))
	case a := <-answered:
		switch {
		case a.err == nil:
			h.mu.Lock()
			h.lease = a.l
			h.validUntil = sent.Add(h.cfg.TTL)
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

// Renewals returns how many renewals succeeded.
func (h *Held) Renewals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renewals
}

// Release stops the renewal and frees the lease, trying three times with
// backoff. When it keeps failing it returns a warning saying until when the
// lease stays held; a lease already lost is not released (it is not ours).
func (h *Held) Release(ctx context.Context) (warning string) {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.renewDone
	if h.Err() != nil {
		return ""
	}
	cur := h.Lease()
	var err error
	for attempt, backoff := 0, 200*time.Millisecond; attempt < 3; attempt, backoff = attempt+1, backoff*2 {
		if err = h.st.Release(ctx, cur); err == nil || errors.Is(err, store.ErrLeaseLost) {
			return ""
		}
		select {
		case <-ctx.Done():
			attempt = 3
		case <-time.After(backoff):
		}
	}
	return fmt.Sprintf("could not release the lease of %s (%v); it stays held until about %s", cur.Key, err, cur.ExpiresAt.Format(time.RFC3339))
}
