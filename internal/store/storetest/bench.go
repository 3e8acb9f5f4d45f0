package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// BenchCycle measures the operations every run makes on a store: acquire the
// lease, one fenced receipt write, release. It reports the p50 and p99 of
// each operation and of the whole cycle, in milliseconds, so every backend
// is measured the same way (docs/design.md §8).
func BenchCycle(b *testing.B, s store.Store) {
	b.Helper()
	ctx := b.Context()
	k := store.Key{Stack: Stack, Environment: "preview", Scope: "pr-1"}
	r := NewReceipt(k, "run", 20)
	var acquire, write, release, cycle []time.Duration
	for b.Loop() {
		holder := fmt.Sprintf("run-%d", len(cycle))
		t0 := time.Now()
		g, err := s.Acquire(ctx, k, holder, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		r.RunID = holder
		if err := s.WriteReceipt(ctx, g.Lease, r); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := s.Release(ctx, g.Lease); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		acquire = append(acquire, t1.Sub(t0))
		write = append(write, t2.Sub(t1))
		release = append(release, t3.Sub(t2))
		cycle = append(cycle, t3.Sub(t0))
	}
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"acquire", acquire}, {"write", write}, {"release", release}, {"cycle", cycle}} {
		p50, p99 := Percentiles(m.d)
		b.ReportMetric(p50, m.name+"-p50-ms")
		b.ReportMetric(p99, m.name+"-p99-ms")
	}
}

// Percentiles returns the p50 and p99 of d in milliseconds.
func Percentiles(d []time.Duration) (p50, p99 float64) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	return ms(s[len(s)/2]), ms(s[min(len(s)-1, len(s)*99/100)])
}

// BenchOwners measures the foreign check's read of an environment: one
// Owners call for 50 identities against scopes × 50 ledger entries, seeded
// through the store's own fenced receipt writes. It reports the median in
// milliseconds.
func BenchOwners(b *testing.B, s store.Store, scopes int) {
	b.Helper()
	ctx := b.Context()
	Seed(b, s, scopes)
	ids := OwnersIDs(scopes)
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		got, err := s.Owners(ctx, "preview", ids)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) == 0 {
			b.Fatal("Owners found none of the seeded identities")
		}
		took = append(took, time.Since(t0))
	}
	p50, p99 := Percentiles(took)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
}

// BenchOwnersWarmCold is BenchOwners for the object stores, at 10, 100,
// 1,000 and 10,000 scopes, each in a prefix of its own that open opens:
// warm-p50 from a process that read the environment before, cold from a
// store opened anew each time (a new process: the ownership log and the
// stored index, which Seed's last read wrote).
func BenchOwnersWarmCold(b *testing.B, open func(b testing.TB, prefix string) store.Store) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("scopes=%d", n), func(b *testing.B) {
			prefix := fmt.Sprintf("owners%d", n)
			s := open(b, prefix)
			Seed(b, s, n)
			if _, err := s.Owners(b.Context(), "preview", nil); err != nil {
				b.Fatal(err)
			}
			ids := OwnersIDs(n)
			var warm, cold []time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				got, err := s.Owners(b.Context(), "preview", ids)
				if err != nil || len(got) == 0 {
					b.Fatalf("Owners = %d, %v", len(got), err)
				}
				t1 := time.Now()
				fresh := open(b, prefix)
				t2 := time.Now()
				if got, err := fresh.Owners(b.Context(), "preview", ids); err != nil || len(got) == 0 {
					b.Fatalf("cold Owners = %d, %v", len(got), err)
				}
				warm = append(warm, t1.Sub(t0))
				cold = append(cold, time.Since(t2))
			}
			p50, p99 := Percentiles(warm)
			b.ReportMetric(p50, "warm-p50-ms")
			b.ReportMetric(p99, "warm-p99-ms")
			p50, p99 = Percentiles(cold)
			b.ReportMetric(p50, "cold-p50-ms")
			b.ReportMetric(p99, "cold-p99-ms")
		})
	}
}

// OwnersIDs are the 50 identities the foreign-check benchmarks ask for:
// one resource of each of the first scopes Seed wrote.
func OwnersIDs(scopes int) []string {
	ids := make([]string, 50)
	for j := range ids {
		ids[j] = fmt.Sprintf("p|fixture_object|name=\"s%d-o%d\"", j%scopes, j)
	}
	return ids
}

// Seed writes scopes scopes of 50 ledger entries each through the store's
// own fenced receipt writes.
func Seed(b *testing.B, s store.Store, scopes int) {
	b.Helper()
	ctx := b.Context()
	for i := range scopes {
		k := store.Key{Stack: Stack, Environment: "preview", Scope: fmt.Sprintf("pr-%d", i)}
		g, err := s.Acquire(ctx, k, fmt.Sprintf("run-%d", i), time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		r := NewReceipt(k, fmt.Sprintf("run-%d", i), 0)
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
}
