package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore/pgtest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// latencies collects durations of one kind of operation and reports their
// median and 99th percentile in milliseconds, as storetest's benchmarks do
// (docs/design.md §8: acquire + fenced write + release on PostgreSQL ≤ 10 ms at
// p50). With `make bench` (20 iterations) p99 is close to the maximum; run
// with a larger -benchtime for a steadier tail.
type latencies struct {
	name string
	d    []time.Duration
}

func (l *latencies) time(f func() error) error {
	start := time.Now()
	err := f()
	l.d = append(l.d, time.Since(start))
	return err
}

func (l *latencies) report(b *testing.B) {
	p50, p99 := storetest.Percentiles(l.d)
	b.ReportMetric(p50, l.name+"-p50-ms")
	b.ReportMetric(p99, l.name+"-p99-ms")
}

func benchStore(b *testing.B) *pgstore.Store {
	srv := pgtest.Shared(b)
	return openStore(b, srv.DSN(srv.NewDatabase(b)))
}

// BenchmarkCycle is one run's use of its scope lease: acquire, a fenced
// receipt write and release, measured as for every backend
// (storetest.BenchCycle: p50/p99 of each operation and of the cycle).
func BenchmarkCycle(b *testing.B) {
	storetest.BenchCycle(b, benchStore(b))
}

// BenchmarkOwners is the foreign check's read of an environment of 10, 100
// and 1,000 scopes × 50 resources, seeded through the store's own fenced
// receipt writes, as for every backend (storetest.BenchOwners; docs/design.md §8:
// ≤ 200 ms at 1,000). BenchmarkOwners10000 goes ten times further.
func BenchmarkOwners(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("scopes=%d", n), func(b *testing.B) {
			storetest.BenchOwners(b, benchStore(b), n)
		})
	}
}

// BenchmarkOperations measures the other operations of a run one by one.
func BenchmarkOperations(b *testing.B) {
	state := make([]byte, 64<<10)
	for i := range state {
		state[i] = byte('a' + i%26)
	}
	ops := []struct {
		name string
		op   func(ctx context.Context, s *pgstore.Store, l *store.Lease) error
	}{
		{"Renew", func(ctx context.Context, s *pgstore.Store, l *store.Lease) (err error) {
			*l, err = s.Renew(ctx, *l, time.Minute)
			return err
		}},
		{"WriteState64KiB", func(ctx context.Context, s *pgstore.Store, l *store.Lease) error { return s.WriteState(ctx, *l, state) }},
		{"ReadState64KiB", func(ctx context.Context, s *pgstore.Store, l *store.Lease) error {
			_, err := s.ReadState(ctx, l.Key)
			return err
		}},
		{"WriteRecord", func(ctx context.Context, s *pgstore.Store, l *store.Lease) error {
			return s.WriteRecord(ctx, *l, "scope", []byte(`{"name":"pr-1"}`))
		}},
		{"LatestReceipt", func(ctx context.Context, s *pgstore.Store, l *store.Lease) error {
			_, err := s.LatestReceipt(ctx, l.Key)
			return err
		}},
		{"ReadLease", func(ctx context.Context, s *pgstore.Store, l *store.Lease) error {
			_, err := s.ReadLease(ctx, l.Key)
			return err
		}},
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			l := mustAcquire(b, s, pr1, "run-bench", time.Hour).Lease
			if err := s.WriteReceipt(ctx, l, storetest.NewReceipt(pr1, "run-bench", 50)); err != nil {
				b.Fatal(err)
			}
			if err := s.WriteState(ctx, l, state); err != nil {
				b.Fatal(err)
			}
			lat := latencies{name: "op"}
			b.ResetTimer()
			for range b.N {
				if err := lat.time(func() error { return o.op(ctx, s, &l) }); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			lat.report(b)
		})
	}
}

var owners10000 struct {
	once sync.Once
	s    *pgstore.Store
	err  error
}

// BenchmarkOwners10000 is the foreign check: the owners of a plan's 50
// identities in an environment of 10,000 scopes × 50 resources. The index is
// seeded once per benchmark run, in one COPY (10,000 fenced receipt writes
// would add about 12 s to `make bench` and measure nothing more); every
// iteration asks for 50 other identities.
func BenchmarkOwners10000(b *testing.B) {
	srv := pgtest.Shared(b)
	owners10000.once.Do(func() {
		db, err := srv.CreateDatabase(context.Background())
		if err != nil {
			owners10000.err = err
			return
		}
		owners10000.s, owners10000.err = pgstore.Open(context.Background(), srv.DSN(db))
		if owners10000.err == nil {
			seedOwners(b, owners10000.s, "preview", 10000, 50)
		}
	})
	if owners10000.err != nil {
		b.Fatal(owners10000.err)
	}
	s := owners10000.s
	ids := make([]string, 50)
	lat := latencies{name: "owners"}
	b.ResetTimer()
	for i := range b.N {
		for j := range ids {
			ids[j] = seedIdentity((i*7919+j*211)%10000, (i+j)%50)
		}
		var got []store.Owner
		err := lat.time(func() (err error) {
			got, err = s.Owners(context.Background(), "preview", ids)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != len(ids) {
			b.Fatalf("Owners found %d owners for %d identities", len(got), len(ids))
		}
	}
	b.StopTimer()
	lat.report(b)
}
