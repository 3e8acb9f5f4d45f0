package s3store_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/ownership/ownershiptest"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

var prefixes atomic.Int64

// openGW opens a store on a fresh prefix of gw as its root account.
func openGW(t testing.TB, gw *gwtest.Server, opts ...s3store.Option) *s3store.Store {
	t.Helper()
	prefix := fmt.Sprintf("t%d", prefixes.Add(1))
	opts = append([]s3store.Option{s3store.WithAWSConfig(gw.RootConfig()), s3store.WithStateKey(testKey)}, opts...)
	s, err := s3store.Open(t.Context(), gw.StoreURL(prefix), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformanceVersityGW runs the shared suite against a real
// S3-compatible server on loopback, on the wall clock (the server's Date).
// The TTL must outlast the one-second resolution of Date and the takeover
// margin by far, since the suite expires leases by sleeping a quarter of it
// past the TTL.
func TestConformanceVersityGW(t *testing.T) {
	t.Parallel()
	gw := gwtest.Start(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		clock.UseWallTime(10 * time.Second)
		return openGW(t, gw)
	})
}

// reopen opens another Store on the same bucket and prefix as s: a new
// process with an empty cache.
func reopen(t testing.TB, gw *gwtest.Server, s *s3store.Store) *s3store.Store {
	t.Helper()
	o, err := s3store.Open(t.Context(), s.URL(), s3store.WithAWSConfig(gw.RootConfig()), s3store.WithStateKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestIntentRaceVersityGW runs the intent race rule's race test on two
// stores of one prefix of the real server (ownershiptest.IntentRace).
func TestIntentRaceVersityGW(t *testing.T) {
	t.Parallel()
	gw := gwtest.Start(t)
	a := openGW(t, gw)
	ownershiptest.IntentRace(t, 100, a, reopen(t, gw, a))
}
