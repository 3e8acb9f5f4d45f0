package s3store

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
)

// BenchmarkConditionCheck is what the opening check (checkConditions) adds
// to the first write of a process: one create-if-absent of the existing
// layout marker, refused, against versitygw on loopback. It reports the
// p50 in ms (docs/design.md §5.5, "Servers that ignore conditions").
func BenchmarkConditionCheck(b *testing.B) {
	gw := gwtest.Start(b)
	s, err := Open(b.Context(), gw.StoreURL("bench"), WithAWSConfig(gw.RootConfig()), WithStateKey(bytes.Repeat([]byte{1}, 32)))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.b.Ready(b.Context(), true); err != nil { // writes the marker, checks once
		b.Fatal(err)
	}
	var took []time.Duration
	for b.Loop() {
		s.b.conforming = false
		start := time.Now()
		if err := s.b.checkConditions(b.Context(), true); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}
