package azblobstore_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/ownership/ownershiptest"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore/azuritetest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

var (
	testKey  = bytes.Repeat([]byte{0x5a}, 32)
	prefixes atomic.Int64
)

func openOn(t testing.TB, srv *azuritetest.Server, prefix string) *azblobstore.Store {
	t.Helper()
	s, err := azblobstore.Open(t.Context(), srv.StoreURL(prefix), azblobstore.WithGetenv(srv.Getenv), azblobstore.WithStateKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformanceAzurite runs the shared suite against Azurite on loopback,
// on the wall clock (the server's Date), with TTLs that outlast Date's
// one-second resolution by far, as for versitygw and fake-gcs-server.
func TestConformanceAzurite(t *testing.T) {
	t.Parallel()
	srv := azuritetest.Start(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		clock.UseWallTime(10 * time.Second)
		return openOn(t, srv, fmt.Sprintf("t%d", prefixes.Add(1)))
	})
}

// TestIntentRaceAzurite runs the intent race rule's race test on two stores
// of one prefix (ownershiptest.IntentRace).
func TestIntentRaceAzurite(t *testing.T) {
	t.Parallel()
	srv := azuritetest.Start(t)
	prefix := fmt.Sprintf("t%d", prefixes.Add(1))
	ownershiptest.IntentRace(t, 100, openOn(t, srv, prefix), openOn(t, srv, prefix))
}
