package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore/pgtest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// counter runs read-modify-write cycles on one scope, the invariant check of
// store-notes.md: each cycle takes the lease, reads the latest ledger and
// writes it back one entry longer. A write that landed without the lease,
// or an acknowledged write that was lost, shows up as a counter that does
// not go 1, 2, 3, ... in token order, or a final ledger that is not as long
// as the acknowledged writes.
type counter struct {
	key store.Key

	mu     sync.Mutex
	acks   []ack
	tokens map[int64]string // every token granted, to its holder
	fenced int
}

type ack struct {
	token int64
	value int
}

func newCounter(k store.Key) *counter { return &counter{key: k, tokens: map[int64]string{}} }

// cycle runs one cycle as holder. With overrun > 0 it sleeps that long
// between reading and writing, so its lease may be taken over meanwhile.
func (c *counter) cycle(ctx context.Context, s store.Store, holder string, ttl, overrun time.Duration) error {
	var g store.Grant
	for {
		var err error
		g, err = s.Acquire(ctx, c.key, holder, ttl)
		if err == nil {
			break
		}
		if !errors.As(err, new(*store.HeldError)) {
			return fmt.Errorf("Acquire by %s: %w", holder, err)
		}
		time.Sleep(time.Duration(rand.N(20)+5) * time.Millisecond)
	}
	c.mu.Lock()
	other, dup := c.tokens[g.Lease.Token]
	c.tokens[g.Lease.Token] = holder
	c.mu.Unlock()
	if dup {
		return fmt.Errorf("token %d granted to %s and to %s", g.Lease.Token, other, holder)
	}
	latest, err := s.LatestReceipt(ctx, c.key)
	if err != nil {
		return fmt.Errorf("LatestReceipt: %w", err)
	}
	n := 0
	if latest != nil {
		n = len(latest.Ledger)
	}
	time.Sleep(overrun)
	err = s.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(c.key, holder, n+1))
	c.mu.Lock()
	switch {
	case err == nil:
		c.acks = append(c.acks, ack{g.Lease.Token, n + 1})
	case errors.Is(err, store.ErrLeaseLost):
		c.fenced++
	}
	c.mu.Unlock()
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		return fmt.Errorf("WriteReceipt by %s: %w", holder, err)
	}
	if err := s.Release(ctx, g.Lease); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		return fmt.Errorf("Release by %s: %w", holder, err)
	}
	return nil
}

// verify checks the invariant against what the store holds now.
func (c *counter) verify(t *testing.T, s store.Store) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.SortFunc(c.acks, func(a, b ack) int { return int(a.token - b.token) })
	for i, a := range c.acks {
		if a.value != i+1 {
			t.Fatalf("write %d (token %d) counted %d, want %d: a write landed without the lease\n%v", i, a.token, a.value, i+1, c.acks)
		}
	}
	latest, err := s.LatestReceipt(t.Context(), c.key)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if latest != nil {
		n = len(latest.Ledger)
	}
	if n != len(c.acks) {
		t.Fatalf("the store's counter is %d, want the %d acknowledged writes", n, len(c.acks))
	}
}

// run runs workers × iters cycles, each worker on a store of its own (the
// way separate runs have separate pools).
func (c *counter) run(t *testing.T, open func() store.Store, workers, iters int, ttl time.Duration, overrun func() time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			s := open()
			for i := range iters {
				if err := c.cycle(context.Background(), s, fmt.Sprintf("run-%d-%d", w, i), ttl, overrun()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestFencedWriteRace: eight writers compete for one scope with a short
// TTL; one cycle in six overruns it between reading and writing, so writes
// meet takeovers. No write may land without the lease.
func TestFencedWriteRace(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	dsn := srv.DSN(srv.NewDatabase(t))
	const ttl = 400 * time.Millisecond
	c := newCounter(pr1)
	c.run(t, func() store.Store { return openStore(t, dsn) }, 8, 12, ttl, func() time.Duration {
		if rand.N(6) == 0 {
			return ttl * 3 / 2
		}
		return 0
	})
	c.verify(t, openStore(t, dsn))
	t.Logf("%d grants, %d acknowledged writes, %d fenced", len(c.tokens), len(c.acks), c.fenced)
}

// TestFaultTerminatedBackends: while a run goes through its store operations,
// its connections are terminated (pg_terminate_backend) every few
// milliseconds. Every operation still succeeds within the budget, each
// Acquire is granted exactly once, and nothing acknowledged is lost.
func TestFaultTerminatedBackends(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	db := srv.NewDatabase(t)
	app := "sponson_victim_" + db
	s := openStore(t, srv.DSN(db)+" application_name="+app, pgstore.WithBudget(30*time.Second))
	ctx := t.Context()

	var killed atomic.Int64
	stop := make(chan struct{})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rand.N(15)+5) * time.Millisecond):
			}
			n, err := srv.TerminateBackends(context.Background(), app)
			if err == nil {
				killed.Add(int64(n))
			}
		}
	}()

	const cycles = 40
	state := []byte(`{"serial":0}`)
	for i := range cycles {
		g, err := s.Acquire(ctx, pr1, fmt.Sprintf("run-%02d", i), time.Minute)
		if err != nil {
			t.Fatalf("cycle %d: Acquire: %v", i, err)
		}
		if g.Lease.Token != int64(i+1) {
			t.Fatalf("cycle %d: token %d, want %d: a grant was made twice or lost", i, g.Lease.Token, i+1)
		}
		if err := s.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(pr1, g.Lease.Holder, i+1)); err != nil {
			t.Fatalf("cycle %d: WriteReceipt: %v", i, err)
		}
		state = fmt.Appendf(nil, `{"serial":%d}`, i+1)
		if err := s.WriteState(ctx, g.Lease, state); err != nil {
			t.Fatalf("cycle %d: WriteState: %v", i, err)
		}
		l, err := s.Renew(ctx, g.Lease, time.Minute)
		if err != nil {
			t.Fatalf("cycle %d: Renew: %v", i, err)
		}
		if err := s.WriteRecord(ctx, l, "scope", state); err != nil {
			t.Fatalf("cycle %d: WriteRecord: %v", i, err)
		}
		if _, err := s.Owners(ctx, "preview", nil); err != nil {
			t.Fatalf("cycle %d: Owners: %v", i, err)
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatalf("cycle %d: Release: %v", i, err)
		}
	}
	close(stop)
	<-killerDone
	if killed.Load() == 0 {
		t.Fatal("no connection was terminated: the test tested nothing")
	}

	check := openStore(t, srv.DSN(db))
	latest, err := check.LatestReceipt(ctx, pr1)
	if err != nil || latest == nil || len(latest.Ledger) != cycles {
		t.Fatalf("latest receipt %v, %v; want the last cycle's, with %d entries", latest, err, cycles)
	}
	if got, err := check.ReadState(ctx, pr1); err != nil || string(got) != string(state) {
		t.Errorf("state = %s, %v; want %s", got, err, state)
	}
	if info, err := check.ReadLease(ctx, pr1); err != nil || info.Holder != "" || info.Token != cycles {
		t.Errorf("lease = %+v, %v; want free with token %d", info, err, cycles)
	}
	t.Logf("%d connections terminated during %d cycles", killed.Load(), cycles)
}

// TestFaultServerRestart: four runs compete for one scope while the server
// is killed (immediate shutdown) and restarted three times. Every operation
// succeeds within the budget, no token is granted twice, no write lands
// without the lease and nothing acknowledged is lost.
func TestFaultServerRestart(t *testing.T) {
	t.Parallel()
	srv := pgtest.Own(t)
	dsn := srv.DSN("postgres")
	openStore(t, dsn) // the schema exists before the chaos starts
	c := newCounter(pr1)
	done := make(chan struct{})
	var restarts []time.Duration
	go func() {
		defer close(done)
		for range 3 {
			time.Sleep(400 * time.Millisecond)
			start := time.Now()
			if err := srv.Restart(); err != nil {
				t.Errorf("restart: %v", err)
				return
			}
			restarts = append(restarts, time.Since(start).Round(time.Millisecond))
		}
	}()
	c.run(t, func() store.Store { return openStore(t, dsn, pgstore.WithBudget(30*time.Second)) }, 4, 15, 20*time.Second,
		func() time.Duration { return time.Duration(rand.N(10)) * time.Millisecond })
	<-done
	c.verify(t, openStore(t, dsn))
	if len(c.acks) != 60 {
		t.Errorf("%d of 60 writes acknowledged; with a 20 s TTL none may be fenced", len(c.acks))
	}
	t.Logf("restarts took %v; %d grants, %d acknowledged writes", restarts, len(c.tokens), len(c.acks))
}

// TestFaultOutageBeyondBudget: a server that stays down longer than the
// budget fails the operation with STORE_UNAVAILABLE once the budget is
// spent, having written nothing. The budget is measured on a clock that
// moves 250 ms each time the store reads it, so the store gives up after
// the same number of attempts however long each takes on a loaded machine.
func TestFaultOutageBeyondBudget(t *testing.T) {
	t.Parallel()
	srv := pgtest.Own(t)
	s := openStore(t, srv.DSN("postgres"), pgstore.WithBudget(time.Second))
	g := mustAcquire(t, s, pr1, "run-a", time.Minute)
	pgstore.StepBudgetClock(s, 250*time.Millisecond)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	err := s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(pr1, "run-a", 1))
	if !errcode.Is(err, errcode.StoreUnavailable) {
		t.Fatalf("WriteReceipt with the server down: %v, want STORE_UNAVAILABLE", err)
	}
	// The clock is read once at the start and once after each failed
	// attempt, before a backoff of at most 1.5·25 ms·2^attempt: attempts
	// 1 to 3 leave room (250+37, 500+75, 750+150 ms of 1 s), the fourth
	// finds the budget spent (1000 ms + its backoff).
	if !strings.Contains(err.Error(), "(4 attempts)") {
		t.Errorf("WriteReceipt with the server down: %v, want it to give up after 4 attempts", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.LatestReceipt(t.Context(), pr1); err != nil || r != nil {
		t.Errorf("after the outage LatestReceipt = %v, %v; want nothing written", r, err)
	}
	// The lease outlived the outage: the run may go on.
	if err := s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(pr1, "run-a", 1)); err != nil {
		t.Errorf("WriteReceipt after the server came back: %v", err)
	}
}

// TestFaultLeaseLostDuringOutage: the server is down longer than the lease's
// TTL. The run stops itself (LOCK_LOST) by its own deadline while the store
// is unreachable; when the server is back its stale write is refused by the
// database clock and another run takes the lease over. The outage is real
// (the server is stopped); the run's own time is a fake clock that the test
// advances, so when it stops does not depend on the machine's speed.
func TestFaultLeaseLostDuringOutage(t *testing.T) {
	t.Parallel()
	srv := pgtest.Own(t)
	s := openStore(t, srv.DSN("postgres"), pgstore.WithBudget(30*time.Second))
	renewing := &renewSent{Store: s, sent: make(chan struct{})}
	clock := clockwork.NewFakeClock()
	const ttl = time.Second // of the lease in the database, on its clock
	held, err := lease.Acquire(t.Context(), renewing, pr1, "run-a", lease.Config{TTL: ttl, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	l := held.Lease()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	// The renewal loop has set its first timer; the renewal it sends TTL/3
	// on finds the server down, and the run's own deadline comes while
	// the store is still unreachable.
	if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(ttl / 3)
	<-renewing.sent
	clock.Advance(ttl - ttl/5 - ttl/3)
	<-held.Lost()
	if !errcode.Is(held.Err(), errcode.LockLost) {
		t.Errorf("the run ended with %v, want LOCK_LOST", held.Err())
	}
	if n := held.Renewals(); n != 0 {
		t.Errorf("%d renewals got through to a stopped server", n)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The database's clock, which alone decides, passes the lease's expiry.
	for {
		n, err := srv.QueryInt(t.Context(), "postgres", "SELECT (clock_timestamp() >= $1)::int", l.ExpiresAt)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	err = s.WriteReceipt(t.Context(), l, storetest.NewReceipt(pr1, "run-a", 1))
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a write under the lease lost in the outage: %v, want store.ErrLeaseLost", err)
	}
	if r, err := s.LatestReceipt(t.Context(), pr1); err != nil || r != nil {
		t.Errorf("LatestReceipt = %v, %v; want nothing written", r, err)
	}
	g := mustAcquire(t, s, pr1, "run-b", time.Minute)
	if g.Preempted == nil || g.Preempted.Holder != "run-a" || g.Lease.Token != l.Token+1 {
		t.Errorf("takeover after the outage: %+v preempting %+v", g.Lease, g.Preempted)
	}
	held.Release(t.Context()) // a lost lease is not released: nothing happens
	if info, _ := s.ReadLease(t.Context(), pr1); info.Holder != "run-b" {
		t.Errorf("the lost run's Release touched the new lease: %+v", info)
	}
}

// renewSent closes sent when the first renewal is sent to its store.
type renewSent struct {
	store.Store
	once sync.Once
	sent chan struct{}
}

func (r *renewSent) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	r.once.Do(func() { close(r.sent) })
	return r.Store.Renew(ctx, l, ttl)
}
