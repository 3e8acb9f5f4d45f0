package s3store

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
)

// countingProxy is gw behind a loopback proxy that counts requests.
func countingProxy(t *testing.T, gw *gwtest.Server) (string, *atomic.Int32) {
	t.Helper()
	target, err := url.Parse(gw.URL)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ps.Close)
	return ps.URL, &n
}

type noCredential struct{}

func (noCredential) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, errors.New("no EC2 IMDS role found")
}

// A credential the chain cannot find is STORE_PERMISSION before any
// request; one the server refuses (a wrong secret) after one request,
// never retried; both name where the chain looks (issue 51 item 4).
func TestCredentialErrorsFailFast(t *testing.T) {
	t.Parallel()
	gw := gwtest.Start(t)
	endpoint, requests := countingProxy(t, gw)
	raw := "s3://" + gwtest.Bucket + "/p?endpoint=" + endpoint
	k := store.Key{Stack: "app", Environment: "preview", Scope: "pr-1"}
	key := bytes.Repeat([]byte{1}, 32)

	for _, tc := range []struct {
		name  string
		cfg   aws.Config
		msg   string
		calls int32
	}{
		{"missing", aws.Config{Region: "us-east-1", Credentials: noCredential{}}, "has no AWS credential", 0},
		{"wrong secret", gwtest.Config(gw.Access, "not-the-secret-0123456789"), "refused the AWS credential", 1},
		{"unknown key id", gwtest.Config("AKIDUNKNOWN", gw.Secret), "refused the AWS credential", 1},
	} {
		before := requests.Load()
		s, err := Open(t.Context(), raw, WithAWSConfig(tc.cfg), WithStateKey(key), WithBudget(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Acquire(t.Context(), k, "run-a", time.Minute)
		ce := errcode.As(err)
		if !errcode.Is(err, errcode.StorePermission) || !strings.Contains(ce.Message, tc.msg) || !strings.Contains(ce.Hint, "AWS_ACCESS_KEY_ID") || !strings.Contains(ce.Hint, "AWS_WEB_IDENTITY_TOKEN_FILE") {
			t.Errorf("%s: Acquire = %v (hint %q), want STORE_PERMISSION %q with a hint naming the chain", tc.name, err, ce.Hint, tc.msg)
		}
		if n := requests.Load() - before; n != tc.calls {
			t.Errorf("%s: %d requests, want %d (a credential error is not retried)", tc.name, n, tc.calls)
		}
	}
}
