package azblobstore

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore/azuritetest"
)

// TestWritesRefusedWhereConditionsAreIgnored: in front of Azurite, a
// stand-in answers every conditional PUT that Azurite refused (409, 412)
// with 201 Created, as a server that ignores conditions would. The first
// write (a lease) is refused with STORE_NOT_CONFORMING by the opening
// check, again on a second try, and store verify's properties fail; on
// Azurite itself the same lease is granted and verify passes. (A stand-in
// that strips the headers would break the shared key's signature, which
// covers them.)
func TestWritesRefusedWhereConditionsAreIgnored(t *testing.T) {
	t.Parallel()
	srv := azuritetest.Start(t)
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		conditional := r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Match") != ""
		if (r.Method == http.MethodPut || r.Method == http.MethodDelete) && conditional &&
			(resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusPreconditionFailed) {
			_ = resp.Body.Close()
			resp.StatusCode, resp.Status = http.StatusCreated, "201 Created"
			if r.Method == http.MethodDelete {
				resp.StatusCode, resp.Status = http.StatusAccepted, "202 Accepted"
			}
			resp.Header.Del("x-ms-error-code")
			resp.Header.Set("ETag", `"0x8DCIGNORED"`)
			resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader("")), 0
			resp.Header.Set("Content-Length", "0")
		}
		return nil
	}
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = target.Host
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ps.Close)
	raw := "azblob://" + azuritetest.Account + "/" + azuritetest.Container + "/p?endpoint=" + ps.URL + "/" + azuritetest.Account
	s := open(t, raw, srv.Getenv)
	if _, err := s.ReadLease(t.Context(), k1); err != nil {
		t.Fatalf("a read through the stand-in: %v", err)
	}
	for range 2 {
		if _, err := s.Acquire(t.Context(), k1, "run-a", time.Minute); !errcode.Is(err, errcode.StoreNotConforming) {
			t.Fatalf("Acquire through a server that ignores conditions = %v, want STORE_NOT_CONFORMING", err)
		}
	}
	r, err := s.Verify(t.Context(), 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Properties {
		if p.OK {
			t.Errorf("%s held through a server that ignores conditions: %s", p.Name, p.Detail)
		}
	}

	direct := open(t, srv.StoreURL("p"), srv.Getenv)
	if _, err := direct.Acquire(t.Context(), k1, "run-a", time.Minute); err != nil {
		t.Errorf("Acquire on Azurite itself: %v", err)
	}
	if r, err := direct.Verify(t.Context(), 8); err != nil || !r.OK() {
		t.Errorf("Verify on Azurite itself: %+v, %v", r, err)
	}
}
