package gcsstore_test

import (
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gcsstore/gcstest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// The GCS store's benchmarks run against fake-gcs-server on loopback (its
// in-memory backend), measured as for every backend (docs/design.md §8):
// the same benchmarks as the S3 store's on versitygw, side by side in
// `make bench`. An emulator in memory answers faster than GCS does: the
// figures are the store's own cost, not the service's.

// BenchmarkCycle is one run's use of its scope lease: acquire, a fenced
// receipt write and release (storetest.BenchCycle).
func BenchmarkCycle(b *testing.B) {
	storetest.BenchCycle(b, openOn(b, gcstest.Start(b), "bench"))
}

// BenchmarkOwners is the foreign check's read of an environment of 10, 100,
// 1,000 and 10,000 scopes × 50 resources (storetest.BenchOwnersWarmCold):
// warm-p50 from a process that read the environment before, cold from a new
// process each time (the ownership log and the stored index).
func BenchmarkOwners(b *testing.B) {
	srv := gcstest.Start(b)
	storetest.BenchOwnersWarmCold(b, func(b testing.TB, prefix string) store.Store { return openOn(b, srv, prefix) })
}
