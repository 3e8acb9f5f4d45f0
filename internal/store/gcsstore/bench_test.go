package gcsstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
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
// 1,000 and 10,000 scopes × 50 resources: warm-p50 from a process that read
// the environment before, cold from a new process each time (the ownership
// log and the stored index).
func BenchmarkOwners(b *testing.B) {
	srv := gcstest.Start(b)
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("scopes=%d", n), func(b *testing.B) {
			prefix := fmt.Sprintf("owners%d", n)
			s := openOn(b, srv, prefix)
			seed(b, s, n)
			ids := make([]string, 50)
			for j := range ids {
				ids[j] = fmt.Sprintf("p|fixture_object|name=\"s%d-o%d\"", j%n, j)
			}
			var warm, cold []time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				got, err := s.Owners(b.Context(), "preview", ids)
				if err != nil || len(got) == 0 {
					b.Fatalf("Owners = %d, %v", len(got), err)
				}
				t1 := time.Now()
				fresh := openOn(b, srv, prefix)
				t2 := time.Now()
				if got, err := fresh.Owners(b.Context(), "preview", ids); err != nil || len(got) == 0 {
					b.Fatalf("cold Owners = %d, %v", len(got), err)
				}
				warm = append(warm, t1.Sub(t0))
				cold = append(cold, time.Since(t2))
			}
			p50, p99 := storetest.Percentiles(warm)
			b.ReportMetric(p50, "warm-p50-ms")
			b.ReportMetric(p99, "warm-p99-ms")
			p50, p99 = storetest.Percentiles(cold)
			b.ReportMetric(p50, "cold-p50-ms")
			b.ReportMetric(p99, "cold-p99-ms")
		})
	}
}

// seed writes n scopes of 50 ledger entries through fenced receipt writes
// and reads the environment once (which stores the cached index for later
// processes).
func seed(b *testing.B, s store.Store, n int) {
	b.Helper()
	ctx := b.Context()
	for i := range n {
		k := store.Key{Stack: "acme/app", Environment: "preview", Scope: fmt.Sprintf("pr-%d", i)}
		g, err := s.Acquire(ctx, k, fmt.Sprintf("run-%d", i), time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		r := storetest.NewReceipt(k, fmt.Sprintf("run-%d", i), 0)
		r.Ledger = make([]receipt.Entry, 50)
		for j := range r.Ledger {
			r.Ledger[j] = receipt.Entry{Identity: fmt.Sprintf("p|fixture_object|name=\"s%d-o%d\"", i, j), Address: fmt.Sprintf("fixture_object.o%d", j), CreatedBy: receipt.CreatedBySponson}
		}
		if err := s.WriteReceipt(ctx, g.Lease, r); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, g.Lease); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Owners(ctx, "preview", nil); err != nil {
		b.Fatal(err)
	}
}
