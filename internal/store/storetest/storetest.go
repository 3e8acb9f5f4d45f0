// Package storetest is the conformance suite every store backend passes
// (docs/design.md §5.1 "The contract"), in one group of subtests per part of
// the contract (Leases, Receipts, States, Records, Quarantines, Index,
// Scopes) and one for names: exclusive leases, expiry and takeover, fenced writes refused
// after takeover and after expiry, release only by the holder, renewal, N
// contenders with one winner, tokens that never go back, receipt and state
// round trips, listing one environment, and names that cannot escape.
//
// A backend's test calls Run with a function that opens a fresh, isolated
// store for one subtest. The subtests run in parallel, so stores must not
// share data (a new directory, database schema or remote per call).
//
// Time. The suite expires leases by calling Clock.Advance. A backend that can
// read its time from a function (the file store's WithClock) passes
// clock.Now and every subtest runs instantly on a fake clock. A backend that
// cannot (a server clock, a remote) calls clock.UseWallTime(ttl) inside open:
// Now then returns the real time, Advance sleeps, and the suite grants every
// lease with that ttl, which must be long enough for a handful of the
// backend's operations to finish well inside a quarter of it.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// DefaultTTL is the lease TTL the suite uses on a fake clock.
const DefaultTTL = time.Minute

// Clock is the time of one subtest. It starts as a fake clock that only moves
// when Advance is called; UseWallTime turns it into the real clock. It is
// safe for concurrent use.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	wall bool
	ttl  time.Duration
}

// NewClock returns a fake clock at a fixed instant, with DefaultTTL.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), ttl: DefaultTTL}
}

// UseWallTime makes the clock the real one: Now returns time.Now and Advance
// sleeps. ttl becomes the lease TTL of the subtest. For backends that cannot
// take their time from Now.
func (c *Clock) UseWallTime(ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall, c.ttl = true, ttl
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wall {
		return time.Now()
	}
	return c.now
}

// Advance moves a fake clock forward by d, or sleeps d on the wall clock.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	wall := c.wall
	if !wall {
		c.now = c.now.Add(d)
	}
	c.mu.Unlock()
	if wall {
		time.Sleep(d)
	}
}

// TTL returns the lease TTL the suite uses with this clock.
func (c *Clock) TTL() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ttl
}

// Run runs the conformance suite. open is called once per subtest and must
// return a fresh store that takes its time from clock (or has called
// clock.UseWallTime); Run closes it when the subtest ends.
func Run(t *testing.T, open func(t *testing.T, clock *Clock) store.Store) {
	t.Helper()
	for _, p := range parts {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range p.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					clock := NewClock()
					s := open(t, clock)
					t.Cleanup(func() {
						if err := s.Close(); err != nil {
							t.Errorf("Close: %v", err)
						}
					})
					tc.run(t, &suite{s: s, clock: clock, ttl: clock.TTL()})
				})
			}
		})
	}
}

// test is one subtest of the suite.
type test struct {
	name string
	run  func(*testing.T, *suite)
}

// parts are the subtests by part of the contract (store.Leases,
// store.Receipts, ...): a subtest of a part of documents writes them under
// a lease and checks that the write is fenced by it. Names are checked by
// every part alike.
var parts = []struct {
	name  string
	tests []test
}{
	{"Leases", []test{
		{"ExclusiveLease", testExclusiveLease},
		{"ExpiryAndTakeover", testExpiryAndTakeover},
		{"ReleaseOnlyByHolder", testReleaseOnlyByHolder},
		{"Renew", testRenew},
		{"Contenders", testContenders},
		{"TokensNeverGoBack", testTokensNeverGoBack},
		{"HolderInfo", testHolderInfo},
	}},
	{"Receipts", []test{
		{"RoundTrip", testReceiptRoundTrip},
		// Receipts and states together: the two writes of a run.
		{"FencedWriteRefusedAfterTakeover", testFencedAfterTakeover},
		{"FencedWriteRefusedAfterExpiry", testFencedAfterExpiry},
		{"CheckpointJournal", testJournal},
		{"CompactLedger", testCompactLedger},
		{"History", testReceiptHistory},
	}},
	{"States", []test{
		{"RoundTrip", testStateRoundTrip},
	}},
	{"Records", []test{
		{"RecordsAreFenced", testRecords},
	}},
	{"Quarantines", []test{
		{"Quarantine", testQuarantine},
	}},
	{"Index", []test{
		{"OwnersIndex", testOwners},
	}},
	{"Scopes", []test{
		{"ListOneEnvironment", testList},
	}},
	{"Moves", []test{
		// Every part at once: a stack's scope moved to another stack.
		{"StackMove", testStackMove},
	}},
	{"Names", []test{
		{"InvalidNames", testInvalidNames},
		{"StacksAreIndependent", testStacks},
		{"InvalidStacks", testInvalidStacks},
	}},
}

// suite is what a subtest works with.
type suite struct {
	s     store.Store
	clock *Clock
	ttl   time.Duration
}

const (
	preview    = "preview"
	production = "production"
)

// Stack is the stack of the suite's keys: a name with every character a
// store must encode ("/", "//", "_", ".").
const Stack = "github.com/acme/infra_x//stacks/app"

// otherStack is a second root module of the same repository.
const otherStack = "github.com/acme/infra_x//stacks/network"

func key(env, scope string) store.Key { return store.Key{Stack: Stack, Environment: env, Scope: scope} }

func (x *suite) acquire(t *testing.T, k store.Key, holder string) store.Grant {
	t.Helper()
	g, err := x.s.Acquire(t.Context(), k, holder, x.ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", k, holder, err)
	}
	if g.Lease.Key != k || g.Lease.Holder != holder {
		t.Fatalf("Acquire(%s, %s) granted %+v", k, holder, g.Lease)
	}
	return g
}

func (x *suite) release(t *testing.T, l store.Lease) {
	t.Helper()
	if err := x.s.Release(t.Context(), l); err != nil {
		t.Fatalf("Release(%s, %s, token %d): %v", l.Key, l.Holder, l.Token, err)
	}
}

func (x *suite) readLease(t *testing.T, k store.Key) store.LeaseInfo {
	t.Helper()
	info, err := x.s.ReadLease(t.Context(), k)
	if err != nil {
		t.Fatalf("ReadLease(%s): %v", k, err)
	}
	return info
}

func (x *suite) latest(t *testing.T, k store.Key) *receipt.Receipt {
	t.Helper()
	r, err := x.s.LatestReceipt(t.Context(), k)
	if err != nil {
		t.Fatalf("LatestReceipt(%s): %v", k, err)
	}
	return r
}

func (x *suite) state(t *testing.T, k store.Key) []byte {
	t.Helper()
	b, err := x.s.ReadState(t.Context(), k)
	if err != nil {
		t.Fatalf("ReadState(%s): %v", k, err)
	}
	return b
}

// expire moves the clock past the TTL of every lease granted or renewed so
// far, with a margin for backends on the wall clock.
func (x *suite) expire() { x.clock.Advance(x.ttl + x.ttl/4) }

// NewReceipt returns a valid receipt of k by run runID whose ledger has n
// entries, for backend tests beyond the suite.
func NewReceipt(k store.Key, runID string, n int) *receipt.Receipt {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)
	r := &receipt.Receipt{
		Version:     receipt.Version,
		RunID:       runID,
		Command:     "apply",
		Stack:       k.Stack,
		Environment: k.Environment,
		Scope:       k.Scope,
		Status:      receipt.StatusApplied,
		StartedAt:   start,
		FinishedAt:  start.Add(time.Second),
		Commit:      "0123456789abcdef0123456789abcdef01234567",
		Engine:      receipt.Engine{Name: "tofu", Version: "1.12.6"},
		Changes:     []receipt.Change{{Address: "terraform_data.x", Type: "terraform_data", Actions: []string{"create"}}},
		Ledger:      []receipt.Entry{},
	}
	for i := range n {
		r.Ledger = append(r.Ledger, receipt.Entry{
			Identity:  fmt.Sprintf("terraform.io/builtin/terraform/terraform_data/%d", i),
			Address:   fmt.Sprintf("terraform_data.x[%d]", i),
			Provider:  "terraform.io/builtin/terraform",
			Type:      "terraform_data",
			ID:        fmt.Sprint(i),
			CreatedBy: receipt.CreatedBySponson,
		})
	}
	return r
}

func wantHeld(t *testing.T, err error, k store.Key, holder string) store.LeaseInfo {
	t.Helper()
	var held *store.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("got %v, want *store.HeldError naming %s", err, holder)
	}
	if held.Key != k || held.Lease.Holder != holder {
		t.Fatalf("HeldError names %s held by %q, want %s held by %q", held.Key, held.Lease.Holder, k, holder)
	}
	return held.Lease
}

func wantLost(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("%s: got %v, want store.ErrLeaseLost", what, err)
	}
}

// sameInstant compares times a backend stored and read back, allowing for
// storage precision (PostgreSQL keeps microseconds).
func sameInstant(a, b time.Time) bool {
	return a.Sub(b).Abs() <= time.Millisecond
}

// diffLease compares lease records the same way.
func diffLease(want, got store.LeaseInfo) string {
	return cmp.Diff(want, got, cmp.Comparer(sameInstant))
}

func testExclusiveLease(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	g := x.acquire(t, k, "run-a")
	if g.Lease.Token != 1 {
		t.Errorf("first grant has token %d, want 1", g.Lease.Token)
	}
	if g.Preempted != nil {
		t.Errorf("first grant preempted %+v", *g.Preempted)
	}
	if !g.Lease.ExpiresAt.After(x.clock.Now()) {
		t.Errorf("grant expires at %s, not after now %s", g.Lease.ExpiresAt, x.clock.Now())
	}

	_, err := x.s.Acquire(t.Context(), k, "run-b", x.ttl)
	held := wantHeld(t, err, k, "run-a")
	if held.Token != g.Lease.Token || !sameInstant(held.ExpiresAt, g.Lease.ExpiresAt) {
		t.Errorf("HeldError carries token %d expiring %s, want token %d expiring %s",
			held.Token, held.ExpiresAt, g.Lease.Token, g.Lease.ExpiresAt)
	}

	// A holder id names one run: asking twice is refused, not re-granted.
	_, err = x.s.Acquire(t.Context(), k, "run-a", x.ttl)
	wantHeld(t, err, k, "run-a")

	info := x.readLease(t, k)
	if info.Holder != "run-a" || info.Token != 1 || !info.Live(x.clock.Now()) {
		t.Errorf("ReadLease = %+v, want live run-a with token 1", info)
	}

	// Other scopes, and the same scope name in another environment, are
	// independent leases.
	x.acquire(t, key(preview, "pr-2"), "run-b")
	x.acquire(t, key(production, "pr-1"), "run-c")
}

func testExpiryAndTakeover(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	a := x.acquire(t, k, "run-a")

	x.clock.Advance(x.ttl / 2)
	_, err := x.s.Acquire(t.Context(), k, "run-b", x.ttl)
	wantHeld(t, err, k, "run-a")

	x.expire()
	if info := x.readLease(t, k); info.Live(x.clock.Now()) {
		t.Fatalf("lease %+v still live after its TTL", info)
	}
	b := x.acquire(t, k, "run-b")
	if b.Preempted == nil {
		t.Fatal("takeover of an expired lease did not report Preempted")
	}
	if b.Preempted.Holder != "run-a" || b.Preempted.Token != a.Lease.Token || !sameInstant(b.Preempted.ExpiresAt, a.Lease.ExpiresAt) {
		t.Errorf("Preempted = %+v, want run-a with token %d expiring %s", *b.Preempted, a.Lease.Token, a.Lease.ExpiresAt)
	}
	if b.Lease.Token != a.Lease.Token+1 {
		t.Errorf("takeover token = %d, want %d", b.Lease.Token, a.Lease.Token+1)
	}
	if info := x.readLease(t, k); info.Holder != "run-b" || info.Token != b.Lease.Token {
		t.Errorf("ReadLease = %+v, want run-b with token %d", info, b.Lease.Token)
	}
}

func testFencedAfterTakeover(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	a := x.acquire(t, k, "run-a")
	if err := x.s.WriteReceipt(t.Context(), a.Lease, NewReceipt(k, "run-a", 1)); err != nil {
		t.Fatalf("holder's WriteReceipt: %v", err)
	}
	if err := x.s.WriteState(t.Context(), a.Lease, []byte(`{"serial":1,"by":"run-a"}`)); err != nil {
		t.Fatalf("holder's WriteState: %v", err)
	}

	x.expire()
	b := x.acquire(t, k, "run-b")
	rb := NewReceipt(k, "run-b", 2)
	sb := []byte(`{"serial":2,"by":"run-b"}`)
	if err := x.s.WriteReceipt(t.Context(), b.Lease, rb); err != nil {
		t.Fatalf("new holder's WriteReceipt: %v", err)
	}
	if err := x.s.WriteState(t.Context(), b.Lease, sb); err != nil {
		t.Fatalf("new holder's WriteState: %v", err)
	}
	leaseB := x.readLease(t, k)

	// The old holder believes it still holds the lease; the store decides.
	wantLost(t, x.s.WriteReceipt(t.Context(), a.Lease, NewReceipt(k, "run-a", 3)), "old holder's WriteReceipt")
	wantLost(t, x.s.WriteState(t.Context(), a.Lease, []byte(`{"serial":3,"by":"run-a"}`)), "old holder's WriteState")
	_, err := x.s.Renew(t.Context(), a.Lease, x.ttl)
	wantLost(t, err, "old holder's Renew")
	wantLost(t, x.s.Release(t.Context(), a.Lease), "old holder's Release")

	if diff := cmp.Diff(rb, x.latest(t, k)); diff != "" {
		t.Errorf("latest receipt changed by refused writes (-want +got):\n%s", diff)
	}
	if got := x.state(t, k); !bytes.Equal(got, sb) {
		t.Errorf("state = %q, want the new holder's %q", got, sb)
	}
	if diff := diffLease(leaseB, x.readLease(t, k)); diff != "" {
		t.Errorf("lease changed by refused calls (-want +got):\n%s", diff)
	}
}

func testFencedAfterExpiry(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	a := x.acquire(t, k, "run-a")
	ra := NewReceipt(k, "run-a", 1)
	sa := []byte(`{"serial":1}`)
	if err := x.s.WriteReceipt(t.Context(), a.Lease, ra); err != nil {
		t.Fatalf("WriteReceipt: %v", err)
	}
	if err := x.s.WriteState(t.Context(), a.Lease, sa); err != nil {
		t.Fatalf("WriteState: %v", err)
	}
	before := x.readLease(t, k)

	// Nobody took over, but the lease is past its expiry by the store's
	// clock: the holder can no longer write.
	x.expire()
	wantLost(t, x.s.WriteReceipt(t.Context(), a.Lease, NewReceipt(k, "run-a", 2)), "WriteReceipt after expiry")
	wantLost(t, x.s.WriteState(t.Context(), a.Lease, []byte(`{"serial":2}`)), "WriteState after expiry")
	_, err := x.s.Renew(t.Context(), a.Lease, x.ttl)
	wantLost(t, err, "Renew after expiry")

	if diff := cmp.Diff(ra, x.latest(t, k)); diff != "" {
		t.Errorf("latest receipt changed (-want +got):\n%s", diff)
	}
	if got := x.state(t, k); !bytes.Equal(got, sa) {
		t.Errorf("state = %q, want %q", got, sa)
	}
	if diff := diffLease(before, x.readLease(t, k)); diff != "" {
		t.Errorf("lease changed by refused calls (-want +got):\n%s", diff)
	}
}

func testReleaseOnlyByHolder(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	a := x.acquire(t, k, "run-a")
	before := x.readLease(t, k)

	forged := []struct {
		name string
		l    store.Lease
	}{
		{"non-holder", store.Lease{Key: k, Holder: "run-b", Token: a.Lease.Token, ExpiresAt: a.Lease.ExpiresAt}},
		{"stale token", store.Lease{Key: k, Holder: "run-a", Token: a.Lease.Token - 1, ExpiresAt: a.Lease.ExpiresAt}},
		{"future token", store.Lease{Key: k, Holder: "run-a", Token: a.Lease.Token + 1, ExpiresAt: a.Lease.ExpiresAt}},
		{"empty holder", store.Lease{Key: k, Holder: "", Token: a.Lease.Token, ExpiresAt: a.Lease.ExpiresAt}},
		{"other scope", store.Lease{Key: key(preview, "pr-2"), Holder: "run-a", Token: a.Lease.Token, ExpiresAt: a.Lease.ExpiresAt}},
	}
	for _, f := range forged {
		wantLost(t, x.s.Release(t.Context(), f.l), "Release by "+f.name)
		wantLost(t, x.s.WriteReceipt(t.Context(), f.l, NewReceipt(f.l.Key, "run-x", 1)), "WriteReceipt by "+f.name)
		wantLost(t, x.s.WriteState(t.Context(), f.l, []byte("{}")), "WriteState by "+f.name)
	}
	if diff := diffLease(before, x.readLease(t, k)); diff != "" {
		t.Errorf("lease changed by refused releases (-want +got):\n%s", diff)
	}
	if r := x.latest(t, k); r != nil {
		t.Errorf("refused write left a receipt: %+v", r)
	}
	if s := x.state(t, k); s != nil {
		t.Errorf("refused write left a state: %q", s)
	}

	x.release(t, a.Lease)
	info := x.readLease(t, k)
	if info.Holder != "" || info.Token != a.Lease.Token || info.Live(x.clock.Now()) {
		t.Errorf("after release ReadLease = %+v, want free with token %d kept", info, a.Lease.Token)
	}
	wantLost(t, x.s.Release(t.Context(), a.Lease), "second Release")
	wantLost(t, x.s.WriteReceipt(t.Context(), a.Lease, NewReceipt(k, "run-a", 1)), "WriteReceipt after release")

	b := x.acquire(t, k, "run-b")
	if b.Lease.Token != a.Lease.Token+1 {
		t.Errorf("grant after release has token %d, want %d", b.Lease.Token, a.Lease.Token+1)
	}
	if b.Preempted != nil {
		t.Errorf("grant after release reports Preempted %+v; a released lease is not preempted", *b.Preempted)
	}
}

func testRenew(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	g := x.acquire(t, k, "run-a")

	x.clock.Advance(x.ttl / 2)
	l, err := x.s.Renew(t.Context(), g.Lease, x.ttl)
	if err != nil {
		t.Fatalf("holder's Renew: %v", err)
	}
	if l.Key != k || l.Holder != "run-a" || l.Token != g.Lease.Token {
		t.Errorf("Renew returned %+v, want the same holder and token as %+v", l, g.Lease)
	}
	if !l.ExpiresAt.After(g.Lease.ExpiresAt) {
		t.Errorf("Renew expires at %s, not after the grant's %s", l.ExpiresAt, g.Lease.ExpiresAt)
	}
	if info := x.readLease(t, k); !sameInstant(info.ExpiresAt, l.ExpiresAt) || info.Token != g.Lease.Token {
		t.Errorf("ReadLease = %+v, want token %d expiring %s", info, g.Lease.Token, l.ExpiresAt)
	}

	// Past the grant's expiry, inside the renewal's.
	x.clock.Advance(x.ttl * 3 / 4)
	_, err = x.s.Acquire(t.Context(), k, "run-b", x.ttl)
	wantHeld(t, err, k, "run-a")
	if err := x.s.WriteReceipt(t.Context(), l, NewReceipt(k, "run-a", 1)); err != nil {
		t.Errorf("WriteReceipt inside the renewed lease: %v", err)
	}

	_, err = x.s.Renew(t.Context(), store.Lease{Key: k, Holder: "run-b", Token: l.Token}, x.ttl)
	wantLost(t, err, "Renew by a non-holder")
	_, err = x.s.Renew(t.Context(), store.Lease{Key: k, Holder: "run-a", Token: l.Token + 1}, x.ttl)
	wantLost(t, err, "Renew with a wrong token")
	_, err = x.s.Renew(t.Context(), store.Lease{Key: key(preview, "pr-9"), Holder: "run-a", Token: l.Token}, x.ttl)
	wantLost(t, err, "Renew of a scope never leased")

	x.expire()
	_, err = x.s.Renew(t.Context(), l, x.ttl)
	wantLost(t, err, "Renew after expiry")
}

func testContenders(t *testing.T, x *suite) {
	const n = 16
	k := key(preview, "pr-1")

	round := func(prefix string) store.Grant {
		t.Helper()
		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			grants = make([]store.Grant, n)
			errs   = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				grants[i], errs[i] = x.s.Acquire(t.Context(), k, fmt.Sprintf("%s-%02d", prefix, i), x.ttl)
			})
		}
		close(start)
		wg.Wait()

		var winners []store.Grant
		for i, err := range errs {
			if err == nil {
				winners = append(winners, grants[i])
			}
		}
		if len(winners) != 1 {
			t.Fatalf("%d contenders: %d winners %+v, want exactly 1 (errors: %v)", n, len(winners), winners, errs)
		}
		w := winners[0]
		for _, err := range errs {
			if err != nil {
				wantHeld(t, err, k, w.Lease.Holder)
			}
		}
		if info := x.readLease(t, k); info.Holder != w.Lease.Holder || info.Token != w.Lease.Token {
			t.Errorf("ReadLease = %+v, want the winner %s with token %d", info, w.Lease.Holder, w.Lease.Token)
		}
		return w
	}

	first := round("run-1")
	if first.Lease.Token != 1 || first.Preempted != nil {
		t.Errorf("first round granted %+v preempting %v, want token 1 and no preemption", first.Lease, first.Preempted)
	}

	// An expired lease contested by many: still exactly one winner, and it
	// is the only one to report the takeover.
	x.expire()
	second := round("run-2")
	if second.Lease.Token != 2 || second.Preempted == nil || second.Preempted.Holder != first.Lease.Holder {
		t.Errorf("second round granted %+v preempting %+v, want token 2 preempting %s", second.Lease, second.Preempted, first.Lease.Holder)
	}
}

func testTokensNeverGoBack(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	var last int64
	observe := func(step string) {
		t.Helper()
		info := x.readLease(t, k)
		if info.Token != last {
			t.Fatalf("%s: ReadLease token = %d, want %d", step, info.Token, last)
		}
	}
	for i := range 9 {
		holder := fmt.Sprintf("run-%d", i)
		g := x.acquire(t, k, holder)
		if g.Lease.Token != last+1 {
			t.Fatalf("grant %d: token %d, want %d", i, g.Lease.Token, last+1)
		}
		last = g.Lease.Token
		observe("after grant " + holder)

		switch i % 3 {
		case 0: // released by its holder
			x.release(t, g.Lease)
			observe("after release of " + holder)
		case 1: // abandoned; the next grant takes it over
			_, err := x.s.Acquire(t.Context(), k, "run-waiting", x.ttl)
			wantHeld(t, err, k, holder)
			observe("after a refused acquire")
			x.expire()
			wantLost(t, x.s.Release(t.Context(), g.Lease), "Release after expiry")
			observe("after a refused release")
		case 2: // renewed, then released
			l, err := x.s.Renew(t.Context(), g.Lease, x.ttl)
			if err != nil {
				t.Fatalf("Renew: %v", err)
			}
			observe("after renewal")
			x.release(t, l)
			observe("after release of " + holder)
		}
	}
}

func testReceiptRoundTrip(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	if r := x.latest(t, k); r != nil {
		t.Fatalf("LatestReceipt of an untouched scope = %+v, want nil", r)
	}
	a := x.acquire(t, k, "run-a")
	if r := x.latest(t, k); r != nil {
		t.Fatalf("LatestReceipt of a scope without receipt = %+v, want nil", r)
	}

	// A checkpoint, then the final receipt of the same run.
	checkpoint := NewReceipt(k, "run-a", 1)
	checkpoint.Status = receipt.StatusRunning
	checkpoint.FinishedAt = time.Time{}
	final := NewReceipt(k, "run-a", 3)
	final.LockPreempted = &receipt.Preempted{Holder: "run-0", Since: final.StartedAt.Add(-time.Hour), Until: final.StartedAt.Add(-time.Minute)}
	for _, r := range []*receipt.Receipt{checkpoint, final} {
		if err := x.s.WriteReceipt(t.Context(), a.Lease, r); err != nil {
			t.Fatalf("WriteReceipt(%s): %v", r.Status, err)
		}
		if diff := cmp.Diff(r, x.latest(t, k)); diff != "" {
			t.Errorf("LatestReceipt after writing the %s receipt (-want +got):\n%s", r.Status, diff)
		}
	}
	x.release(t, a.Lease)

	b := x.acquire(t, k, "run-b")
	rb := NewReceipt(k, "run-b", 4)
	rb.InheritedFrom = "branch-feat-search"
	if err := x.s.WriteReceipt(t.Context(), b.Lease, rb); err != nil {
		t.Fatalf("WriteReceipt: %v", err)
	}
	if diff := cmp.Diff(rb, x.latest(t, k)); diff != "" {
		t.Errorf("LatestReceipt after the next run (-want +got):\n%s", diff)
	}

	other := key(preview, "pr-2")
	if r := x.latest(t, other); r != nil {
		t.Errorf("LatestReceipt of another scope = %+v, want nil", r)
	}
	forged := store.Lease{Key: other, Holder: b.Lease.Holder, Token: b.Lease.Token, ExpiresAt: b.Lease.ExpiresAt}
	wantLost(t, x.s.WriteReceipt(t.Context(), forged, NewReceipt(other, "run-b", 1)), "WriteReceipt into a scope not leased")
}

// testReceiptHistory: a store that lists the receipts it kept
// (store.History) returns every run's receipt of the scope, one per run
// (the run's latest write: an outcome replaces its checkpoint), oldest
// first by start whatever the order of the writes and run ids, and never
// another scope's, stack's or environment's.
func testReceiptHistory(t *testing.T, x *suite) {
	h, ok := x.s.(store.History)
	if !ok {
		t.Skipf("%T lists no receipts (store.History)", x.s)
	}
	history := func(k store.Key) []*receipt.Receipt {
		t.Helper()
		rs, err := h.ReceiptHistory(t.Context(), k)
		if err != nil {
			t.Fatalf("ReceiptHistory(%s): %v", k, err)
		}
		return rs
	}
	k := key(preview, "pr-1")
	if rs := history(k); len(rs) != 0 {
		t.Fatalf("ReceiptHistory of an untouched scope = %d receipts, want none", len(rs))
	}
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	run := func(k store.Key, id string, start time.Duration, statuses ...string) (*receipt.Receipt, store.Lease) {
		t.Helper()
		g := x.acquire(t, k, id)
		var r *receipt.Receipt
		for i, st := range statuses {
			r = NewReceipt(k, id, i+1)
			r.StartedAt, r.Status = at.Add(start), st
			r.FinishedAt = r.StartedAt.Add(time.Minute)
			if st == receipt.StatusRunning {
				r.FinishedAt = time.Time{}
			}
			if err := x.s.WriteReceipt(t.Context(), g.Lease, r); err != nil {
				t.Fatalf("WriteReceipt(%s, %s): %v", id, st, err)
			}
		}
		return r, g.Lease
	}
	// Written in the order z, m, a; started in the order z, a, m (run-a
	// waited for the lease, and took it over when run-m's expired); in
	// the order of their ids a, m, z.
	z, lz := run(k, "run-z", 10*time.Minute, receipt.StatusRunning, receipt.StatusApplied)
	x.release(t, lz)
	m, _ := run(k, "run-m", 30*time.Minute, receipt.StatusRunning)
	x.expire()
	a, la := run(k, "run-a", 20*time.Minute, receipt.StatusRunning, receipt.StatusFailed)
	x.release(t, la)
	other, lo := run(key(preview, "pr-2"), "run-q", 0, receipt.StatusApplied)
	x.release(t, lo)
	_, ls := run(store.Key{Stack: otherStack, Environment: preview, Scope: "pr-1"}, "run-s", 0, receipt.StatusApplied)
	x.release(t, ls)
	_, lp := run(key(production, "pr-1"), "run-p", 0, receipt.StatusDestroyed)
	x.release(t, lp)

	if diff := cmp.Diff([]*receipt.Receipt{z, a, m}, history(k)); diff != "" {
		t.Errorf("ReceiptHistory(%s) (-want +got):\n%s", k, diff)
	}
	if diff := cmp.Diff([]*receipt.Receipt{other}, history(key(preview, "pr-2"))); diff != "" {
		t.Errorf("ReceiptHistory of another scope (-want +got):\n%s", diff)
	}
}

func testStateRoundTrip(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	if s := x.state(t, k); s != nil {
		t.Fatalf("ReadState of an untouched scope = %q, want nil", s)
	}
	g := x.acquire(t, k, "run-a")
	if s := x.state(t, k); s != nil {
		t.Fatalf("ReadState of a scope without state = %q, want nil", s)
	}
	small := []byte(`{"version":4,"serial":1,"lineage":"3f1c","resources":[]}` + "\n")
	large := bytes.Repeat([]byte(`{"a":"\u00e9\u0000"}`+"\n"), 20000)
	for _, want := range [][]byte{small, large, small} {
		if err := x.s.WriteState(t.Context(), g.Lease, want); err != nil {
			t.Fatalf("WriteState(%d bytes): %v", len(want), err)
		}
		if got := x.state(t, k); !bytes.Equal(got, want) {
			t.Fatalf("ReadState returned %d bytes, want the %d written", len(got), len(want))
		}
	}
	if s := x.state(t, key(preview, "pr-2")); s != nil {
		t.Errorf("ReadState of another scope = %q, want nil", s)
	}
	forged := store.Lease{Key: key(preview, "pr-2"), Holder: g.Lease.Holder, Token: g.Lease.Token}
	wantLost(t, x.s.WriteState(t.Context(), forged, small), "WriteState into a scope not leased")
}

func testList(t *testing.T, x *suite) {
	leases := map[store.Key]store.Grant{}
	for _, k := range []store.Key{key(preview, "pr-2"), key(preview, "pr-10"), key(preview, "main"), key(production, "main"), key("staging", "pr-2")} {
		leases[k] = x.acquire(t, k, "run-"+k.Environment+"-"+k.Scope)
	}
	withReceipt := key(preview, "pr-10")
	r := NewReceipt(withReceipt, leases[withReceipt].Lease.Holder, 2)
	// Renewed first: on a wall-clock store the acquires above may have
	// taken most of the TTL on a loaded machine.
	renewed, err := x.s.Renew(t.Context(), leases[withReceipt].Lease, x.ttl)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	leases[withReceipt] = store.Grant{Lease: renewed}
	if err := x.s.WriteReceipt(t.Context(), renewed, r); err != nil {
		t.Fatalf("WriteReceipt: %v", err)
	}
	x.release(t, leases[key(preview, "main")].Lease)

	got, err := x.s.List(t.Context(), preview)
	if err != nil {
		t.Fatalf("List(%s): %v", preview, err)
	}
	type row struct {
		Key    store.Key
		Holder string
		Token  int64
		RunID  string
	}
	rows := func(sums []store.ScopeSummary) []row {
		var out []row
		for _, s := range sums {
			rw := row{Key: s.Key, Holder: s.Lease.Holder, Token: s.Lease.Token}
			if s.Latest != nil {
				rw.RunID = s.Latest.RunID
			}
			out = append(out, rw)
		}
		return out
	}
	want := []row{
		{Key: key(preview, "main"), Holder: "", Token: 1},
		{Key: key(preview, "pr-10"), Holder: leases[withReceipt].Lease.Holder, Token: 1, RunID: r.RunID},
		{Key: key(preview, "pr-2"), Holder: leases[key(preview, "pr-2")].Lease.Holder, Token: 1},
	}
	if diff := cmp.Diff(want, rows(got)); diff != "" {
		t.Errorf("List(%s) (-want +got):\n%s", preview, diff)
	}
	for _, s := range got {
		if s.Key == withReceipt {
			if diff := cmp.Diff(r, s.Latest); diff != "" {
				t.Errorf("List(%s) latest receipt of %s (-want +got):\n%s", preview, s.Key, diff)
			}
		}
	}

	got, err = x.s.List(t.Context(), production)
	if err != nil {
		t.Fatalf("List(%s): %v", production, err)
	}
	if diff := cmp.Diff([]row{{Key: key(production, "main"), Holder: leases[key(production, "main")].Lease.Holder, Token: 1}}, rows(got)); diff != "" {
		t.Errorf("List(%s) (-want +got):\n%s", production, diff)
	}

	got, err = x.s.List(t.Context(), "qa")
	if err != nil {
		t.Fatalf("List of an environment without scopes: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("List(qa) = %+v, want no scopes", got)
	}
}

func testInvalidNames(t *testing.T, x *suite) {
	bad := []string{"", ".", "..", "a/b", "../preview", ".x", "a b", "a\x00b", "pr-1\n", strings.Repeat("a", 129)}
	ok := store.Lease{Key: key(preview, "pr-1"), Holder: "run-a", Token: 1}
	for _, name := range bad {
		for _, k := range []store.Key{key(name, "pr-1"), key(preview, name)} {
			l := store.Lease{Key: k, Holder: ok.Holder, Token: ok.Token}
			calls := map[string]error{}
			_, calls["Acquire"] = x.s.Acquire(t.Context(), k, "run-a", x.ttl)
			_, calls["Renew"] = x.s.Renew(t.Context(), l, x.ttl)
			calls["Release"] = x.s.Release(t.Context(), l)
			_, calls["ReadLease"] = x.s.ReadLease(t.Context(), k)
			calls["WriteReceipt"] = x.s.WriteReceipt(t.Context(), l, NewReceipt(k, "run-a", 1))
			_, calls["LatestReceipt"] = x.s.LatestReceipt(t.Context(), k)
			calls["WriteState"] = x.s.WriteState(t.Context(), l, []byte("{}"))
			_, calls["ReadState"] = x.s.ReadState(t.Context(), k)
			for call, err := range calls {
				if !errcode.Is(err, errcode.Usage) {
					t.Errorf("%s(%q) = %v, want a USAGE error", call, k, err)
				}
			}
		}
		if _, err := x.s.List(t.Context(), name); !errcode.Is(err, errcode.Usage) {
			t.Errorf("List(%q) = %v, want a USAGE error", name, err)
		}
	}

	// Dots, underscores and dashes inside a name are fine
	// (branch-release-1.2_rc), and so is the longest name.
	for _, name := range []string{"branch-release-1.2_rc", "A..b", strings.Repeat("a", 128)} {
		x.acquire(t, key(preview, name), "run-a")
		x.acquire(t, key(name, "main"), "run-a")
	}
}

func testRecords(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	if r, err := x.s.ReadRecord(t.Context(), k, "scope"); err != nil || r != nil {
		t.Fatalf("ReadRecord of an untouched scope = %q, %v; want nil, nil", r, err)
	}
	a := x.acquire(t, k, "run-a")
	doc := []byte(`{"name":"pr-1"}`)
	if err := x.s.WriteRecord(t.Context(), a.Lease, "scope", doc); err != nil {
		t.Fatalf("WriteRecord: %v", err)
	}
	if r, err := x.s.ReadRecord(t.Context(), k, "scope"); err != nil || !bytes.Equal(r, doc) {
		t.Fatalf("ReadRecord = %q, %v; want %q", r, err, doc)
	}
	x.expire()
	b := x.acquire(t, k, "run-b")
	wantLost(t, x.s.WriteRecord(t.Context(), a.Lease, "scope", []byte(`{"name":"stale"}`)), "old holder's WriteRecord")
	wantLost(t, x.s.DeleteRecord(t.Context(), a.Lease, "scope"), "old holder's DeleteRecord")
	if r, _ := x.s.ReadRecord(t.Context(), k, "scope"); !bytes.Equal(r, doc) {
		t.Fatalf("a refused record write changed the record to %q", r)
	}
	if err := x.s.DeleteRecord(t.Context(), b.Lease, "scope"); err != nil {
		t.Fatalf("DeleteRecord: %v", err)
	}
	if err := x.s.DeleteRecord(t.Context(), b.Lease, "scope"); err != nil {
		t.Fatalf("DeleteRecord of a missing record: %v", err)
	}
	if r, _ := x.s.ReadRecord(t.Context(), k, "scope"); r != nil {
		t.Fatalf("record still there after DeleteRecord: %q", r)
	}
	if err := x.s.WriteRecord(t.Context(), b.Lease, "../lease", doc); !errcode.Is(err, errcode.Usage) {
		t.Errorf("WriteRecord with a path for a name: %v, want USAGE", err)
	}
}

// testJournal: a checkpoint is read with the completions its run wrote to
// its journal after it (store.Latest), and only its own run's: a journal
// left by an earlier run, or a receipt that is no checkpoint, reads as it
// was written. A journal write of a lost lease is refused, and the
// completions it carried are not read.
func testJournal(t *testing.T, x *suite) {
	k := key(preview, "pr-3")
	a := x.acquire(t, k, "run-a")
	cp := NewReceipt(k, "run-a", 2)
	cp.Status = receipt.StatusRunning
	if err := x.s.WriteReceipt(t.Context(), a.Lease, cp); err != nil {
		t.Fatal(err)
	}
	done := []receipt.Completion{{Address: "terraform_data.r[0]", ID: "i-0", Action: "create"}}
	writeJournal(t, x.s, a.Lease, "run-a", done)
	if got := x.joined(t, k).Completed; !slices.Equal(got, done) {
		t.Fatalf("checkpoint read with its journal: completed %+v, want %+v", got, done)
	}
	done = append(done, receipt.Completion{Address: "terraform_data.r[1]", ID: "i-1", Action: "create"})
	writeJournal(t, x.s, a.Lease, "run-a", done)
	if got := x.joined(t, k).Completed; !slices.Equal(got, done) {
		t.Fatalf("after the second journal write: completed %+v, want %+v", got, done)
	}
	x.expire()
	b := x.acquire(t, k, "run-b")
	data, _ := receipt.MarshalJournal("run-a", slices.Concat(done, []receipt.Completion{{Address: "terraform_data.r[2]", ID: "i-2"}}))
	wantLost(t, x.s.WriteRecord(t.Context(), a.Lease, store.JournalRecord, data), "the old holder's journal write")
	if got := x.joined(t, k).Completed; !slices.Equal(got, done) {
		t.Fatalf("after a refused journal write: completed %+v, want %+v", got, done)
	}
	next := NewReceipt(k, "run-b", 2)
	next.Status = receipt.StatusRunning
	if err := x.s.WriteReceipt(t.Context(), b.Lease, next); err != nil {
		t.Fatal(err)
	}
	if got := x.joined(t, k).Completed; len(got) != 0 {
		t.Fatalf("a checkpoint read with an earlier run's journal: completed %+v", got)
	}
	writeJournal(t, x.s, b.Lease, "run-b", done)
	next.Status = receipt.StatusApplied
	if err := x.s.WriteReceipt(t.Context(), b.Lease, next); err != nil {
		t.Fatal(err)
	}
	if got := x.joined(t, k).Completed; len(got) != 0 {
		t.Fatalf("a finished receipt read with its run's journal: completed %+v", got)
	}
}

// testCompactLedger writes receipts against a ledger base (store.WriteCompact,
// with a threshold of 4 entries so that 8 are large): each reads back whole
// through store.Latest and store.ListScopes, stores only its difference
// from the base, and indexes the whole ledger; a base missing from the
// store is RECEIPT_CORRUPT, not a scope that owns nothing.
func testCompactLedger(t *testing.T, x *suite) {
	k := key(preview, "pr-big")
	g := x.acquire(t, k, "run-a")
	first := NewReceipt(k, "run-a", 8)
	b, err := store.WriteCompact(t.Context(), x.s, g.Lease, first, nil, 4)
	if err != nil || b == nil {
		t.Fatalf("first compact write: base %v, %v", b, err)
	}
	x.wantCompact(t, k, b.Name, 0, first.Ledger)
	second := NewReceipt(k, "run-a-2", 8)
	second.Ledger[3].ID = "replaced"
	// A writer that knows no base finds the scope's (a run's first write).
	if b2, err := store.WriteCompact(t.Context(), x.s, g.Lease, second, nil, 4); err != nil || b2 == nil || b2.Name != b.Name {
		t.Fatalf("second compact write: base %v (want %s), %v", b2, b.Name, err)
	}
	x.wantCompact(t, k, b.Name, 1, second.Ledger)
	owners, err := x.s.Owners(t.Context(), preview, nil)
	if err != nil || len(owners) != len(second.Ledger) {
		t.Fatalf("the index of a compact receipt: %d owners (%v), want %d", len(owners), err, len(second.Ledger))
	}
	sums, err := store.ListScopes(t.Context(), x.s, preview, "")
	if err != nil || len(sums) != 1 || sums[0].Latest == nil {
		t.Fatalf("ListScopes: %+v, %v", sums, err)
	}
	if d := cmp.Diff(second.Ledger, sums[0].Latest.Ledger); d != "" {
		t.Errorf("ListScopes' ledger (-want +got):\n%s", d)
	}
	// Most of the ledger changed: a new base.
	third := NewReceipt(k, "run-a-3", 8)
	for i := range third.Ledger {
		third.Ledger[i].Address += ".moved"
	}
	b3, err := store.WriteCompact(t.Context(), x.s, g.Lease, third, b, 4)
	if err != nil || b3 == nil || b3.Name == b.Name {
		t.Fatalf("a write that changed most of the ledger: base %v (the old one %s), %v", b3, b.Name, err)
	}
	x.wantCompact(t, k, b3.Name, 0, third.Ledger)
	x.smallAndMissingBase(t, g.Lease, b3)
}

// smallAndMissingBase: after receipts against base, a small ledger is
// written whole, and a receipt naming a base that was never stored cannot
// be read.
func (x *suite) smallAndMissingBase(t *testing.T, l store.Lease, base *receipt.Base) {
	k := l.Key
	if b4, err := store.WriteCompact(t.Context(), x.s, l, NewReceipt(k, "run-a-4", 3), base, 4); err != nil || b4 != nil {
		t.Fatalf("a small ledger: base %v, %v", b4, err)
	}
	if r := x.latest(t, k); r.Compact() || len(r.Ledger) != 3 {
		t.Fatalf("a small ledger stored as %+v", r)
	}
	// A receipt naming a base that was never stored, of a ledger no
	// other test writes: the process's cache of bases cannot know it.
	never := NewReceipt(k, "run-x", 5).Ledger
	never[0].ID = "never stored, " + t.Name()
	lost, _, err := receipt.NewBase(never)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.s.WriteReceipt(t.Context(), l, NewReceipt(k, "run-a-5", 5).Against(lost)); err != nil {
		t.Fatal(err)
	}
	if r, err := store.Latest(t.Context(), x.s, k); !errcode.Is(err, errcode.ReceiptCorrupt) {
		t.Fatalf("a receipt whose base is missing: %v, %v", r, err)
	}
	if _, err := store.ListScopes(t.Context(), x.s, preview, ""); !errcode.Is(err, errcode.ReceiptCorrupt) {
		t.Fatalf("listing a scope whose base is missing: %v", err)
	}
}

// wantCompact checks that k's latest receipt is stored against base with
// literal entries written out, and reads back with ledger.
func (x *suite) wantCompact(t *testing.T, k store.Key, base string, literal int, ledger []receipt.Entry) {
	t.Helper()
	stored := x.latest(t, k)
	if !stored.Compact() || stored.LedgerBase != base || stored.Version != receipt.CompactVersion || receipt.Literal(stored.LedgerDelta) != literal {
		t.Fatalf("stored receipt: version %d, base %q (want %s), %d entries written out (want %d)",
			stored.Version, stored.LedgerBase, base, receipt.Literal(stored.LedgerDelta), literal)
	}
	if d := cmp.Diff(ledger, x.joined(t, k).Ledger); d != "" {
		t.Fatalf("the ledger read back (-want +got):\n%s", d)
	}
}

func writeJournal(t *testing.T, s store.Store, l store.Lease, runID string, done []receipt.Completion) {
	t.Helper()
	data, err := receipt.MarshalJournal(runID, done)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRecord(t.Context(), l, store.JournalRecord, data); err != nil {
		t.Fatalf("journal write: %v", err)
	}
}

func (x *suite) joined(t *testing.T, k store.Key) *receipt.Receipt {
	t.Helper()
	r, err := store.Latest(t.Context(), x.s, k)
	if err != nil || r == nil {
		t.Fatalf("store.Latest(%s) = %v, %v", k, r, err)
	}
	return r
}

func testQuarantine(t *testing.T, x *suite) {
	k := key(preview, "pr-1")
	if q, err := x.s.ListQuarantine(t.Context(), k); err != nil || len(q) != 0 {
		t.Fatalf("ListQuarantine of an untouched scope = %v, %v", q, err)
	}
	g := x.acquire(t, k, "run-b")
	current := []byte(`{"serial":5,"by":"run-b"}`)
	if err := x.s.WriteState(t.Context(), g.Lease, current); err != nil {
		t.Fatal(err)
	}
	// A run without the lease may quarantine; it never replaces the state.
	first := []byte(`{"serial":4,"by":"run-a"}`)
	if err := x.s.Quarantine(t.Context(), k, "run-a", first); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	x.clock.Advance(time.Second)
	second := []byte(`{"serial":6,"by":"run-c"}`)
	if err := x.s.Quarantine(t.Context(), k, "run-c", second); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	if got := x.state(t, k); !bytes.Equal(got, current) {
		t.Fatalf("quarantine replaced the state: %q", got)
	}
	q, err := x.s.ListQuarantine(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 2 || q[0].RunID != "run-a" || !bytes.Equal(q[0].State, first) || q[1].RunID != "run-c" || !bytes.Equal(q[1].State, second) {
		t.Fatalf("ListQuarantine = %+v", q)
	}
	if err := x.s.Quarantine(t.Context(), k, "../x", first); !errcode.Is(err, errcode.Usage) {
		t.Errorf("Quarantine with a path for a run id: %v, want USAGE", err)
	}
}

func testOwners(t *testing.T, x *suite) {
	// owners reads preview's index; production's receipts, written below
	// too, must never show in it.
	owners := func(ids []string) map[string]string {
		t.Helper()
		got, err := x.s.Owners(t.Context(), preview, ids)
		if err != nil {
			t.Fatalf("Owners(%s): %v", preview, err)
		}
		out := map[string]string{}
		for _, o := range got {
			out[o.Identity] = o.Scope + " " + o.CreatedBy + " " + o.RunID
		}
		return out
	}
	if got := owners(nil); len(got) != 0 {
		t.Fatalf("Owners of an empty environment = %v", got)
	}
	write := func(k store.Key, holder string, entries ...receipt.Entry) {
		t.Helper()
		g := x.acquire(t, k, holder)
		r := NewReceipt(k, holder, 0)
		r.Ledger = entries
		if err := x.s.WriteReceipt(t.Context(), g.Lease, r); err != nil {
			t.Fatalf("WriteReceipt: %v", err)
		}
		x.release(t, g.Lease)
	}
	entry := func(id, by string) receipt.Entry {
		return receipt.Entry{Identity: id, Address: "fixture_object." + id, CreatedBy: by}
	}
	write(key(preview, "main"), "run-m", entry("a", "created"), entry("b", "created"))
	write(key(preview, "pr-1"), "run-p", entry("c", "intent"))
	write(key(production, "main"), "run-x", entry("a", "created"))

	want := map[string]string{"a": "main created run-m", "b": "main created run-m", "c": "pr-1 intent run-p"}
	if diff := cmp.Diff(want, owners(nil)); diff != "" {
		t.Errorf("Owners(preview) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"c": "pr-1 intent run-p"}, owners([]string{"c", "zzz"})); diff != "" {
		t.Errorf("Owners(preview, [c zzz]) (-want +got):\n%s", diff)
	}
	sinceOf := func(env, id string) time.Time {
		t.Helper()
		got, err := x.s.Owners(t.Context(), env, []string{id})
		if err != nil || len(got) != 1 {
			t.Fatalf("Owners(%s, %s) = %v, %v", env, id, got, err)
		}
		return got[0].Since
	}
	bSince := sinceOf(preview, "b")
	if bSince.IsZero() {
		t.Error("Owners gives no Since")
	}
	x.clock.Advance(time.Second)
	// A later receipt replaces the scope's part of the index; an identity
	// it keeps keeps the time it was first recorded.
	write(key(preview, "main"), "run-m2", entry("b", "created"))
	if got := sinceOf(preview, "b"); !sameInstant(got, bSince) {
		t.Errorf("Since of a kept identity moved from %s to %s", bSince, got)
	}
	write(key(preview, "pr-2"), "run-z", entry("e", "intent"))
	if got := sinceOf(preview, "e"); !got.After(bSince) {
		t.Errorf("Since of a later identity %s is not after %s", got, bSince)
	}
	// b is listed as it was: it keeps the run that recorded it.
	if diff := cmp.Diff(map[string]string{"b": "main created run-m", "c": "pr-1 intent run-p", "e": "pr-2 intent run-z"}, owners(nil)); diff != "" {
		t.Errorf("Owners after main's new receipt (-want +got):\n%s", diff)
	}
	// An intent that became created is recorded by the run that did it.
	write(key(preview, "pr-2"), "run-z2", entry("e", "created"))
	if got := owners([]string{"e"}); got["e"] != "pr-2 created run-z2" {
		t.Errorf("Owners of a changed entry: %v, want pr-2 created run-z2", got)
	}
	// A refused receipt write leaves the index as it was.
	k := key(preview, "pr-1")
	g := x.acquire(t, k, "run-q")
	x.expire()
	x.acquire(t, k, "run-r")
	r := NewReceipt(k, "run-q", 0)
	r.Ledger = []receipt.Entry{entry("d", "created")}
	wantLost(t, x.s.WriteReceipt(t.Context(), g.Lease, r), "stale WriteReceipt")
	if got := owners([]string{"d"}); len(got) != 0 {
		t.Errorf("a refused receipt write reached the index: %v", got)
	}
}

// testStacks: two stacks with the same environment and scope share
// nothing but the environment's ownership index, which spans both; a
// parent lease (no stack) is one lease for every stack.
func testStacks(t *testing.T, x *suite) {
	a, b := key(preview, "pr-42"), key(preview, "pr-42")
	b.Stack = otherStack
	ga := x.acquire(t, a, "run-a")
	gb := x.acquire(t, b, "run-b") // never waits on a's lease
	if ga.Lease.Token != 1 || gb.Lease.Token != 1 {
		t.Fatalf("tokens %d and %d, want 1 and 1: the stacks share a lease record", ga.Lease.Token, gb.Lease.Token)
	}
	stacksKeepStates(t, x, ga, gb)
	// Renewed before each later write: on the wall clock a lease lasts a
	// handful of operations.
	x.renew(t, &ga)
	stacksKeepReceipts(t, x, ga, b)
	x.renew(t, &gb)
	stacksKeepRecords(t, x, gb, a)
	// A fence of one stack is no proof for the other.
	forged := store.Lease{Key: b, Holder: ga.Lease.Holder, Token: ga.Lease.Token, ExpiresAt: ga.Lease.ExpiresAt}
	wantLost(t, x.s.WriteState(t.Context(), forged, []byte("x")), "WriteState with the lease of another stack")

	// The ownership index spans the stacks of the environment.
	got, err := x.s.Owners(t.Context(), preview, []string{"dns"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Stack != a.Stack || got[0].Scope != a.Scope {
		t.Fatalf("Owners(preview, [dns]) = %+v, want stack %s's pr-42", got, a.Stack)
	}
	stacksShareParentLease(t, x, a, b)
}

// renew renews g's lease in place.
func (x *suite) renew(t *testing.T, g *store.Grant) {
	t.Helper()
	l, err := x.s.Renew(t.Context(), g.Lease, x.ttl)
	if err != nil {
		t.Fatalf("Renew(%s): %v", g.Lease.Key, err)
	}
	g.Lease = l
}

// stacksKeepStates: each stack of one scope reads its own state only.
func stacksKeepStates(t *testing.T, x *suite, ga, gb store.Grant) {
	t.Helper()
	a, b := ga.Lease.Key, gb.Lease.Key
	if err := x.s.WriteState(t.Context(), ga.Lease, []byte(`{"by":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if got := x.state(t, b); got != nil {
		t.Fatalf("stack %s reads the state of stack %s: %q", b.Stack, a.Stack, got)
	}
	if err := x.s.WriteState(t.Context(), gb.Lease, []byte(`{"by":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if got := x.state(t, a); string(got) != `{"by":"a"}` {
		t.Fatalf("stack %s's state became %q", a.Stack, got)
	}
}

// stacksKeepReceipts: a receipt written under ga (whose ledger holds "dns",
// which the index test reads) is its stack's alone, and carries the stack.
func stacksKeepReceipts(t *testing.T, x *suite, ga store.Grant, b store.Key) {
	t.Helper()
	a := ga.Lease.Key
	ra := NewReceipt(a, "run-a", 0)
	ra.Ledger = []receipt.Entry{{Identity: "dns", Address: "fixture_object.dns", CreatedBy: receipt.CreatedBySponson}}
	if err := x.s.WriteReceipt(t.Context(), ga.Lease, ra); err != nil {
		t.Fatal(err)
	}
	if r := x.latest(t, b); r != nil {
		t.Fatalf("stack %s reads the receipt of stack %s: %+v", b.Stack, a.Stack, r)
	}
	if r := x.latest(t, a); r == nil || r.Stack != a.Stack {
		t.Fatalf("LatestReceipt(%s) = %+v, want run-a's receipt with its stack", a, r)
	}
}

// stacksKeepRecords: records and quarantine written for gb's stack are
// not a's.
func stacksKeepRecords(t *testing.T, x *suite, gb store.Grant, a store.Key) {
	t.Helper()
	b := gb.Lease.Key
	if err := x.s.WriteRecord(t.Context(), gb.Lease, "scope", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if r, err := x.s.ReadRecord(t.Context(), a, "scope"); err != nil || r != nil {
		t.Fatalf("ReadRecord(%s) = %q, %v; want nil: records are per stack", a, r, err)
	}
	if err := x.s.Quarantine(t.Context(), b, "run-q", []byte("q")); err != nil {
		t.Fatal(err)
	}
	if q, err := x.s.ListQuarantine(t.Context(), a); err != nil || len(q) != 0 {
		t.Fatalf("ListQuarantine(%s) = %v, %v; want none", a, q, err)
	}
}

// stacksShareParentLease: a parent lease is one lease for every stack, so
// the second stack's Acquire is refused; List shows it beside a and b.
func stacksShareParentLease(t *testing.T, x *suite, a, b store.Key) {
	t.Helper()
	parent := store.Key{Environment: preview, Scope: store.ParentScopePrefix + "0123456789abcdef0123456789abcdef"}
	x.acquire(t, parent, "run-a")
	_, err := x.s.Acquire(t.Context(), parent, "run-b", x.ttl)
	wantHeld(t, err, parent, "run-a")

	sums, err := x.s.List(t.Context(), preview)
	if err != nil {
		t.Fatal(err)
	}
	var keys []store.Key
	for _, s := range sums {
		keys = append(keys, s.Key)
	}
	if diff := cmp.Diff([]store.Key{parent, a, b}, keys); diff != "" {
		t.Errorf("List(preview) keys (-want +got):\n%s", diff)
	}
}

// testInvalidStacks: a stack name that could escape its place is USAGE in
// every call, and a key without a stack is refused unless it is a parent
// lease's.
func testInvalidStacks(t *testing.T, x *suite) {
	for _, stack := range []string{"/abs", "a/../b", "a/./b", ".x", "a/", "x.lock", "a b", "a\\b", "a:b", "a@{b", strings.Repeat("/a", 101)} {
		k := store.Key{Stack: stack, Environment: preview, Scope: "pr-1"}
		l := store.Lease{Key: k, Holder: "run-a", Token: 1}
		calls := map[string]error{}
		_, calls["Acquire"] = x.s.Acquire(t.Context(), k, "run-a", x.ttl)
		calls["WriteState"] = x.s.WriteState(t.Context(), l, []byte("{}"))
		_, calls["ReadState"] = x.s.ReadState(t.Context(), k)
		_, calls["LatestReceipt"] = x.s.LatestReceipt(t.Context(), k)
		for call, err := range calls {
			if !errcode.Is(err, errcode.Usage) {
				t.Errorf("%s(stack %q) = %v, want a USAGE error", call, stack, err)
			}
		}
	}
	if _, err := x.s.Acquire(t.Context(), store.Key{Environment: preview, Scope: "pr-1"}, "run-a", x.ttl); err == nil {
		t.Error("Acquire of a scope without a stack succeeded")
	}
}

// testHolderInfo: the description a holder gives at Acquire (store.WithHolder)
// is in the lease record for everyone who reads it (ReadLease, a refused
// Acquire's HeldError, List), survives renewal, and goes with the holder on
// release; an Acquire without one records none.
func testHolderInfo(t *testing.T, x *suite) {
	k := key(preview, "pr-42")
	about := store.HolderInfo{
		JobURL: "https://github.com/acme/infra/actions/runs/123", Actor: "alice",
		Commit: strings.Repeat("1a2b3c4d", 5), PullRequest: 42, Host: "runner-7",
	}
	g, err := x.s.Acquire(store.WithHolder(t.Context(), about), k, "run-a", x.ttl)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if got := x.readLease(t, k).About; got != about {
		t.Errorf("ReadLease().About = %+v, want %+v", got, about)
	}
	_, err = x.s.Acquire(store.WithHolder(t.Context(), store.HolderInfo{Actor: "bob"}), k, "run-b", x.ttl)
	var held *store.HeldError
	if !errors.As(err, &held) || held.Lease.About != about {
		t.Errorf("a refused Acquire: %v (%+v), want the holder's description %+v", err, held, about)
	}
	rows, err := x.s.List(t.Context(), preview)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, r := range rows {
		if r.Key.Scope == k.Scope && r.Lease.About != about {
			t.Errorf("List() lease of %s: About = %+v, want %+v", k, r.Lease.About, about)
		}
	}
	l, err := x.s.Renew(t.Context(), g.Lease, x.ttl)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if got := x.readLease(t, k).About; got != about {
		t.Errorf("after Renew: About = %+v, want %+v", got, about)
	}
	x.release(t, l)
	if got := x.readLease(t, k); got.About != (store.HolderInfo{}) {
		t.Errorf("after Release: %+v still describes the holder that left", got)
	}
	x.acquire(t, k, "run-c")
	if got := x.readLease(t, k).About; got != (store.HolderInfo{}) {
		t.Errorf("an Acquire without a description recorded %+v", got)
	}
}
