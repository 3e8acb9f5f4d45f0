package statesrv_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/statesrv"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

var key = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-7"}

// clock is a store clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is a state server over a real file store, writing under run-a's
// lease unless readOnly. Its writer records the writes the store refused
// because the lease was lost: the run's held lease notices those.
type fixture struct {
	st    *filestore.Store
	clock *clock
	lease store.Lease
	srv   *statesrv.Server

	mu   sync.Mutex
	lost []error
}

func (f *fixture) lostCalls() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.lost...)
}

func newFixture(t *testing.T, readOnly bool) *fixture {
	t.Helper()
	f := &fixture{clock: &clock{now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}}
	st, err := filestore.Open(t.TempDir(), filestore.WithClock(f.clock.Now))
	if err != nil {
		t.Fatalf("filestore.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	f.st = st
	g, err := st.Acquire(t.Context(), key, "run-a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	f.lease = g.Lease
	var w statesrv.Writer
	if !readOnly {
		w = fixtureWriter{f}
	}
	srv, err := statesrv.Start(st, key, w)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	f.srv = srv
	return f
}

// fixtureWriter writes under the fixture's lease.
type fixtureWriter struct{ f *fixture }

func (w fixtureWriter) WriteState(ctx context.Context, state []byte) error {
	err := w.f.st.WriteState(ctx, w.f.lease, state)
	if errors.Is(err, store.ErrLeaseLost) {
		w.f.mu.Lock()
		defer w.f.mu.Unlock()
		w.f.lost = append(w.f.lost, err)
	}
	return err
}

type req struct {
	method string
	path   string // default "/state"
	query  string
	body   string
	md5    string // Content-MD5; "auto" computes the right one
	user   string // default statesrv.Username
	pass   *string
	noAuth bool
}

type resp struct {
	status int
	body   string
	header http.Header
}

func (f *fixture) do(t *testing.T, r req) resp {
	t.Helper()
	u := f.srv.Address()
	if r.path != "" {
		u = strings.TrimSuffix(u, "/state") + r.path
	}
	if r.query != "" {
		u += "?" + r.query
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequestWithContext(t.Context(), r.method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if !r.noAuth {
		user, pass := statesrv.Username, f.srv.Secret()
		if r.user != "" {
			user = r.user
		}
		if r.pass != nil {
			pass = *r.pass
		}
		hr.SetBasicAuth(user, pass)
	}
	switch r.md5 {
	case "":
	case "auto":
		sum := md5.Sum([]byte(r.body))
		hr.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	default:
		hr.Header.Set("Content-MD5", r.md5)
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{status: res.StatusCode, body: string(b), header: res.Header}
}

func (f *fixture) wantStatus(t *testing.T, r req, want int) resp {
	t.Helper()
	got := f.do(t, r)
	if got.status != want {
		t.Fatalf("%s %s?%s: status %d (%s), want %d", r.method, r.path, r.query, got.status, strings.TrimSpace(got.body), want)
	}
	return got
}

// wantStored fails unless the store holds want as the scope's state (nil:
// no state).
func (f *fixture) wantStored(t *testing.T, want []byte) {
	t.Helper()
	got, err := f.st.ReadState(t.Context(), key)
	if err != nil {
		t.Fatalf("ReadState: %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" || (want == nil) != (got == nil) {
		t.Fatalf("stored state (-want +got):\n%s", diff)
	}
}

func strp(s string) *string { return &s }

const (
	state1 = `{"version":4,"serial":1,"lineage":"l","resources":[]}`
	state2 = `{"version":4,"serial":2,"lineage":"l","resources":[]}`
)

func TestAddressAndEnviron(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	u, err := url.Parse(f.srv.Address())
	if err != nil {
		t.Fatalf("Address %q: %v", f.srv.Address(), err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatalf("Address %q: %v", f.srv.Address(), err)
	}
	if u.Scheme != "http" || host != "127.0.0.1" || port == "" || port == "0" || u.Path != "/state" {
		t.Errorf("Address = %q, want http://127.0.0.1:<port>/state", f.srv.Address())
	}
	if len(f.srv.Secret()) < 32 {
		t.Errorf("Secret %q is too short", f.srv.Secret())
	}
	other := newFixture(t, false)
	if other.srv.Secret() == f.srv.Secret() {
		t.Errorf("two servers share the secret %q", f.srv.Secret())
	}
	if other.srv.Address() == f.srv.Address() {
		t.Errorf("two servers share the address %q", f.srv.Address())
	}

	env := map[string]string{}
	for _, kv := range f.srv.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Errorf("Environ entry %q is not NAME=VALUE", kv)
		}
		env[k] = v
	}
	want := map[string]string{
		"TF_HTTP_ADDRESS":        f.srv.Address(),
		"TF_HTTP_LOCK_ADDRESS":   f.srv.Address(),
		"TF_HTTP_UNLOCK_ADDRESS": f.srv.Address(),
		"TF_HTTP_USERNAME":       statesrv.Username,
		"TF_HTTP_PASSWORD":       f.srv.Secret(),
	}
	for k := range env {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "TF_HTTP_") {
			t.Errorf("Environ sets %s, which is not a TF_HTTP_ variable", k)
		}
	}
	got := map[string]string{}
	for k := range want {
		got[k] = env[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Environ (-want +got):\n%s", diff)
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    req
	}{
		{"no auth GET", req{method: http.MethodGet, noAuth: true}},
		{"no auth POST", req{method: http.MethodPost, body: state1, md5: "auto", noAuth: true}},
		{"wrong password POST", req{method: http.MethodPost, body: state1, md5: "auto", pass: strp("guess")}},
		{"empty password POST", req{method: http.MethodPost, body: state1, pass: strp("")}},
		{"wrong user POST", req{method: http.MethodPost, body: state1, user: "admin"}},
		{"no auth LOCK", req{method: "LOCK", body: `{"ID":"a"}`, noAuth: true}},
		{"wrong password UNLOCK", req{method: "UNLOCK", body: `{"ID":"a"}`, pass: strp("guess")}},
		{"no auth DELETE", req{method: http.MethodDelete, noAuth: true}},
		{"no auth unknown path", req{method: http.MethodGet, path: "/other", noAuth: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			res := f.wantStatus(t, tt.r, http.StatusUnauthorized)
			if !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("WWW-Authenticate = %q, want a Basic challenge", res.header.Get("WWW-Authenticate"))
			}
			if strings.Contains(res.body, f.srv.Secret()) {
				t.Errorf("401 body reveals the secret: %q", res.body)
			}
			f.wantStored(t, nil)
			if n := f.srv.Writes(); n != 0 {
				t.Errorf("Writes() = %d after an unauthorized request", n)
			}
			// A refused LOCK must not have taken the lock.
			f.wantStatus(t, req{method: "LOCK", body: `{"ID":"other"}`}, http.StatusOK)
		})
	}
}

func TestGetWithoutState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	res := f.wantStatus(t, req{method: http.MethodGet}, http.StatusNoContent)
	if res.body != "" {
		t.Errorf("204 with body %q", res.body)
	}
}

func TestPostThenGet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		md5  string
	}{
		{"with Content-MD5", "auto"},
		{"without Content-MD5", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			f.wantStatus(t, req{method: http.MethodPost, body: state1, md5: tt.md5}, http.StatusOK)
			if n := f.srv.Writes(); n != 1 {
				t.Errorf("Writes() = %d after one write, want 1", n)
			}
			res := f.wantStatus(t, req{method: http.MethodGet}, http.StatusOK)
			if diff := cmp.Diff(state1, res.body); diff != "" {
				t.Errorf("GET after POST (-want +got):\n%s", diff)
			}
			if ct := res.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			f.wantStored(t, []byte(state1))

			f.wantStatus(t, req{method: http.MethodPost, body: state2, md5: tt.md5}, http.StatusOK)
			if n := f.srv.Writes(); n != 2 {
				t.Errorf("Writes() = %d after two writes, want 2", n)
			}
			res = f.wantStatus(t, req{method: http.MethodGet}, http.StatusOK)
			if diff := cmp.Diff(state2, res.body); diff != "" {
				t.Errorf("GET after second POST (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPostRefused(t *testing.T) {
	t.Parallel()
	wrongSum := md5.Sum([]byte(state2))
	tests := []struct {
		name     string
		readOnly bool
		r        req
		want     int
	}{
		{"Content-MD5 of another body", false, req{method: http.MethodPost, body: state1, md5: base64.StdEncoding.EncodeToString(wrongSum[:])}, http.StatusBadRequest},
		{"Content-MD5 not base64", false, req{method: http.MethodPost, body: state1, md5: "not-a-sum"}, http.StatusBadRequest},
		{"not JSON", false, req{method: http.MethodPost, body: "this is not a state", md5: "auto"}, http.StatusBadRequest},
		{"truncated JSON", false, req{method: http.MethodPost, body: state1[:20], md5: "auto"}, http.StatusBadRequest},
		{"empty body", false, req{method: http.MethodPost}, http.StatusBadRequest},
		{"plan mode", true, req{method: http.MethodPost, body: state2, md5: "auto"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.readOnly)
			// The store holds a previous state the refused write must
			// leave alone.
			if err := f.st.WriteState(t.Context(), f.lease, []byte(state1)); err != nil {
				t.Fatalf("WriteState: %v", err)
			}
			f.wantStatus(t, tt.r, tt.want)
			f.wantStored(t, []byte(state1))
			if n := f.srv.Writes(); n != 0 {
				t.Errorf("Writes() = %d after a refused write", n)
			}
			if lost := f.lostCalls(); len(lost) != 0 {
				t.Errorf("the writer saw a lost lease for a refusal that is not a lost lease: %v", lost)
			}
		})
	}
}

func TestPlanModeReads(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	f.wantStatus(t, req{method: http.MethodGet}, http.StatusNoContent)
	if err := f.st.WriteState(t.Context(), f.lease, []byte(state1)); err != nil {
		t.Fatalf("WriteState: %v", err)
	}
	res := f.wantStatus(t, req{method: http.MethodGet}, http.StatusOK)
	if diff := cmp.Diff(state1, res.body); diff != "" {
		t.Errorf("GET in plan mode (-want +got):\n%s", diff)
	}
}

func TestLocking(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	lockA := `{"ID":"a","Operation":"OperationTypeApply","Info":"","Who":"alice@host","Version":"1.12.6","Created":"2025-06-01T12:00:00Z","Path":""}`
	lockB := `{"ID":"b","Operation":"OperationTypePlan","Who":"bob@host"}`

	f.wantStatus(t, req{method: "LOCK", body: lockA}, http.StatusOK)
	// The holder may lock again (the engine retries).
	f.wantStatus(t, req{method: "LOCK", body: lockA}, http.StatusOK)

	res := f.wantStatus(t, req{method: "LOCK", body: lockB}, http.StatusLocked)
	if diff := cmp.Diff(lockA, res.body); diff != "" {
		t.Errorf("423 body is not a's lock info (-want +got):\n%s", diff)
	}

	f.wantStatus(t, req{method: http.MethodPost, query: "ID=b", body: state1, md5: "auto"}, http.StatusConflict)
	f.wantStatus(t, req{method: http.MethodPost, body: state1, md5: "auto"}, http.StatusConflict)
	f.wantStored(t, nil)
	if n := f.srv.Writes(); n != 0 {
		t.Errorf("Writes() = %d after writes refused by the lock", n)
	}

	f.wantStatus(t, req{method: http.MethodPost, query: "ID=a", body: state1, md5: "auto"}, http.StatusOK)
	f.wantStored(t, []byte(state1))

	// b cannot unlock a's lock; the lock stays.
	res = f.wantStatus(t, req{method: "UNLOCK", body: lockB}, http.StatusConflict)
	if diff := cmp.Diff(lockA, res.body); diff != "" {
		t.Errorf("409 UNLOCK body is not a's lock info (-want +got):\n%s", diff)
	}
	f.wantStatus(t, req{method: "LOCK", body: lockB}, http.StatusLocked)

	f.wantStatus(t, req{method: "UNLOCK", body: lockA}, http.StatusOK)
	f.wantStatus(t, req{method: "LOCK", body: lockB}, http.StatusOK)
	res = f.wantStatus(t, req{method: "LOCK", body: lockA}, http.StatusLocked)
	if diff := cmp.Diff(lockB, res.body); diff != "" {
		t.Errorf("423 body is not b's lock info (-want +got):\n%s", diff)
	}
	f.wantStatus(t, req{method: http.MethodPost, query: "ID=a", body: state2, md5: "auto"}, http.StatusConflict)
	f.wantStatus(t, req{method: http.MethodPost, query: "ID=b", body: state2, md5: "auto"}, http.StatusOK)
	f.wantStored(t, []byte(state2))
	if n := f.srv.Writes(); n != 2 {
		t.Errorf("Writes() = %d, want 2", n)
	}
}

func TestLockBadInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
	}{
		{"empty", ""},
		{"not JSON", "a"},
		{"no ID", `{"Who":"alice"}`},
		{"empty ID", `{"ID":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			f.wantStatus(t, req{method: "LOCK", body: tt.body}, http.StatusBadRequest)
			// Nothing was locked: a writes without an ID.
			f.wantStatus(t, req{method: http.MethodPost, body: state1, md5: "auto"}, http.StatusOK)
		})
	}
}

func TestMethodAndPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    req
		want int
	}{
		{"DELETE", req{method: http.MethodDelete}, http.StatusMethodNotAllowed},
		{"PUT", req{method: http.MethodPut, body: state2}, http.StatusMethodNotAllowed},
		{"unknown path", req{method: http.MethodGet, path: "/other"}, http.StatusNotFound},
		{"POST to unknown path", req{method: http.MethodPost, path: "/state/x", body: state2, md5: "auto"}, http.StatusNotFound},
		{"root", req{method: http.MethodGet, path: "/"}, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			if err := f.st.WriteState(t.Context(), f.lease, []byte(state1)); err != nil {
				t.Fatalf("WriteState: %v", err)
			}
			f.wantStatus(t, tt.r, tt.want)
			f.wantStored(t, []byte(state1))
		})
	}
}

// TestFencing: a run whose lease was taken over, or has expired, cannot
// replace the state, and the run is told.
func TestFencing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		takeOver bool
	}{
		{"taken over by another run", true},
		{"expired", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			f.wantStatus(t, req{method: http.MethodPost, body: state1, md5: "auto"}, http.StatusOK)

			f.clock.Advance(2 * time.Minute)
			if tt.takeOver {
				g, err := f.st.Acquire(t.Context(), key, "run-b", time.Minute)
				if err != nil {
					t.Fatalf("run-b Acquire: %v", err)
				}
				if g.Preempted == nil || g.Preempted.Holder != "run-a" {
					t.Fatalf("run-b did not take over run-a's lease: %+v", g)
				}
			}

			res := f.wantStatus(t, req{method: http.MethodPost, body: state2, md5: "auto"}, http.StatusConflict)
			if !strings.Contains(res.body, "LOCK_LOST") {
				t.Errorf("409 body %q does not name LOCK_LOST", res.body)
			}
			f.wantStored(t, []byte(state1))
			if n := f.srv.Writes(); n != 1 {
				t.Errorf("Writes() = %d, want 1 (the refused write must not count)", n)
			}
			lost := f.lostCalls()
			if len(lost) != 1 {
				t.Fatalf("the writer saw a lost lease %d times, want 1: %v", len(lost), lost)
			}
			if !errors.Is(lost[0], store.ErrLeaseLost) {
				t.Errorf("the writer got %v, want store.ErrLeaseLost", lost[0])
			}

			// Once per refused write.
			f.wantStatus(t, req{method: http.MethodPost, body: state2}, http.StatusConflict)
			if n := len(f.lostCalls()); n != 2 {
				t.Errorf("the writer saw a lost lease %d times after two refused writes, want 2", n)
			}
			// Reads still work.
			res = f.wantStatus(t, req{method: http.MethodGet}, http.StatusOK)
			if diff := cmp.Diff(state1, res.body); diff != "" {
				t.Errorf("GET after refused write (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWriterConsulted: the server hands every write to the writer, which
// fences it with the lease it holds at that moment, so a renewed lease is
// used as soon as the run has it.
func TestWriterConsulted(t *testing.T) {
	t.Parallel()
	c := &clock{now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	st, err := filestore.Open(t.TempDir(), filestore.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.Acquire(t.Context(), key, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stale := g.Lease
	stale.Token--
	w := &switchWriter{st: st, cur: stale}
	srv, err := statesrv.Start(st, key, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	post := func(body string) int {
		hr, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.Address(), bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		hr.SetBasicAuth(statesrv.Username, srv.Secret())
		res, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := post(state1); got != http.StatusConflict {
		t.Fatalf("POST under a stale lease: %d, want 409", got)
	}
	w.set(g.Lease)
	if got := post(state1); got != http.StatusOK {
		t.Fatalf("POST with the lease: %d, want 200", got)
	}
	if n := srv.Writes(); n != 1 {
		t.Errorf("Writes() = %d, want 1", n)
	}
}

// switchWriter writes under whatever lease it was last given.
type switchWriter struct {
	st  store.Store
	mu  sync.Mutex
	cur store.Lease
}

func (w *switchWriter) set(l store.Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cur = l
}

func (w *switchWriter) WriteState(ctx context.Context, state []byte) error {
	w.mu.Lock()
	l := w.cur
	w.mu.Unlock()
	return w.st.WriteState(ctx, l, state)
}

// TestGate: while a gate holds the server, the engine's requests wait;
// opened, they go through as usual; shut, they are refused as a lock held
// by another, and nothing is written.
func TestGate(t *testing.T) {
	t.Parallel()
	lockA := `{"ID":"a","Operation":"OperationTypeApply","Who":"alice@host"}`
	held := func(t *testing.T, f *fixture, g *statesrv.Gate, r req) <-chan resp {
		t.Helper()
		out := make(chan resp, 1)
		go func() { out <- f.do(t, r) }()
		for g.Waiting() == 0 {
			select {
			case res := <-out:
				t.Fatalf("%s went through a closed gate: %d", r.method, res.status)
			default:
				runtime.Gosched()
			}
		}
		return out
	}

	t.Run("open", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, false)
		g := f.srv.Hold()
		lock := held(t, f, g, req{method: "LOCK", body: lockA})
		g.Open()
		if res := <-lock; res.status != http.StatusOK {
			t.Fatalf("LOCK after Open = %d, want 200", res.status)
		}
		f.wantStatus(t, req{method: http.MethodPost, query: "ID=a", body: state1, md5: "auto"}, http.StatusOK)
		f.wantStored(t, []byte(state1))
	})

	t.Run("shut", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, false)
		g := f.srv.Hold()
		lock := held(t, f, g, req{method: "LOCK", body: lockA})
		g.Shut()
		if res := <-lock; res.status != http.StatusLocked {
			t.Fatalf("LOCK after Shut = %d, want 423", res.status)
		}
		f.wantStatus(t, req{method: http.MethodGet}, http.StatusLocked)
		f.wantStatus(t, req{method: http.MethodPost, body: state1, md5: "auto"}, http.StatusLocked)
		f.wantStored(t, nil)
		g.Open() // decided once: a shut gate stays shut
		f.wantStatus(t, req{method: "LOCK", body: lockA}, http.StatusLocked)
	})
}
