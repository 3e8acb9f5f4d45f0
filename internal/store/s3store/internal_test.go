package s3store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/s3test"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

var key32 = bytes.Repeat([]byte{7}, 32)

func open(t *testing.T, srv *s3test.Server, opts ...Option) *Store {
	t.Helper()
	opts = append([]Option{WithAWSConfig(s3test.Config()), WithStateKey(key32), WithBudget(5 * time.Second)}, opts...)
	s, err := Open(t.Context(), srv.StoreURL("p"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// objects returns every object of the bucket under the store's prefix.
func objects(t *testing.T, s *Store) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	objs, err := s.b.List(t.Context(), s.b.prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		got, err := s.b.Get(t.Context(), o.Key)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(o.Key, s.b.prefix)] = got.Data
	}
	return out
}

func isPointerPut(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/.leases/")
}

var k1 = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}

// A 409 ConditionalRequestConflict (a concurrent conditional write in
// flight) is retried; the lease is granted once, with token 1.
func TestConflictIsRetried(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	var conflicts atomic.Int32
	srv.Wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isPointerPut(r) && conflicts.Add(1) <= 2 {
				w.WriteHeader(http.StatusConflict)
				fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ConditionalRequestConflict</Code><Message>A conflicting conditional operation is in progress</Message></Error>`)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	s := open(t, srv)
	g, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after two 409s: %v", err)
	}
	if g.Lease.Token != 1 || conflicts.Load() != 3 {
		t.Errorf("token %d after %d pointer PUTs, want token 1 after 3", g.Lease.Token, conflicts.Load())
	}
}

// A 409 that never ends is STORE_CONTENDED after the budget.
func TestConflictPastBudgetIsContended(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	srv.Wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isPointerPut(r) {
				w.WriteHeader(http.StatusConflict)
				fmt.Fprint(w, `<Error><Code>ConditionalRequestConflict</Code><Message>busy</Message></Error>`)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	s := open(t, srv, WithBudget(200*time.Millisecond))
	_, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StoreContended) {
		t.Fatalf("Acquire against endless 409s = %v, want STORE_CONTENDED", err)
	}
}

// A pointer PUT that landed but whose answer was lost is recognised by its
// nonce: the write succeeded, and is neither repeated nor taken for a
// rival's.
func TestLostAnswerIsResolvedByNonce(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	var dropped atomic.Int32
	srv.Wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isPointerPut(r) && dropped.Add(1) == 2 { // the renewal
				h.ServeHTTP(httptest.NewRecorder(), r) // it lands ...
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close() // ... and the answer is lost
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	s := open(t, srv)
	g, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Renew(t.Context(), g.Lease, 2*time.Minute)
	if err != nil {
		t.Fatalf("Renew whose answer was lost: %v", err)
	}
	info, err := s.ReadLease(t.Context(), k1)
	if err != nil || info.Holder != "run-a" || info.Token != 1 || !info.ExpiresAt.Equal(l.ExpiresAt) {
		t.Fatalf("ReadLease = %+v, %v; want run-a, token 1, expiring %s", info, err, l.ExpiresAt)
	}
	if dropped.Load() != 2 {
		t.Errorf("%d pointer PUTs, want 2 (the lost one is not sent again)", dropped.Load())
	}
}

// 403 is STORE_PERMISSION, and the error names neither key nor secret.
func TestForbiddenIsPermission(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	srv.Wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		})
	}
	s := open(t, srv)
	_, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StorePermission) {
		t.Fatalf("Acquire against 403 = %v, want STORE_PERMISSION", err)
	}
	if strings.Contains(err.Error(), "TESTSECRET") || strings.Contains(err.Error(), "TESTKEY") {
		t.Errorf("error shows credentials: %v", err)
	}
}

// A server that does not answer is STORE_UNAVAILABLE after the budget.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	dead := hs.URL
	hs.Close()
	s, err := Open(t.Context(), "s3://"+s3test.Bucket+"/p?endpoint="+dead, WithAWSConfig(s3test.Config()), WithStateKey(key32), WithBudget(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StoreUnavailable) {
		t.Fatalf("Acquire against a closed port = %v, want STORE_UNAVAILABLE", err)
	}
}

// A crash between a body and its pointer leaves garbage, never a wrong
// pointer: a refused write deletes its bodies, and the receipt of a run
// that wrote twice is kept once.
func TestBodiesOfRefusedWritesAreDeleted(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	srv := s3test.Start(t, clock.Now)
	s := open(t, srv)
	a, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.WriteReceipt(t.Context(), a.Lease, storetest.NewReceipt(k1, "run-a", 2)); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Minute)
	b, err := s.Acquire(t.Context(), k1, "run-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteReceipt(t.Context(), b.Lease, storetest.NewReceipt(k1, "run-b", 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteState(t.Context(), a.Lease, []byte("{}")); err == nil {
		t.Fatal("stale WriteState accepted")
	}
	var names []string
	for name := range objects(t, s) {
		names = append(names, name)
	}
	count := func(prefix string) int {
		n := 0
		for _, name := range names {
			if strings.HasPrefix(name, prefix) {
				n++
			}
		}
		return n
	}
	if count("preview/acme_2fapp/pr-1/receipts/run-a.") != 1 || count("preview/acme_2fapp/pr-1/receipts/run-b.") != 1 {
		t.Errorf("receipts %v, want one of each run", names)
	}
	if count("preview/acme_2fapp/pr-1/owners/") != 1 || count("preview/acme_2fapp/pr-1/state/") != 0 {
		t.Errorf("objects %v, want one ownership part and no state", names)
	}
}

// counter counts the requests of a server by method.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		m := r.Method
		if m == http.MethodGet && r.URL.Query().Has("list-type") {
			m = "LIST"
		}
		c.n[m]++
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

// Owners and List of an environment cost a bounded number of requests, not
// one per scope: a cold List reads the layout marker (once per Store), the
// listing and the cached index; Owners never lists once an index as of the
// ownership log is stored: cold, the layout marker, the log and the index,
// and then what changed since the index; warm, the log and what changed.
func TestOwnersRequestsAreBounded(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	c := &counter{n: map[string]int{}}
	srv.Wrap = c.wrap
	writer := open(t, srv)
	const scopes = 120
	for i := range scopes {
		k := store.Key{Stack: "acme/app", Environment: "preview", Scope: fmt.Sprintf("pr-%d", i)}
		g, err := writer.Acquire(t.Context(), k, "run", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		r := storetest.NewReceipt(k, "run", 3)
		if err := writer.WriteReceipt(t.Context(), g.Lease, r); err != nil {
			t.Fatal(err)
		}
	}
	// The first reader of all builds the cached indexes.
	first := open(t, srv)
	got, err := first.Owners(t.Context(), "preview", nil)
	if err != nil || len(got) != scopes*3 {
		t.Fatalf("Owners = %d entries, %v; want %d", len(got), err, scopes*3)
	}
	if _, err := first.List(t.Context(), "preview"); err != nil {
		t.Fatal(err)
	}
	c.take()

	cold := open(t, srv)
	sums, err := cold.List(t.Context(), "preview")
	if err != nil || len(sums) != scopes || sums[0].Latest == nil {
		t.Fatalf("List = %d scopes, %v", len(sums), err)
	}
	if n := c.take(); n["LIST"] != 1 || n["GET"] != 2 || n["PUT"] != 0 {
		t.Errorf("a cold List of %d scopes made %v requests, want one LIST and two GETs (layout, index)", scopes, n)
	}
	coldOwners := open(t, srv)
	if got, err := coldOwners.Owners(t.Context(), "preview", nil); err != nil || len(got) != scopes*3 {
		t.Fatalf("cold Owners = %d entries, %v", len(got), err)
	}
	if n := c.take(); n["LIST"] != 0 || n["GET"] != 3 || n["PUT"] != 0 {
		t.Errorf("a cold Owners of %d scopes made %v requests, want three GETs (layout, log, index)", scopes, n)
	}
	if got, err := coldOwners.Owners(t.Context(), "preview", nil); err != nil || len(got) != scopes*3 {
		t.Fatalf("warm Owners = %d entries, %v", len(got), err)
	}
	if n := c.take(); n["LIST"] != 0 || n["GET"] != 1 || n["PUT"] != 0 {
		t.Errorf("a warm Owners of %d unchanged scopes made %v requests, want one GET (the log, not modified)", scopes, n)
	}

	k := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-7"}
	l, err := writer.ReadLease(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	lease := store.Lease{Key: k, Holder: l.Holder, Token: l.Token}
	r := storetest.NewReceipt(k, "run-2", 5)
	if err := writer.WriteReceipt(t.Context(), lease, r); err != nil {
		t.Fatal(err)
	}
	c.take()
	got, err = coldOwners.Owners(t.Context(), "preview", []string{r.Ledger[4].Identity})
	if err != nil || len(got) != 1 || got[0].Scope != "pr-7" || got[0].RunID != "run-2" {
		t.Fatalf("Owners after a write = %+v, %v", got, err)
	}
	if n := c.take(); n["LIST"] != 0 || n["GET"] != 3 {
		t.Errorf("a warm Owners after one scope's write made %v requests, want three GETs (log, pointer, ownership part)", n)
	}
	got, err = open(t, srv).Owners(t.Context(), "preview", []string{r.Ledger[4].Identity})
	if err != nil || len(got) != 1 || got[0].Scope != "pr-7" || got[0].RunID != "run-2" {
		t.Fatalf("cold Owners after a write the stored index is older than = %+v, %v", got, err)
	}
	if n := c.take(); n["LIST"] != 0 || n["GET"] != 5 {
		t.Errorf("a cold Owners after one scope's write made %v requests, want five GETs (layout, log, index, pointer, ownership part)", n)
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]Location{
		"s3://bucket":                             {Bucket: "bucket"},
		"s3://bucket/team/sponson/":               {Bucket: "bucket", Prefix: "team/sponson/"},
		"s3://b/p?region=eu-west-1":               {Bucket: "b", Prefix: "p/", Region: "eu-west-1"},
		"s3://b/p?endpoint=http://127.0.0.1:9000": {Bucket: "b", Prefix: "p/", Endpoint: "http://127.0.0.1:9000", PathStyle: true},
		"s3://b?path_style=true":                  {Bucket: "b", PathStyle: true},
	} {
		got, err := ParseURL(raw)
		if err != nil || got != want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"s3://", "s3://KEY:SECRET@bucket/p", "s3://b/../x", "s3://b/p?endpoint=ftp://x", "s3://b/p?color=red", "file:///x"} {
		_, err := ParseURL(raw)
		if !errcode.Is(err, errcode.Usage) {
			t.Errorf("ParseURL(%q) = %v, want USAGE", raw, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("ParseURL(%q) repeats the credentials: %v", raw, err)
		}
	}
	if got := (Location{Bucket: "b", Prefix: "p/", Endpoint: "http://h:1"}).Display(); got != "s3://b/p/?endpoint=http%3A%2F%2Fh%3A1" {
		t.Errorf("Display = %q", got)
	}
}

// The pointer is the only object a fenced write changes in place, and it is
// always sent with a condition.
func TestPointerWritesAreConditional(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	var unconditional atomic.Int32
	srv.Wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isPointerPut(r) && r.Header.Get("If-Match") == "" && r.Header.Get("If-None-Match") != "*" {
				unconditional.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
	s := open(t, srv)
	g, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(k1, "run-a", 1))
	_ = s.WriteState(t.Context(), g.Lease, []byte("{}"))
	_ = s.WriteRecord(t.Context(), g.Lease, "scope", []byte("{}"))
	_ = s.Release(t.Context(), g.Lease)
	if n := unconditional.Load(); n != 0 {
		t.Errorf("%d unconditional pointer writes", n)
	}
	raw, err := s.b.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &s.b.bucket, Key: aws.String(s.b.prefix + "preview/.leases/acme_2fapp/pr-1.json")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(raw.Body)
	var p struct {
		Nonce, Receipt, State string
		Records               map[string]string
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Nonce == "" || p.Receipt == "" || p.State == "" || p.Records["scope"] == "" {
		t.Errorf("pointer %s, %v", b, err)
	}
}

// The holder's description given at Acquire is kept in the pointer and
// returned with the lease record, and cleared on release.
func TestHolderInfoIsKept(t *testing.T) {
	t.Parallel()
	s := open(t, s3test.Start(t, nil))
	about := store.HolderInfo{JobURL: "https://ci.example/job/1", Actor: "octocat", PullRequest: 7}
	g, err := s.Acquire(store.WithHolder(t.Context(), about), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(t.Context(), k1, "run-b", time.Minute)
	var held *store.HeldError
	if !errors.As(err, &held) || held.Lease.About != about {
		t.Errorf("HeldError = %v, want one describing %+v", err, about)
	}
	if info, err := s.ReadLease(t.Context(), k1); err != nil || info.About != about {
		t.Errorf("ReadLease = %+v, %v", info, err)
	}
	if err := s.Release(t.Context(), g.Lease); err != nil {
		t.Fatal(err)
	}
	if info, err := s.ReadLease(t.Context(), k1); err != nil || info.About != (store.HolderInfo{}) {
		t.Errorf("after release ReadLease = %+v, %v", info, err)
	}
}

// Garbage (bodies no pointer names, as a crash between a write and the
// deletion of the old body leaves) is collected once old enough; what a
// pointer names, receipts and quarantined states are never.
func TestCollectGarbage(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	srv := s3test.Start(t, clock.Now)
	s := open(t, srv, WithClock(clock.Now))
	g, err := s.Acquire(t.Context(), k1, "run-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteState(t.Context(), g.Lease, []byte(`{"serial":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(k1, "run-a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(t.Context(), k1, "run-z", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// What a crash leaves: bodies written whose pointer never moved to them.
	dir := s.b.prefix + "preview/acme_2fapp/pr-1/"
	for _, n := range []string{"state/crashed" + ".tfstate.sealed", "owners/crashed.json", "records/scope.crashed.json"} {
		if err := s.b.Put(t.Context(), dir+n, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.CollectGarbage(t.Context(), "preview", time.Hour); err != nil || n != 0 {
		t.Fatalf("CollectGarbage of young garbage = %d, %v; want 0", n, err)
	}
	clock.Advance(2 * time.Hour)
	if n, err := s.CollectGarbage(t.Context(), "preview", time.Hour); err != nil || n != 3 {
		t.Fatalf("CollectGarbage = %d, %v; want the 3 crashed bodies", n, err)
	}
	left := objects(t, s)
	for _, n := range []string{"state/crashed" + ".tfstate.sealed", "owners/crashed.json", "records/scope.crashed.json"} {
		if _, ok := left["preview/acme_2fapp/pr-1/"+n]; ok {
			t.Errorf("%s survived", n)
		}
	}
	if got, err := s.ReadState(t.Context(), k1); err != nil || string(got) != `{"serial":1}` {
		t.Errorf("the state after gc: %q, %v", got, err)
	}
	if r, err := s.LatestReceipt(t.Context(), k1); err != nil || r == nil {
		t.Errorf("the receipt after gc: %v, %v", r, err)
	}
	if q, err := s.ListQuarantine(t.Context(), k1); err != nil || len(q) != 1 {
		t.Errorf("the quarantine after gc: %v, %v", q, err)
	}
}

// Without WithAWSConfig the standard chain is used: credentials and region
// from the environment, and AWS_ENDPOINT_URL_S3 as the SDK honours it.
func TestStandardChainAndEndpointEnv(t *testing.T) {
	srv := s3test.Start(t, nil)
	t.Setenv("AWS_ACCESS_KEY_ID", "TESTKEY")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "TESTSECRET")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	s, err := Open(t.Context(), "s3://"+s3test.Bucket+"/p?path_style=true", WithStateKey(key32))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(t.Context(), k1, "run-a", time.Minute); err != nil {
		t.Fatalf("Acquire through AWS_ENDPOINT_URL_S3: %v", err)
	}
}

// A receipt whose ledger changed no ownership keeps the scope's part of the
// ownership index (store.SameOwners): no new part is written, and the kept
// one is not retired. A changed ledger writes a new part and retires the
// old one.
func TestUnchangedOwnersPartIsKept(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	srv := s3test.Start(t, clock.Now)
	s := open(t, srv)
	a, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	parts := func() []string {
		t.Helper()
		var out []string
		for name := range objects(t, s) {
			if strings.HasPrefix(name, "preview/acme_2fapp/pr-1/owners/") {
				out = append(out, name)
			}
		}
		return out
	}
	write := func(r *receipt.Receipt) []string {
		t.Helper()
		if err := s.WriteReceipt(t.Context(), a.Lease, r); err != nil {
			t.Fatal(err)
		}
		return parts()
	}
	first := write(storetest.NewReceipt(k1, "run-a", 2))
	if again := write(storetest.NewReceipt(k1, "run-b", 2)); len(first) != 1 || !slices.Equal(first, again) {
		t.Fatalf("the same ledger again: parts %v, before %v; want the one part kept", again, first)
	}
	moved := storetest.NewReceipt(k1, "run-c", 2)
	moved.Ledger[0].Address = "terraform_data.moved"
	if after := write(moved); len(after) != 1 || slices.Equal(first, after) {
		t.Fatalf("a moved entry: parts %v, before %v; want one new part", after, first)
	}
	owners, err := s.Owners(t.Context(), "preview", nil)
	if err != nil || len(owners) != 2 || owners[0].Address != "terraform_data.moved" && owners[1].Address != "terraform_data.moved" {
		t.Fatalf("Owners after the move: %+v, %v", owners, err)
	}
}
