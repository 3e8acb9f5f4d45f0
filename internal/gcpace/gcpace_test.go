package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// gogc is the collector's GOGC as the runtime reports it.
func gogc(t *testing.T) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The package's init ran before this test binary's tests, whose live heap
// is far below LiveLimit: the slow pace, unless this test run was given
// GOGC.
func TestInitSetsTheSlowPace(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set for this test run: the init leaves it")
	}
	runtime.GC()
	if p := gogc(t); p != StartPercent {
		t.Fatalf("GOGC %d after the package's init and a collection of a small heap, want %d", p, StartPercent)
	}
}

// kept holds the large live heap of TestDefaultPaceOnceTheLiveHeapIsLarge.
var kept [][]byte

func TestDefaultPaceOnceTheLiveHeapIsLarge(t *testing.T) {
	before := debug.SetGCPercent(defaultPercent)
	t.Cleanup(func() { debug.SetGCPercent(before); kept = nil })
	Start("")
	if p := gogc(t); p != StartPercent {
		t.Fatalf("GOGC %d after Start, want %d", p, StartPercent)
	}
	for range 2 * LiveLimit / (1 << 20) {
		kept = append(kept, make([]byte, 1<<20))
	}
	// The pace changes in a cleanup the collection's end runs; it runs on
	// its own goroutine, so collect until it has.
	for i := 0; gogc(t) != defaultPercent; i++ {
		if i == 1000 {
			t.Fatalf("GOGC still %d after %d collections with a live heap of %d MiB, want %d", gogc(t), i, 2*LiveLimit>>20, defaultPercent)
		}
		runtime.GC()
		runtime.Gosched()
	}
}

func TestTheUsersGOGCStays(t *testing.T) {
	before := debug.SetGCPercent(250)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	Start("250")
	runtime.GC()
	if p := gogc(t); p != 250 {
		t.Fatalf("GOGC %d after Start with the user's GOGC=250, want 250", p)
	}
}
