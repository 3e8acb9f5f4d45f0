// Package lease holds a scope lease for the length of a run: it acquires it
// (or waits for it), renews it in the background, keeps the run's own
// deadline, makes every write fenced by it, and releases it. The held lease
// is the only one that says the lease is lost: a refused fenced write, a
// renewal the store refuses or does not answer in time, or a lease record
// that names someone else all end in the same LOCK_LOST. It is the one place
// this logic lives; the wrapper and the provider both use it.
//
// The rules (docs/design.md §2.7 "Lease"), kept by Schedule:
//   - renewal every TTL/3, each renewal scheduled only after the previous one
//     finished: a fixed ticker queued renewals faster than a slow store
//     completed them, and the run's own writes waited behind the queue;
//   - the run's deadline counts from the time each grant or renewal was
//     *sent*, not answered, so a slow answer never extends it;
//   - when less than TTL/5 remains without a successful renewal the run
//     stops itself (LOCK_LOST), before anyone else could take the lease over.
//
// Held says the lease is lost for every cause (a refused write, a renewal
// refused or late, a lease record naming someone else: Confirm) with one
// LOCK_LOST, and closes its Lost channel, which interrupts the engine.
// Every fenced write of a run goes through it (Held.WriteState,
// WriteReceipt, WriteRecord, DeleteRecord). Waiting is one loop (Take:
// --wait, WAIT_TIMEOUT; without it LOCK_HELD); Acquire renews in the
// background; the provider's sponson_lease uses the same loop, schedule,
// confirmation and release, and joins a lease the wrapper handed over
// (Joined, HandoverEnv). The record describes its holder for people
// (store.HolderInfo: CI job, actor, commit, host), never compared.
package lease

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/failpoint"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// DefaultTTL is the lease TTL when none is configured.
const DefaultTTL = 15 * time.Minute

// Config tunes Acquire and Take.
type Config struct {
	TTL          time.Duration // DefaultTTL when zero
	Wait         bool          // poll while another run holds the lease
	WaitTimeout  time.Duration // how long to poll; 10 minutes when zero
	PollInterval time.Duration // 2 s when zero
	// OnWait is called before each poll with the lease being waited for.
	OnWait func(store.LeaseInfo)
	// Join, when set, is asked about each live lease of another holder
	// before Take waits for it; true ends Take with that lease joined (the
	// provider joins a lease its own run holds). Acquire ignores it.
	Join func(store.LeaseInfo) bool
	// Clock sets the timers that pace the renewals, the poll and the run's
	// own deadline, and tells the time when Now is nil; the real clock when
	// nil. Tests hand in a clockwork.FakeClock and advance it instead of
	// waiting, so that a loaded machine cannot make them miss a deadline.
	Clock clockwork.Clock
	// Now tells the time; Clock.Now when nil.
	Now func() time.Time
	// About describes this run for the lease record (store.WithHolder):
	// others waiting for the lease see it.
	About store.HolderInfo
	// CompactFrom is the ledger size from which WriteReceipt writes
	// receipts against a ledger base (store.WriteCompact);
	// store.CompactFrom when zero (a failpoints build takes
	// SPONSON_TEST_COMPACT_FROM), never when negative.
	CompactFrom int
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
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Now == nil {
		c.Now = c.Clock.Now
	}
	switch {
	case c.CompactFrom == 0:
		c.CompactFrom = store.CompactFrom
		if n, err := strconv.Atoi(failpoint.Setting("COMPACT_FROM")); err == nil && n > 0 {
			c.CompactFrom = n
		}
	case c.CompactFrom < 0:
		c.CompactFrom = math.MaxInt
	}
}

// Store is what a Held works through: the lease itself, and the three kinds
// of document it fences (docs/design.md §2.8 "Fenced write"). Every backend
// is one; a caller that only takes, confirms or frees a lease needs
// store.Leases alone.
type Store interface {
	store.Leases
	store.Receipts
	store.States
	store.Records
}

// Held is a lease this run holds: the one way to write under it.
type Held struct {
	st    Store
	cfg   Config
	sched Schedule
	// joined: the lease is another process's (the wrapper's run lease,
	// handed over to the provider); it is neither renewed nor released
	// here, and has no deadline of its own.
	joined bool

	mu    sync.Mutex
	lease store.Lease
	// base is the ledger base this run's last receipt was written
	// against (store.WriteCompact); nil until then.
	base       *receipt.Base
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
func Acquire(ctx context.Context, st Store, key store.Key, holder string, cfg Config) (*Held, error) {
	cfg.defaults()
	cfg.Join = nil
	t, err := Take(ctx, st, key, holder, cfg)
	if err != nil {
		return nil, err
	}
	h := newHeld(st, cfg, t.Grant.Lease)
	h.validUntil = h.sched.Deadline(t.Sent)
	h.Preempted = t.Grant.Preempted
	go h.renew()
	return h, nil
}

// Joined returns the lease l that another process holds and renews, such as
// the wrapper's run lease handed over to the provider: writes through it
// are fenced by l, a refusal makes it lost, and Release leaves l alone.
func Joined(st Store, l store.Lease) *Held {
	h := newHeld(st, Config{}, l)
	h.joined = true
	close(h.renewDone)
	return h
}

func newHeld(st Store, cfg Config, l store.Lease) *Held {
	cfg.defaults()
	return &Held{
		st: st, cfg: cfg, sched: Schedule{TTL: cfg.TTL}, lease: l,
		lost: make(chan struct{}), stop: make(chan struct{}), renewDone: make(chan struct{}),
	}
}

// Lease returns the lease as last granted or renewed.
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
	if err := h.Err(); err != nil || h.joined {
		return err
	}
	h.mu.Lock()
	deadline := h.sched.SelfStop(h.validUntil)
	h.mu.Unlock()
	if !h.cfg.Now().Before(deadline) {
		h.markLost(fmt.Errorf("no successful renewal since %s", deadline.Add(-h.cfg.TTL+h.cfg.TTL/5).Format(time.RFC3339)))
		return h.Err()
	}
	return nil
}

// markLost records that the lease is gone. Only the held lease decides
// that: its fenced writes, its renewal and Confirm call it.
func (h *Held) markLost(cause error) {
	h.lostOnce.Do(func() {
		h.mu.Lock()
		h.lostErr = errcode.Wrap(errcode.LockLost, cause, "lost the lease of %s (run %s, token %d)", h.lease.Key, h.lease.Holder, h.lease.Token).
			With("holder", h.lease.Holder).With("token", h.lease.Token)
		h.mu.Unlock()
		close(h.lost)
	})
}

// Renewals returns how many renewals succeeded.
func (h *Held) Renewals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renewals
}

// Release stops the renewal and frees the lease (Free). When the store
// keeps failing it returns a warning saying until when the lease stays
// held; a lease already lost is not released (it is not ours), nor is a
// joined one (it is its holder's).
func (h *Held) Release(ctx context.Context) (warning string) {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.renewDone
	if h.Err() != nil || h.joined {
		return ""
	}
	cur := h.Lease()
	if err := Free(ctx, h.st, cur); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		return fmt.Sprintf("could not release the lease of %s (%v); it stays held until about %s", cur.Key, err, cur.ExpiresAt.Format(time.RFC3339))
	}
	return ""
}

// Free releases l, trying three times with backoff while the store fails:
// a lease left behind blocks its scope or object for a whole TTL. A lease
// the store says is not l's any more (ErrLeaseLost) is not retried.
func Free(ctx context.Context, st store.Leases, l store.Lease) error {
	var err error
	for attempt, backoff := 0, 200*time.Millisecond; ; attempt, backoff = attempt+1, backoff*2 {
		if err = st.Release(ctx, l); err == nil || errors.Is(err, store.ErrLeaseLost) || attempt == 2 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
	}
}
