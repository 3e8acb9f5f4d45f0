package lease_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// slowStore delays or blocks renewals and counts how many are in flight.
type slowStore struct {
	store.Store
	renewDelay   time.Duration
	renewBlocks  chan struct{} // when set, Renew waits on it and ignores ctx
	releaseFails atomic.Int32  // Release fails this many times first
	inFlight     atomic.Int32
	maxInFlight  atomic.Int32
	renewCalls   atomic.Int32
}

func (s *slowStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	s.renewCalls.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if s.renewBlocks != nil {
		<-s.renewBlocks
	}
	time.Sleep(s.renewDelay)
	return s.Store.Renew(ctx, l, ttl)
}

func (s *slowStore) Release(ctx context.Context, l store.Lease) error {
	if s.releaseFails.Add(-1) >= 0 {
		return errors.New("store briefly unavailable")
	}
	return s.Store.Release(ctx, l)
}

// blockedStore returns a store whose renewals hang until the test ends.
// Its cleanup unblocks them and waits until none is in flight, before the
// store's directory is removed (cleanups run last-registered first).
func blockedStore(t *testing.T, st store.Store) *slowStore {
	t.Helper()
	slow := &slowStore{Store: st, renewBlocks: make(chan struct{})}
	t.Cleanup(func() {
		close(slow.renewBlocks)
		for slow.inFlight.Load() > 0 {
			time.Sleep(time.Millisecond)
		}
	})
	return slow
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
	ctx := context.Background()
	first, err := lease.Acquire(ctx, st, key, "run-a", lease.Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var waits atomic.Int32
	go func() {
		for waits.Load() < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		first.Release(ctx)
	}()
	h, err := lease.Acquire(ctx, st, key, "run-b", lease.Config{
		TTL: time.Minute, Wait: true, WaitTimeout: time.Minute, PollInterval: 10 * time.Millisecond,
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

	_, err = lease.Acquire(ctx, st, key, "run-c", lease.Config{TTL: time.Minute, Wait: true, WaitTimeout: 50 * time.Millisecond, PollInterval: 10 * time.Millisecond})
	if !errcode.Is(err, errcode.WaitTimeout) {
		t.Fatalf("acquire with a short --wait-timeout: %v, want WAIT_TIMEOUT", err)
	}
}

func TestTakeoverIsReportedAndTheOldHolderLosesItsLease(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ctx := context.Background()
	// The first holder's renewals never get through: its lease expires.
	slow := blockedStore(t, st)
	old, err := lease.Acquire(ctx, slow, key, "run-old", lease.Config{TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	<-old.Lost()
	if !errcode.Is(old.Err(), errcode.LockLost) {
		t.Fatalf("old holder: %v, want LOCK_LOST", old.Err())
	}
	for {
		if l, _ := st.ReadLease(ctx, key); !l.Live(time.Now()) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	h, err := lease.Acquire(ctx, st, key, "run-new", lease.Config{TTL: time.Minute})
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

// TestRenewalIsPaced pins the rule that renewals never pile up: with a store
// whose renewals take longer than TTL/3, at most one is in flight, and the
// run's own writes are not queued behind them.
func TestRenewalIsPaced(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	// Renewals that take 0.36 TTL: longer than TTL/3, yet leaving each one
	// 0.4 s of margin before the run's own deadline (0.8 TTL after a send).
	ttl := 4500 * time.Millisecond
	slow := &slowStore{Store: st, renewDelay: ttl * 36 / 100} // longer than TTL/3
	ctx := context.Background()
	h, err := lease.Acquire(ctx, slow, key, "run-a", lease.Config{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * ttl)
	var writes int
	for time.Now().Before(deadline) {
		if slow.inFlight.Load() == 1 {
			// A write issued while a renewal is in flight completes
			// without waiting for it.
			done := make(chan error, 1)
			go func() {
				done <- st.WriteReceipt(ctx, h.Lease(), &receipt.Receipt{Version: 1, RunID: "run-a", Environment: key.Environment, Scope: key.Scope, Status: "running"})
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("write during a renewal: %v", err)
				}
				writes++
			case <-time.After(ttl / 4):
				if slow.inFlight.Load() == 1 {
					t.Fatal("a receipt write waited behind an in-flight renewal")
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.Release(ctx)
	if got := slow.maxInFlight.Load(); got != 1 {
		t.Errorf("%d renewals were in flight at once; at most one may be", got)
	}
	if slow.renewCalls.Load() < 2 {
		t.Errorf("only %d renewals in %s with TTL %s", slow.renewCalls.Load(), 2*ttl, ttl)
	}
	if h.Err() != nil {
		t.Errorf("slow but successful renewals lost the lease: %v", h.Err())
	}
	if writes == 0 {
		t.Error("no write overlapped a renewal; the test proved nothing")
	}
}

// TestUnansweringStoreStopsTheRunBeforeExpiry: when renewals hang (even
// ignoring their context), the run stops itself with LOCK_LOST while its
// lease is still valid in the store, so no other run can have taken over.
func TestUnansweringStoreStopsTheRunBeforeExpiry(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	slow := blockedStore(t, st)
	ctx := context.Background()
	h, err := lease.Acquire(ctx, slow, key, "run-a", lease.Config{TTL: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	expires := h.Lease().ExpiresAt
	select {
	case <-h.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the run never stopped itself")
	}
	if stoppedAt := time.Now(); !stoppedAt.Before(expires) {
		t.Errorf("stopped at %s, after the lease expired at %s", stoppedAt.Format(time.StampMilli), expires.Format(time.StampMilli))
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
	flaky := &slowStore{Store: st}
	flaky.releaseFails.Store(2)
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

	down := &slowStore{Store: openStore(t)}
	down.releaseFails.Store(100)
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
	st := refusingRenewals{openStore(t)}
	key := store.Key{Stack: "s", Environment: "preview", Scope: "pr-1"}
	h, err := lease.Acquire(context.Background(), st, key, "run-a", lease.Config{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	<-h.Lost()
	if err := h.WriteState(context.Background(), []byte(`{"version":4}`)); err == nil {
		t.Fatal("a lost lease wrote the state")
	}
	if got, err := st.ReadState(context.Background(), key); err != nil || got != nil {
		t.Fatalf("the store holds %q (%v), want no state", got, err)
	}
}
