package azblobstore

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore/azuritetest"
	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
)

var (
	key32 = bytes.Repeat([]byte{7}, 32)
	k1    = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func open(t *testing.T, raw string, getenv func(string) string, opts ...Option) *Store {
	t.Helper()
	opts = append([]Option{WithGetenv(getenv), WithStateKey(key32), WithBudget(5 * time.Second)}, opts...)
	s, err := Open(t.Context(), raw, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The emulator refuses what fencing needs refused, as Azure does.
func TestStaleETagIsRefused(t *testing.T) {
	t.Parallel()
	srv := azuritetest.Start(t)
	s := open(t, srv.StoreURL("p"), srv.Getenv)
	key := s.b.prefix + "cas.json"
	never := func([]byte) bool { return false }
	e1, err := s.b.PutIf(t.Context(), key, []byte("1"), "", never)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.b.PutIf(t.Context(), key, []byte("2"), "", never); !errors.Is(err, objectstore.ErrPrecondition) {
		t.Errorf("create of an existing blob = %v, want a precondition failure", err)
	}
	e2, err := s.b.PutIf(t.Context(), key, []byte("3"), e1, never)
	if err != nil || e2 == e1 {
		t.Fatalf("write on the current ETag = %q, %v", e2, err)
	}
	if _, err := s.b.PutIf(t.Context(), key, []byte("4"), e1, never); !errors.Is(err, objectstore.ErrPrecondition) {
		t.Errorf("write on a stale ETag = %v, want a precondition failure", err)
	}
	if _, err := s.b.GetIfChanged(t.Context(), key, e2); !errors.Is(err, objectstore.ErrNotModified) {
		t.Errorf("read of an unchanged blob = %v, want not modified", err)
	}
}

// A key that does not decode is STORE_PERMISSION without a request; a key
// the service refuses is STORE_PERMISSION after one request, never
// retried; both name where credentials are looked up.
func TestCredentialErrorsFailFast(t *testing.T) {
	t.Parallel()
	srv := azuritetest.Start(t)
	bad := open(t, srv.StoreURL("p"), env(map[string]string{KeyEnv: "not base64!"}))
	_, err := bad.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StorePermission) || !strings.Contains(err.Error(), "no Azure credential") {
		t.Fatalf("Acquire with a key that does not decode = %v, want STORE_PERMISSION, no credential", err)
	}

	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		r.Host = target.Host
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ps.Close)
	wrongKey := "d3Jvbmcga2V5IG9mIHRoZSByaWdodCBsZW5ndGggZm9yIHRlc3RzIG9ubHkgMDAwMDAwMDAwMDAwMDA="
	raw := "azblob://" + azuritetest.Account + "/" + azuritetest.Container + "/p?endpoint=" + ps.URL + "/" + azuritetest.Account
	wrong := open(t, raw, env(map[string]string{KeyEnv: wrongKey}))
	_, err = wrong.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StorePermission) {
		t.Fatalf("Acquire with a wrong key = %v, want STORE_PERMISSION", err)
	}
	// Azure answers a key that signs wrong with 403 AuthenticationFailed
	// ("refused the credential"); Azurite with 403 AuthorizationFailure, as
	// Azure answers a principal without the role: either way the hint
	// names where the credential comes from.
	if ce := errcode.As(err); !strings.Contains(ce.Hint, KeyEnv) || !strings.Contains(ce.Message, "Forbidden") {
		t.Errorf("message %q, hint %q: want the refusal and where the credential is looked up", ce.Message, ce.Hint)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests with a refused key, want 1 (a refusal is not retried)", n)
	}
}

// A server that does not answer is STORE_UNAVAILABLE after the budget.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	dead := hs.URL
	hs.Close()
	s := open(t, "azblob://acct/c/p?endpoint="+dead+"/acct", env(map[string]string{KeyEnv: azuritetest.Key}), WithBudget(300*time.Millisecond))
	_, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if !errcode.Is(err, errcode.StoreUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Acquire against a closed port = %v, want STORE_UNAVAILABLE, connection refused", err)
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]Location{
		"azblob://acct/c":                      {Account: "acct", Container: "c"},
		"azblob://acct/c/team/sponson/":        {Account: "acct", Container: "c", Prefix: "team/sponson/"},
		"azblob://a/c/p?endpoint=http://h:1/a": {Account: "a", Container: "c", Prefix: "p/", Endpoint: "http://h:1/a"},
	} {
		got, err := ParseURL(raw)
		if err != nil || got != want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"azblob://", "azblob://acct", "azblob://KEY:SECRET@acct/c", "azblob://a/c/../x", "azblob://a/c?color=red", "gs://b/p"} {
		if _, err := ParseURL(raw); !errcode.Is(err, errcode.Usage) || err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("ParseURL(%q) = %v, want USAGE without the secret", raw, err)
		}
	}
}
