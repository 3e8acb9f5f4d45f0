package s3store_test

import (
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// The S3 store's benchmarks run against versitygw on loopback (a real
// S3-compatible server over a posix directory), measured as for every
// backend (docs/design.md §8).

// BenchmarkCycle is one run's use of its scope lease: acquire, a fenced
// receipt write and release (storetest.BenchCycle).
func BenchmarkCycle(b *testing.B) {
	storetest.BenchCycle(b, openGW(b, gwtest.Start(b)))
}

// BenchmarkOwners is the foreign check's read of an environment of 10, 100,
// 1,000 and 10,000 scopes × 50 resources (storetest.BenchOwnersWarmCold):
// warm-p50 from a process that read the environment before, cold from a new
// process each time (the ownership log and the stored index).
func BenchmarkOwners(b *testing.B) {
	gw := gwtest.Start(b)
	storetest.BenchOwnersWarmCold(b, func(b testing.TB, prefix string) store.Store {
		s, err := s3store.Open(b.Context(), gw.StoreURL(prefix), s3store.WithAWSConfig(gw.RootConfig()), s3store.WithStateKey(testKey))
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}
