package gcsstore

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gcsstore/gcstest"
	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

var (
	key32 = bytes.Repeat([]byte{7}, 32)
	k1    = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
)

func open(t *testing.T, srv *gcstest.Server, opts ...Option) *Store {
	t.Helper()
	opts = append([]Option{WithGetenv(srv.Getenv), WithStateKey(key32), WithBudget(5 * time.Second)}, opts...)
	s, err := Open(t.Context(), srv.StoreURL("p"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// env is a getenv of the given variables only.
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
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

// The pointer is the only object a fenced write changes in place, and every
// upload of it carries ifGenerationMatch (0 to create it): a proxy in front
// of the emulator counts those that do not.
func TestPointerWritesAreConditional(t *testing.T) {
	t.Parallel()
	srv := gcstest.Start(t)
	target, err := url.Parse("http://" + srv.Host)
	if err != nil {
		t.Fatal(err)
	}
	var pointerPuts, unconditional atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/upload/") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("/.leases/")) || strings.Contains(r.URL.RawQuery, "leases") {
				pointerPuts.Add(1)
				if r.URL.Query().Get("ifGenerationMatch") == "" {
					unconditional.Add(1)
				}
			}
		}
		r.Host = srv.Host // the emulator routes reads by its own host name
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ps.Close)
	s, err := Open(t.Context(), srv.StoreURL("p"), WithStateKey(key32), WithBudget(5*time.Second),
		WithGetenv(env(map[string]string{EmulatorEnv: strings.TrimPrefix(ps.URL, "http://")})))
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(k1, "run-a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteState(t.Context(), g.Lease, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(t.Context(), g.Lease); err != nil {
		t.Fatal(err)
	}
	if n := pointerPuts.Load(); n < 4 {
		t.Fatalf("the proxy saw %d pointer uploads, want at least 4 (acquire, receipt, state, release)", n)
	}
	if n := unconditional.Load(); n != 0 {
		t.Errorf("%d of %d pointer uploads without ifGenerationMatch", n, pointerPuts.Load())
	}
}

// A server that does not answer is STORE_UNAVAILABLE after the budget, in
// its own words, after more than one attempt.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	dead := strings.TrimPrefix(hs.URL, "http://")
	hs.Close()
	s, err := Open(t.Context(), "gs://"+gcstest.Bucket+"/p", WithStateKey(key32), WithBudget(300*time.Millisecond),
		WithGetenv(env(map[string]string{EmulatorEnv: dead})))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StoreUnavailable) {
		t.Fatalf("Acquire against a closed port = %v, want STORE_UNAVAILABLE", err)
	}
	if !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "(1 attempts)") {
		t.Errorf("Acquire against a closed port = %v, want several attempts ending in connection refused", err)
	}
}

// A credential file that is not there is STORE_PERMISSION from the first
// operation, without a request and without a retry, naming where Google's
// libraries look for one.
// Not parallel: Google's libraries read GOOGLE_APPLICATION_CREDENTIALS from
// the process environment.
func TestMissingCredentialFailsFast(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "adc.json")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", missing)
	s, err := Open(t.Context(), "gs://"+gcstest.Bucket+"/p", WithStateKey(key32), WithGetenv(env(nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StorePermission) {
		t.Fatalf("Acquire without a credential = %v, want STORE_PERMISSION", err)
	}
	ce := errcode.As(err)
	if !strings.Contains(ce.Message, "no Google credential") || !strings.Contains(ce.Message, missing) {
		t.Errorf("message %q: want it to say no credential was found, and where", ce.Message)
	}
	if !strings.Contains(ce.Hint, "GOOGLE_APPLICATION_CREDENTIALS") || !strings.Contains(ce.Hint, "application_default_credentials.json") {
		t.Errorf("hint %q does not name where credentials are looked up", ce.Hint)
	}
}

// tokenServer is a token endpoint answering every request with code and
// body, counting them.
func tokenServer(t *testing.T, code int, body string) (string, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/token", &hits
}

// serviceAccount writes a service account key whose token endpoint is
// tokenURI, and returns its path.
func serviceAccount(t *testing.T, tokenURI string) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "sponson-test", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "ci@sponson-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURI,
	})
	p := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(p, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A credential its issuer refuses is STORE_PERMISSION after one request to
// the token endpoint: never retried, never a network error.
func TestRefusedCredentialFailsFast(t *testing.T) {
	tokenURI, hits := tokenServer(t, http.StatusBadRequest, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", serviceAccount(t, tokenURI))
	s, err := Open(t.Context(), "gs://"+gcstest.Bucket+"/p", WithStateKey(key32), WithGetenv(env(nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StorePermission) {
		t.Fatalf("Acquire with a refused credential = %v, want STORE_PERMISSION", err)
	}
	ce := errcode.As(err)
	if !strings.Contains(ce.Message, "refused the credential") || !strings.Contains(ce.Message, "invalid_grant") {
		t.Errorf("message %q: want the refusal in the token endpoint's words", ce.Message)
	}
	if !strings.Contains(ce.Hint, "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Errorf("hint %q does not name where credentials are looked up", ce.Hint)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the token endpoint was asked %d times, want 1 (a refusal is not retried)", n)
	}
}

// A token endpoint that fails on its side (5xx) is transient: retried
// within the budget, then STORE_UNAVAILABLE.
func TestTokenEndpointDownIsRetried(t *testing.T) {
	tokenURI, hits := tokenServer(t, http.StatusServiceUnavailable, `{"error":"unavailable"}`)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", serviceAccount(t, tokenURI))
	s, err := Open(t.Context(), "gs://"+gcstest.Bucket+"/p", WithStateKey(key32), WithBudget(300*time.Millisecond), WithGetenv(env(nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StoreUnavailable) {
		t.Fatalf("Acquire with the token endpoint down = %v, want STORE_UNAVAILABLE", err)
	}
	if n := hits.Load(); n < 2 {
		t.Errorf("the token endpoint was asked %d times, want retries", n)
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]Location{
		"gs://bucket":               {Bucket: "bucket"},
		"gs://bucket/team/sponson/": {Bucket: "bucket", Prefix: "team/sponson/"},
	} {
		got, err := ParseURL(raw)
		if err != nil || got != want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"gs://", "gs://KEY:SECRET@bucket/p", "gs://b/../x", "gs://b/p?endpoint=http://x", "s3://b/p"} {
		_, err := ParseURL(raw)
		if !errcode.Is(err, errcode.Usage) {
			t.Errorf("ParseURL(%q) = %v, want USAGE", raw, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("ParseURL(%q) repeats the credentials: %v", raw, err)
		}
	}
}

// The emulator refuses what fencing needs refused, as GCS does: a create
// of an object that exists (ifGenerationMatch=0) and a write conditional on
// a generation that is no longer current.
func TestStaleGenerationIsRefused(t *testing.T) {
	t.Parallel()
	s := open(t, gcstest.Start(t))
	key := s.b.prefix + "cas.json"
	never := func([]byte) bool { return false }
	g1, err := s.b.PutIf(t.Context(), key, []byte("1"), "", never)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.b.PutIf(t.Context(), key, []byte("2"), "", never); !errors.Is(err, objectstore.ErrPrecondition) {
		t.Errorf("create of an existing object = %v, want a precondition failure", err)
	}
	g2, err := s.b.PutIf(t.Context(), key, []byte("3"), g1, never)
	if err != nil || g2 == g1 {
		t.Fatalf("write on the current generation = %q, %v", g2, err)
	}
	if _, err := s.b.PutIf(t.Context(), key, []byte("4"), g1, never); !errors.Is(err, objectstore.ErrPrecondition) {
		t.Errorf("write on a stale generation = %v, want a precondition failure", err)
	}
	if o, err := s.b.Get(t.Context(), key); err != nil || string(o.Data) != "3" || o.ETag != g2 {
		t.Errorf("the object is %q at generation %s (%v), want 3 at %s", o.Data, o.ETag, err, g2)
	}
}

// Verify on the emulator: every write precondition holds and nothing is
// left behind; the conditional delete is reported as not holding, because
// fake-gcs-server ignores ifGenerationMatch on deletes (GCS honours it; the
// store itself never deletes conditionally). When the emulator learns it,
// this test fails and docs/design.md §5.7 is to be updated.
func TestVerifyOnTheEmulator(t *testing.T) {
	t.Parallel()
	s := open(t, gcstest.Start(t))
	r, err := s.Verify(t.Context(), 8)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"create-if-absent": true, "stale-version-refused": true, "one-winner": true, "conditional-delete": false}
	for _, p := range r.Properties {
		if p.OK != want[p.Name] {
			t.Errorf("%s: OK %v, want %v (%s)", p.Name, p.OK, want[p.Name], p.Detail)
		}
	}
	if len(r.Properties) != len(want) {
		t.Errorf("%d properties, want %d", len(r.Properties), len(want))
	}
	if left := objects(t, s); len(left) != 0 || len(r.Leftover) != 0 {
		t.Errorf("the check left objects behind: %v (leftover %v)", left, r.Leftover)
	}
}

// Verify through a stand-in that drops every upload's precondition, as a
// server that ignores them would: create-if-absent, the stale write and
// the race all fail, and the report is not OK.
func TestVerifyFailsWhereConditionsAreIgnored(t *testing.T) {
	t.Parallel()
	srv := gcstest.Start(t)
	s := openIgnoring(t, srv)
	r, err := s.Verify(t.Context(), 8)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() {
		t.Fatalf("Verify through a server that ignores preconditions passed: %+v", r.Properties)
	}
	for _, p := range r.Properties {
		if p.Name != "conditional-delete" && p.OK {
			t.Errorf("%s held through a server that ignores preconditions: %s", p.Name, p.Detail)
		}
	}
	if left := objects(t, s); len(left) != 0 {
		t.Errorf("the check left objects behind: %v", left)
	}
}

// openIgnoring opens a store on prefix p of srv through a stand-in that
// drops every request's ifGenerationMatch, as a server that ignores
// preconditions would.
func openIgnoring(t *testing.T, srv *gcstest.Server) *Store {
	t.Helper()
	target, err := url.Parse("http://" + srv.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		q.Del("ifGenerationMatch")
		r.URL.RawQuery = q.Encode()
		r.Host = srv.Host
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ps.Close)
	s, err := Open(t.Context(), srv.StoreURL("p"), WithStateKey(key32),
		WithGetenv(env(map[string]string{EmulatorEnv: strings.TrimPrefix(ps.URL, "http://")})))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWritesRefusedWhereConditionsAreIgnored: through the stand-in, the
// first write (a lease) is refused with STORE_NOT_CONFORMING: the opening
// check found a create of the existing layout marker accepted. A read
// still works; on the emulator itself the same lease is granted.
func TestWritesRefusedWhereConditionsAreIgnored(t *testing.T) {
	t.Parallel()
	srv := gcstest.Start(t)
	s := openIgnoring(t, srv)
	k := store.Key{Stack: "app", Environment: "preview", Scope: "pr-1"}
	if _, err := s.ReadLease(t.Context(), k); err != nil {
		t.Fatalf("a read through the stand-in: %v", err)
	}
	for range 2 { // refused again: a refusal is not remembered as a pass
		if _, err := s.Acquire(t.Context(), k, "run-a", time.Minute); !errcode.Is(err, errcode.StoreNotConforming) {
			t.Fatalf("Acquire through a server that ignores preconditions = %v, want STORE_NOT_CONFORMING", err)
		}
	}
	if left := objects(t, s); len(left) != 1 || left[layoutObject] == nil {
		t.Errorf("the refused store wrote %d object(s), want the layout marker alone", len(left))
	}
	if _, err := open(t, srv).Acquire(t.Context(), k, "run-a", time.Minute); err != nil {
		t.Errorf("Acquire on the emulator itself: %v", err)
	}
}
