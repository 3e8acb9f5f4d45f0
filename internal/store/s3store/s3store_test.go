package s3store_test

import (
	"bytes"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/ownership/ownershiptest"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/s3test"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

var testKey = bytes.Repeat([]byte{0x5a}, 32)

func openStore(t testing.TB, srv *s3test.Server, prefix string, opts ...s3store.Option) *s3store.Store {
	t.Helper()
	opts = append([]s3store.Option{s3store.WithAWSConfig(s3test.Config()), s3store.WithStateKey(testKey)}, opts...)
	s, err := s3store.Open(t.Context(), srv.StoreURL(prefix), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs the shared suite against an in-process S3 server
// whose Date follows the suite's fake clock.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		srv := s3test.Start(t, clock.Now)
		return openStore(t, srv, "team/sponson", s3store.WithClock(clock.Now))
	})
}

// TestIntentRace runs the intent race rule's race test on two stores of one
// bucket and prefix (ownershiptest.IntentRace), as two CI jobs would use it.
func TestIntentRace(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	ownershiptest.IntentRace(t, 100, openStore(t, srv, "team"), openStore(t, srv, "team"))
}
