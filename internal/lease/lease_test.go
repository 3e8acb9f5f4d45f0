package lease_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

var key = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}

func openStore(t *testing.T) *filestore.Store {
	t.Helper()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newClock returns the fake clock of one test: the lease's timers fire only
// when the test advances it, so what the test checks does not depend on
// how fast the machine runs.
func newClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
}

// openStoreAt returns a file store whose lease expiry is read from clock.
func openStoreAt(t *testing.T, clock clockwork.Clock) *filestore.Store {
	t.Helper()
	st, err := filestore.Open(t.TempDir(), filestore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// started waits until the renewal loop of a lease just acquired on clock
// has set its first timer: advancing clock before that would move the time
// the loop starts counting from.
func started(t *testing.T, clock *clockwork.FakeClock) {
	t.Helper()
	if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
}

// gatedStore holds every renewal, ignoring its context, until the test
// answers it, and records when on the lease's clock each was sent and how
// many were in flight at once.
type gatedStore struct {
	store.Store
	clock       clockwork.Clock
	sent        chan *renewal
	done        chan struct{} // closed when the test ends: held renewals fail
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
}

// renewal is one renewal the gated store holds.
type renewal struct {
	at     time.Time // when it was sent, on the lease's clock
	answer chan struct{}
}

// pass lets the renewal through to the store.
func (r *renewal) pass() { close(r.answer) }

// gate returns st with its renewals held. Renewals still held when the test
// ends fail without reaching st, before its directory is removed (cleanups
// run last-registered first).
func gate(t *testing.T, st store.Store, clock clockwork.Clock) *gatedStore {
	t.Helper()
	g := &gatedStore{Store: st, clock: clock, sent: make(chan *renewal, 16), done: make(chan struct{})}
	t.Cleanup(func() { close(g.done) })
	return g
}

func (g *gatedStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		m := g.maxInFlight.Load()
		if n <= m || g.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	r := &renewal{at: g.clock.Now(), answer: make(chan struct{})}
	g.sent <- r
	select {
	case <-r.answer:
		return g.Store.Renew(ctx, l, ttl)
	case <-g.done:
		return store.Lease{}, errors.New("the test ended")
	}
}

// next waits for the next renewal h sends. It fails the test when h loses
// its lease meanwhile, or when the test binary is about to time out (go
// test -timeout): a renewal that never comes is then reported as such.
func (g *gatedStore) next(t *testing.T, h *lease.Held) *renewal {
	t.Helper()
	select {
	case r := <-g.sent:
		return r
	case <-h.Lost():
		t.Fatalf("the lease was lost while a renewal was awaited: %v", h.Err())
	case <-stuck(t):
		t.Fatal("no renewal was sent")
	}
	return nil
}

// stuck is closed shortly before the test binary's own deadline, nil (never
// ready) when it has none. It is no budget: a test still waiting then has
// failed anyway; it only says what it was waiting for.
func stuck(t *testing.T) <-chan time.Time {
	d, ok := t.Deadline()
	if !ok {
		return nil
	}
	return time.After(time.Until(d) * 9 / 10)
}

// lost waits until h has lost its lease.
func lost(t *testing.T, h *lease.Held) {
	t.Helper()
	select {
	case <-h.Lost():
	case <-stuck(t):
		t.Fatal("the lease was never lost")
	}
}

// waitFor polls cond until it holds: for what the code under test does in
// its own goroutine once the test advanced the clock.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	giveUp := stuck(t)
	for !cond() {
		select {
		case <-giveUp:
			t.Fatalf("still waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// flakyRelease fails the first releases.
type flakyRelease struct {
	store.Store
	fails atomic.Int32 // Release fails this many times first
}

func (s *flakyRelease) Release(ctx context.Context, l store.Lease) error {
	if s.fails.Add(-1) >= 0 {
		return errors.New("store briefly unavailable")
	}
	return s.Store.Release(ctx, l)
}

func TestAcquireReleaseAndHeld(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := context.Background()
	h, err := lease.Acquire(ctx, st, key, "run-a", lease.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lease.Acquire(ctx, st, key, "run-b", lease.Config{TTL: time.Minute})
	if !errcode.Is(err, errcode.LockHeld) {
		t.Fatalf("second acquire: %v, want LOCK_HELD", err)
	}
	if d := errcode.As(err).Details; d["holder"] != "run-a" {
		t.Errorf("LOCK_HELD details %v do not name the holder", d)
	}
	if w := h.Release(ctx); w != "" {
		t.Fatalf("release warning: %s", w)
	}
	h2, err := lease.Acquire(ctx, st, key, "run-b", lease.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)
	if h2.Lease().Token != h.Lease().Token+1 {
		t.Errorf("token %d after %d; tokens must grow by one per grant", h2.Lease().Token, h.Lease().Token)
	}
}

func TestWaitQueuesThenTimesOut(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := lease.Acquire(ctx, st, key, "run-a", lease.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The waiting run polls on a fake clock. The test lets each poll
	// through, and releases the lease once two polls found it held.
	const poll = 2 * time.Second
	clock := newClock()
	var waits atomic.Int32
	go func() {
		for clock.BlockUntilContext(ctx, 1) == nil {
			if waits.Load() >= 2 {
				first.Release(ctx)
				clock.Advance(poll)
				return
			}
			clock.Advance(poll)
		}
	}()
	h, err := lease.Acquire(ctx, st, key, "run-b", lease.Config{
		TTL: time.Minute, Wait: true, WaitTimeout: time.Minute, PollInterval: poll, Clock: clock,
		OnWait: func(l store.LeaseInfo) {
			if l.Holder != "run-a" {
				t.Errorf("waiting for %q, want run-a", l.Holder)
			}
			waits.Add(1)
		},
	})
	if err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	defer h.Release(ctx)
	if n := waits.Load(); n != 2 {
		t.Errorf("acquired after %d polls found the lease held, want 2", n)
	}

	// A wait that outlasts its --wait-timeout polls every interval until then.
	clock = newClock()
	go func() {
		for clock.BlockUntilContext(ctx, 1) == nil {
			clock.Advance(poll)
		}
	}()
	var polls int
	_, err = lease.Acquire(ctx, st, key, "run-c", lease.Config{
		TTL: time.Minute, Wait: true, WaitTimeout: 5 * poll, PollInterval: poll, Clock: clock,
		OnWait: func(store.LeaseInfo) { polls++ },
	})
	if !errcode.Is(err, errcode.WaitTimeout) {
		t.Fatalf("acquire with a short --wait-timeout: %v, want WAIT_TIMEOUT", err)
	}
	if polls != 5 {
		t.Errorf("gave up after %d waits of %s, want 5 in a wait timeout of %s", polls, poll, 5*poll)
	}
}

func TestTakeoverIsReportedAndTheOldHolderLosesItsLease(t *testing.T) {
	t.Parallel()
	clock := newClock()
	st := openStoreAt(t, clock)
	ctx := context.Background()
	// The first holder's renewals never get through: its lease expires.
	gated := gate(t, st, clock)
	const ttl = time.Minute
	old, err := lease.Acquire(ctx, gated, key, "run-old", lease.Config{TTL: ttl, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	started(t, clock)
	clock.Advance(ttl / 3)
	gated.next(t, old)
	clock.Advance(ttl - ttl/3)
	lost(t, old)
	if !errcode.Is(old.Err(), errcode.LockLost) {
		t.Fatalf("old holder: %v, want LOCK_LOST", old.Err())
	}
	if l, _ := st.ReadLease(ctx, key); l.Live(clock.Now()) {
		t.Fatalf("lease %+v still live a TTL after its grant", l)
	}
	h, err := lease.Acquire(ctx, st, key, "run-new", lease.Config{TTL: ttl, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	if h.Preempted == nil || h.Preempted.Holder != "run-old" {
		t.Fatalf("Preempted = %+v, want the old holder", h.Preempted)
	}
	// The old run's fenced writes are refused, and its release changes nothing.
	rec := &receipt.Receipt{Version: 1, RunID: "run-old", Environment: key.Environment, Scope: key.Scope, Status: "applied"}
	if err := st.WriteReceipt(ctx, old.Lease(), rec); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("old holder's write: %v, want ErrLeaseLost", err)
	}
	if w := old.Release(ctx); w != "" {
		t.Errorf("releasing a lost lease warned: %s", w)
	}
	if l, _ := st.ReadLease(ctx, key); l.Holder != "run-new" {
		t.Errorf("lease holder %q after the old run released, want run-new", l.Holder)
	}
}

// TestRenewalIsPaced pins the rule that renewals never pile up: each is
// sent TTL/3 after the previous one was sent, but never before the previous
// one was answered, so with a store whose renewal takes longer than TTL/3
// at most one is in flight; and the run's own writes are not queued behind
// them. The test is the store: it answers each renewal after as much time
// on the lease's clock as it chooses.
func TestRenewalIsPaced(t *testing.T) {
	t.Parallel()
	clock := newClock()
	st := openStoreAt(t, clock)
	gated := gate(t, st, clock)
	ctx := context.Background()
	const ttl = 15 * time.Minute
	h, err := lease.Acquire(ctx, gated, key, "run-a", lease.Config{TTL: ttl, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	granted := clock.Now()
	started(t, clock)

	// The first renewal is due TTL/3 after the grant was sent.
	clock.Advance(ttl / 3)
	first := gated.next(t, h)
	if want := granted.Add(ttl / 3); !first.at.Equal(want) {
		t.Errorf("first renewal sent at %s, want TTL/3 after the grant, %s", first.at, want)
	}

	// It takes 0.36 TTL, longer than TTL/3 and short of the run's own
	// deadline (0.8 TTL after the grant): the next renewal falls due while
	// it is in flight, and waits for it.
	clock.Advance(ttl * 36 / 100)
	// The run's own write goes through meanwhile; one queued behind the
	// renewal would never return, since the renewal waits for this test.
	rec := &receipt.Receipt{Version: 1, RunID: "run-a", Environment: key.Environment, Scope: key.Scope, Status: "running"}
	if err := h.WriteReceipt(ctx, rec); err != nil {
		t.Fatalf("write during a renewal: %v", err)
	}
	first.pass()
	second := gated.next(t, h)
	if got := h.Renewals(); got != 1 {
		t.Errorf("the second renewal was sent with %d renewals done, want it after the first was answered", got)
	}
	if want := first.at.Add(ttl * 36 / 100); !second.at.Equal(want) {
		t.Errorf("second renewal sent at %s, want as soon as the first, overdue, was answered: %s", second.at, want)
	}

	// A renewal answered sooner: the next one is due TTL/3 after this one
	// was sent, not after it was answered.
	clock.Advance(ttl / 10)
	second.pass()
	waitFor(t, "the second renewal to be counted", func() bool { return h.Renewals() == 2 })
	clock.Advance(ttl/3 - ttl/10)
	third := gated.next(t, h)
	if want := second.at.Add(ttl / 3); !third.at.Equal(want) {
		t.Errorf("third renewal sent at %s, want TTL/3 after the second was sent, %s", third.at, want)
	}
	third.pass()
	waitFor(t, "the third renewal to be counted", func() bool { return h.Renewals() == 3 })

	if got := gated.maxInFlight.Load(); got != 1 {
		t.Errorf("%d renewals were in flight at once; at most one may be", got)
	}
	if h.Err() != nil {
		t.Errorf("slow but successful renewals lost the lease: %v", h.Err())
	}
	if l, _ := st.ReadLease(ctx, key); !l.ExpiresAt.Equal(third.at.Add(ttl)) {
		t.Errorf("the store's lease expires at %s, want a TTL after the last renewal, %s", l.ExpiresAt, third.at.Add(ttl))
	}
}

// TestUnansweringStoreStopsTheRunBeforeExpiry: when renewals hang (even
// ignoring their context), the run stops itself with LOCK_LOST at its own
// deadline, TTL/5 before its lease expires in the store, so no other run can
// have taken over; and not a moment before.
func TestUnansweringStoreStopsTheRunBeforeExpiry(t *testing.T) {
	t.Parallel()
	clock := newClock()
	st := openStoreAt(t, clock)
	gated := gate(t, st, clock)
	ctx := context.Background()
	const ttl = 15 * time.Minute
	h, err := lease.Acquire(ctx, gated, key, "run-a", lease.Config{TTL: ttl, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	granted, expires := clock.Now(), h.Lease().ExpiresAt
	started(t, clock)
	clock.Advance(ttl / 3)
	gated.next(t, h) // never answered

	// Until its own deadline the run goes on.
	selfStop := granted.Add(ttl - ttl/5)
	clock.Advance(selfStop.Sub(clock.Now()) - time.Nanosecond)
	if err := h.Check(); err != nil {
		t.Fatalf("Check a nanosecond before the run's own deadline: %v", err)
	}
	select {
	case <-h.Lost():
		t.Fatalf("the run stopped before its own deadline: %v", h.Err())
	default:
	}

	clock.Advance(time.Nanosecond)
	lost(t, h)
	stoppedAt := clock.Now()
	if !stoppedAt.Before(expires) {
		t.Errorf("stopped at %s, after the lease expired at %s", stoppedAt, expires)
	}
	if l, _ := st.ReadLease(ctx, key); l.Holder != "run-a" || !l.Live(stoppedAt) {
		t.Errorf("when the run stopped the store's lease was %+v, want still run-a's", l)
	}
	if !errcode.Is(h.Err(), errcode.LockLost) || errcode.As(h.Err()).Exit() != errcode.ExitLock {
		t.Errorf("error %v, want LOCK_LOST with exit 3", h.Err())
	}
	if err := h.Check(); !errcode.Is(err, errcode.LockLost) {
		t.Errorf("Check after the deadline: %v", err)
	}
}

func TestReleaseRetriesThenWarns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	st := openStore(t)
	flaky := &flakyRelease{Store: st}
	flaky.fails.Store(2)
	h, err := lease.Acquire(ctx, flaky, key, "run-a", lease.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if w := h.Release(ctx); w != "" {
		t.Errorf("release that succeeds on the third try warned: %s", w)
	}
	if l, _ := st.ReadLease(ctx, key); l.Holder != "" {
		t.Errorf("lease still held by %q", l.Holder)
	}

	down := &flakyRelease{Store: openStore(t)}
	down.fails.Store(100)
	h, err = lease.Acquire(ctx, down, key, "run-b", lease.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	w := h.Release(ctx)
	if !strings.Contains(w, "stays held until") {
		t.Errorf("release that keeps failing: warning %q", w)
	}
}

func TestConcurrentAcquireHasOneWinner(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var won, held atomic.Int32
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := lease.Acquire(ctx, st, key, "run-"+string(rune('a'+i)), lease.Config{TTL: time.Minute})
			switch {
			case err == nil:
				won.Add(1)
			case errcode.Is(err, errcode.LockHeld):
				held.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 || held.Load() != 11 {
		t.Errorf("%d winners, %d LOCK_HELD; want 1 and 11", won.Load(), held.Load())
	}
}

// refusingRenewals is a store whose renewals say the lease is lost while
// its record, and so its writes, still accept the holder.
type refusingRenewals struct{ *filestore.Store }

func (refusingRenewals) Renew(context.Context, store.Lease, time.Duration) (store.Lease, error) {
	return store.Lease{}, store.ErrLeaseLost
}

// TestLostLeaseWritesNothing: once the run knows its lease is lost, no
// fenced write reaches the store, even one the store would still accept.
func TestLostLeaseWritesNothing(t *testing.T) {
	clock := newClock()
	st := refusingRenewals{openStoreAt(t, clock)}
	key := store.Key{Stack: "s", Environment: "preview", Scope: "pr-1"}
	const ttl = time.Minute
	h, err := lease.Acquire(context.Background(), st, key, "run-a", lease.Config{TTL: ttl, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	started(t, clock)
	clock.Advance(ttl / 3)
	lost(t, h)
	if err := h.WriteState(context.Background(), []byte(`{"version":4}`)); err == nil {
		t.Fatal("a lost lease wrote the state")
	}
	if got, err := st.ReadState(context.Background(), key); err != nil || got != nil {
		t.Fatalf("the store holds %q (%v), want no state", got, err)
	}
}

// A run's receipts of a large ledger are written against one base: the
// checkpoint starts it, the outcome writes only what changed, and the next
// run finds it. A run whose lease was taken over writes neither a base nor
// a receipt.
func TestReceiptsOfALargeLedgerShareABase(t *testing.T) {
	t.Parallel()
	clock := newClock()
	st := openStoreAt(t, clock)
	ctx := context.Background()
	cfg := lease.Config{TTL: time.Minute, Clock: clock, CompactFrom: 4}
	h, err := lease.Acquire(ctx, st, key, "run-a", cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := ledgerOf(8)
	rec.RunID, rec.Status = "run-a", receipt.StatusRunning
	if err := h.WriteReceipt(ctx, rec); err != nil {
		t.Fatal(err)
	}
	checkpoint := stored(t, st)
	rec = receipt.Next(rec, receipt.Run{RunID: "run-a", Status: receipt.StatusApplied})
	rec.Ledger[2].ID = "changed"
	if err := h.WriteReceipt(ctx, rec); err != nil {
		t.Fatal(err)
	}
	outcome := stored(t, st)
	if checkpoint.LedgerBase == "" || outcome.LedgerBase != checkpoint.LedgerBase || receipt.Literal(outcome.LedgerDelta) != 1 {
		t.Fatalf("checkpoint base %q, outcome base %q with %d entries written out: want one base, one entry", checkpoint.LedgerBase, outcome.LedgerBase, receipt.Literal(outcome.LedgerDelta))
	}
	h.Release(ctx)

	next, err := lease.Acquire(ctx, st, key, "run-b", cfg)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute) // run-b's lease expires unrenewed...
	thief, err := lease.Acquire(ctx, st, key, "run-c", lease.Config{TTL: time.Hour, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Release(ctx)
	all := ledgerOf(8)
	for i := range all.Ledger {
		all.Ledger[i].ID = "new" // ...so its write of a new base is refused
	}
	all.RunID = "run-b"
	if err := next.WriteReceipt(ctx, all); !errcode.Is(err, errcode.LockLost) {
		t.Fatalf("a write after takeover: %v, want LOCK_LOST", err)
	}
	if after := stored(t, st); after.RunID != "run-a" || after.LedgerBase != outcome.LedgerBase {
		t.Errorf("after a refused write the latest receipt is run %s against %s", after.RunID, after.LedgerBase)
	}
}

func ledgerOf(n int) *receipt.Receipt {
	r := receipt.First(key.Stack, key.Environment, key.Scope)
	r.Command = "apply"
	for i := range n {
		r.Ledger = append(r.Ledger, receipt.Entry{Identity: string(rune('a' + i)), Address: "terraform_data.d" + string(rune('a'+i)), CreatedBy: receipt.CreatedBySponson})
	}
	return r
}

// stored is the scope's latest receipt as the store holds it.
func stored(t *testing.T, st store.Receipts) *receipt.Receipt {
	t.Helper()
	r, err := st.LatestReceipt(context.Background(), key)
	if err != nil || r == nil {
		t.Fatalf("latest receipt: %v, %v", r, err)
	}
	return r
}
