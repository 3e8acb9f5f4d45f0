package gitstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// Stores opened on one remote stand for separate processes: each has its own
// scratch repository and knows nothing of the others but the remote.

// TestContendersAcrossStores: 8 stores acquire one scope at once, for a free
// scope, a released one and an expired one; exactly one wins each round.
func TestContendersAcrossStores(t *testing.T) {
	t.Parallel()
	const n = 8
	remote := newRemote(t)
	// One fake clock for all: expiry is decided by the client's clock, so
	// runners whose clocks agree see the same expiry, and the test does not
	// depend on how long a round takes on a loaded machine.
	clock := storetest.NewClock()
	var stores []*gitstore.Store
	for range n {
		stores = append(stores, openStore(t, remote, gitstore.WithClock(clock.Now)))
	}
	round := func(name string, ttl time.Duration) store.Grant {
		t.Helper()
		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			grants = make([]store.Grant, n)
			errs   = make([]error, n)
		)
		for i, s := range stores {
			wg.Go(func() {
				<-start
				grants[i], errs[i] = s.Acquire(context.Background(), pr1, fmt.Sprintf("%s-%d", name, i), ttl)
			})
		}
		close(start)
		wg.Wait()
		var winners []store.Grant
		for i, err := range errs {
			var held *store.HeldError
			switch {
			case err == nil:
				winners = append(winners, grants[i])
			case !errors.As(err, &held):
				t.Fatalf("%s: contender %d: %v", name, i, err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("%s: %d winners %+v, want 1", name, len(winners), winners)
		}
		return winners[0]
	}
	first := round("free", time.Minute)
	// Any process may release with the lease: it is holder and token, not
	// the store that granted it.
	if err := stores[n-1].Release(context.Background(), first.Lease); err != nil {
		t.Fatal(err)
	}
	second := round("released", time.Minute)
	if second.Lease.Token != 2 || second.Preempted != nil {
		t.Errorf("after release: %+v preempting %v, want token 2 and no preemption", second.Lease, second.Preempted)
	}
	clock.Advance(2 * time.Minute)
	third := round("expired", time.Minute)
	if third.Lease.Token != 3 || third.Preempted == nil || third.Preempted.Holder != second.Lease.Holder {
		t.Errorf("after expiry: %+v preempting %+v, want token 3 preempting %s", third.Lease, third.Preempted, second.Lease.Holder)
	}
}

// TestLeaseCycleRace: writers in separate stores run whole cycles on one
// scope (acquire, read the record, write it plus one, write a receipt,
// release), as runs of one pull request would. Mutual exclusion holds when
// the counter equals the acknowledged writes and the token the grants.
func TestLeaseCycleRace(t *testing.T) {
	t.Parallel()
	writers, cycles := 4, 4
	if v := os.Getenv("SPONSON_GITSTORE_RACE"); v != "" {
		if _, err := fmt.Sscanf(v, "%dx%d", &writers, &cycles); err != nil {
			t.Fatalf("SPONSON_GITSTORE_RACE=%q is not WRITERSxCYCLES: %v", v, err)
		}
	}
	remote := newRemote(t)
	var (
		wg     sync.WaitGroup
		acked  atomic.Int64
		grants atomic.Int64
		held   atomic.Int64
	)
	for w := range writers {
		s := openStore(t, remote)
		wg.Go(func() {
			ctx := context.Background()
			for c := range cycles {
				holder := fmt.Sprintf("run-%d-%d", w, c)
				var g store.Grant
				for {
					var err error
					g, err = s.Acquire(ctx, pr1, holder, time.Minute)
					if err == nil {
						break
					}
					var he *store.HeldError
					if !errors.As(err, &he) {
						t.Errorf("%s: Acquire: %v", holder, err)
						return
					}
					held.Add(1)
					time.Sleep(20 * time.Millisecond)
				}
				grants.Add(1)
				b, err := s.ReadRecord(ctx, pr1, "counter")
				if err != nil {
					t.Errorf("%s: ReadRecord: %v", holder, err)
					return
				}
				n, _ := strconv.Atoi(string(b))
				if err := s.WriteRecord(ctx, g.Lease, "counter", []byte(strconv.Itoa(n+1))); err != nil {
					t.Errorf("%s: WriteRecord: %v", holder, err)
					return
				}
				acked.Add(1)
				if err := s.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(pr1, holder, 1)); err != nil {
					t.Errorf("%s: WriteReceipt: %v", holder, err)
					return
				}
				if err := s.Release(ctx, g.Lease); err != nil {
					t.Errorf("%s: Release: %v", holder, err)
					return
				}
			}
		})
	}
	wg.Wait()
	check := openStore(t, remote)
	b, err := check.ReadRecord(t.Context(), pr1, "counter")
	if err != nil {
		t.Fatal(err)
	}
	info, err := check.ReadLease(t.Context(), pr1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writers × %d cycles: %d grants, %d refused as held, counter %s", writers, cycles, grants.Load(), held.Load(), b)
	if n, _ := strconv.Atoi(string(b)); int64(n) != acked.Load() {
		t.Errorf("counter %d, acknowledged writes %d", n, acked.Load())
	}
	if info.Token != grants.Load() || info.Holder != "" {
		t.Errorf("lease %+v after %d grants, want that token and no holder", info, grants.Load())
	}
}

// TestSameHolderOneGrant: the nonce at store level. Stores that acquire a
// free scope for the same holder at the same instant build byte-identical
// commits; without the nonce every one of them is told it won, with it
// exactly one wins and the others get LOCK_HELD.
func TestSameHolderOneGrant(t *testing.T) {
	t.Parallel()
	const n = 6
	now := func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) }
	run := func(t *testing.T, nonce bool) int {
		remote := newRemote(t)
		var stores []*gitstore.Store
		for range n {
			s := openStore(t, remote, gitstore.WithClock(now))
			if !nonce {
				gitstore.DisableNonce(s)
			}
			stores = append(stores, s)
		}
		var wg sync.WaitGroup
		var wins atomic.Int64
		start := make(chan struct{})
		for _, s := range stores {
			wg.Go(func() {
				<-start
				if _, err := s.Acquire(context.Background(), pr1, "run-a", time.Minute); err == nil {
					wins.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		return int(wins.Load())
	}
	t.Run("nonce", func(t *testing.T) {
		t.Parallel()
		if w := run(t, true); w != 1 {
			t.Fatalf("%d stores were granted the lease, want 1", w)
		}
	})
	t.Run("without-nonce", func(t *testing.T) {
		t.Parallel()
		t.Logf("without the nonce %d of %d stores were told they won", run(t, false), n)
	})
}

// run is one apply as the wrapper makes it: acquire, checkpoint receipt,
// state, final receipt, release. steps lets a test act between steps; ok
// reports whether every fenced write of the run went through.
func runApply(ctx context.Context, s store.Store, holder string, between func(step string)) (ok bool, errs []error) {
	g, err := s.Acquire(ctx, pr1, holder, time.Minute)
	if err != nil {
		return false, []error{err}
	}
	step := func(name string, f func() error) {
		if between != nil {
			between(name)
		}
		if err := f(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	checkpoint := storetest.NewReceipt(pr1, holder, 1)
	checkpoint.Status = receipt.StatusRunning
	step("checkpoint", func() error { return s.WriteReceipt(ctx, g.Lease, checkpoint) })
	step("state", func() error { return s.WriteState(ctx, g.Lease, []byte(`{"by":"`+holder+`"}`)) })
	step("receipt", func() error { return s.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(pr1, holder, 2)) })
	step("release", func() error { return s.Release(ctx, g.Lease) })
	return len(errs) == 0, errs
}

// TestBranchDeletedMidRun: deleting a scope's branch while a run holds its
// lease never lets two runs both succeed: the run whose branch was deleted
// can write nothing more, and the next run starts afresh.
func TestBranchDeletedMidRun(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	ref := "refs/heads/sponson-stacks/preview/acme_2fapp/pr-1"
	a, b := openStore(t, remote), openStore(t, remote)
	ctx := t.Context()

	var bOK bool
	aOK, aErrs := runApply(ctx, a, "run-a", func(step string) {
		if step != "state" {
			return
		}
		git(t, remote, "update-ref", "-d", ref)
		var errs []error
		bOK, errs = runApply(ctx, b, "run-b", nil)
		if !bOK {
			t.Errorf("the run after the deletion failed: %v", errs)
		}
	})
	if aOK {
		t.Fatal("the run whose branch was deleted still wrote everything")
	}
	for _, err := range aErrs {
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("the run whose branch was deleted: %v, want lease lost", err)
		}
	}
	st, err := a.ReadState(ctx, pr1)
	if err != nil || string(st) != `{"by":"run-b"}` {
		t.Errorf("state = %s, %v; want run-b's", st, err)
	}
	if r, err := a.LatestReceipt(ctx, pr1); err != nil || r.RunID != "run-b" {
		t.Errorf("latest receipt = %+v, %v; want run-b's", r, err)
	}

	// Deleted while nobody else runs: the run still stops writing.
	c := openStore(t, remote)
	cOK, _ := runApply(ctx, c, "run-c", func(step string) {
		if step == "receipt" {
			git(t, remote, "update-ref", "-d", ref)
		}
	})
	if cOK {
		t.Error("a run kept writing after its branch was deleted")
	}
}

// TestBranchRewoundMidRun: force-rewinding a scope's branch while a run
// holds its lease. Rewound to before the run's grant, the run loses its
// lease and the next run wins; rewound to the run's own grant, the lease is
// still the run's, so the next run is refused. Never do both succeed.
func TestBranchRewoundMidRun(t *testing.T) {
	t.Parallel()
	ref := "refs/heads/sponson-stacks/preview/acme_2fapp/pr-1"
	ctx := t.Context()
	for _, to := range []string{"before-grant", "grant"} {
		t.Run(to, func(t *testing.T) {
			t.Parallel()
			remote := newRemote(t)
			a, b := openStore(t, remote), openStore(t, remote)
			if ok, errs := runApply(ctx, a, "run-0", nil); !ok {
				t.Fatal(errs)
			}
			before := git(t, remote, "rev-parse", ref)
			var grant string
			var bOK bool
			aOK, _ := runApply(ctx, a, "run-a", func(step string) {
				switch step {
				case "checkpoint":
					grant = git(t, remote, "rev-parse", ref)
				case "state":
					target := before
					if to == "grant" {
						target = grant
					}
					git(t, remote, "update-ref", ref, target)
					bOK, _ = runApply(ctx, b, "run-b", nil)
				}
			})
			if aOK == bOK {
				t.Fatalf("rewound to %s: run-a succeeded %v, run-b succeeded %v; want exactly one", to, aOK, bOK)
			}
			if want := to == "grant"; aOK != want {
				t.Errorf("rewound to %s: run-a succeeded %v, want %v", to, aOK, want)
			}
		})
	}
}
