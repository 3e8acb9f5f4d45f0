// Package s3test runs an in-process S3 server (gofakes3, which serves
// conditional writes) for the S3 store's tests, on a clock the test
// controls: the Date of every answer comes from it, as the store judges
// expiry by the server's Date.
package s3test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Bucket is the bucket every Server has.
const Bucket = "sponson"

// Server is one in-process S3 server.
type Server struct {
	URL     string
	Backend *s3mem.Backend
	// Wrap, when set, wraps the server for each request: fault injection
	// and request counting.
	Wrap func(http.Handler) http.Handler
}

type timeSource struct{ now func() time.Time }

func (t timeSource) Now() time.Time                   { return t.now() }
func (t timeSource) Since(at time.Time) time.Duration { return t.now().Sub(at) }

// Start starts a server whose clock is now (time.Now when nil), closed when
// the test ends.
func Start(t testing.TB, now func() time.Time) *Server {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	ts := timeSource{now: now}
	backend := s3mem.New(s3mem.WithTimeSource(ts))
	if err := backend.CreateBucket(Bucket); err != nil {
		t.Fatal(err)
	}
	faker := gofakes3.New(backend, gofakes3.WithTimeSource(ts), gofakes3.WithTimeSkewLimit(0))
	inner := faker.Server()
	srv := &Server{Backend: backend}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", now().UTC().Format(http.TimeFormat))
		h := inner
		if srv.Wrap != nil {
			h = srv.Wrap(inner)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	srv.URL = hs.URL
	return srv
}

// StoreURL is the s3:// URL of prefix on the server.
func (s *Server) StoreURL(prefix string) string {
	return "s3://" + Bucket + "/" + prefix + "?endpoint=" + s.URL
}

// Config is an AWS configuration with static test credentials.
func Config() aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("TESTKEY", "TESTSECRET", "")}
}
