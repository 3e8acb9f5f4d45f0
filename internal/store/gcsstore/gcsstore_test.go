package gcsstore_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/ownership/ownershiptest"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gcsstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/gcsstore/gcstest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

var (
	testKey  = bytes.Repeat([]byte{0x5a}, 32)
	prefixes atomic.Int64
)

// openOn opens a store on prefix of srv.
func openOn(t testing.TB, srv *gcstest.Server, prefix string) *gcsstore.Store {
	t.Helper()
	s, err := gcsstore.Open(t.Context(), srv.StoreURL(prefix), gcsstore.WithGetenv(srv.Getenv), gcsstore.WithStateKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConformanceFakeGCS runs the shared suite against fake-gcs-server on
// loopback, on the wall clock (the server's Date). The TTL must outlast the
// one-second resolution of Date and the takeover margin by far, since the
// suite expires leases by sleeping a quarter of it past the TTL. The
// emulator checks ifGenerationMatch on uploads as GCS does; it ignores
// ifGenerationNotMatch on reads, so unchanged reads are not 304s here
// (gcstest lists what it does not prove).
func TestConformanceFakeGCS(t *testing.T) {
	t.Parallel()
	srv := gcstest.Start(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		clock.UseWallTime(10 * time.Second)
		return openOn(t, srv, fmt.Sprintf("t%d", prefixes.Add(1)))
	})
}

// TestIntentRaceFakeGCS runs the intent race rule's race test on two stores
// of one prefix (ownershiptest.IntentRace), as two CI jobs would use it.
func TestIntentRaceFakeGCS(t *testing.T) {
	t.Parallel()
	srv := gcstest.Start(t)
	prefix := fmt.Sprintf("t%d", prefixes.Add(1))
	ownershiptest.IntentRace(t, 100, openOn(t, srv, prefix), openOn(t, srv, prefix))
}
