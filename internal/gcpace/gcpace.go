// Package gcpace lets the garbage collector of a short sponson process run
// less often while its heap is small, unless the user chose (GOGC in the
// environment, which the Go runtime reads itself). The sponson command
// imports it for its side effect (docs/design.md §8, the paragraph on the
// collector's pace).
//
// Most sponson processes are short and small: each stack of `--all` is a
// process of its own that lives for one run of tens of milliseconds, and
// so is the provider an engine starts. With Go's default (a collection
// whenever the heap has grown by 100% since the last, and at the least
// every 4 MiB), such a process spends a tenth of its own CPU in the
// collector, collecting a heap that dies with the process anyway. Until the
// live heap reaches LiveLimit, a collection waits for the heap to grow by
// StartPercent instead; from the first collection that finds it at or above
// that size the pace is Go's default again, for the rest of the process. So
// a large run (10,000 resources) keeps the peak memory it had: the heap
// goal while the pace is slow is at most (1 + StartPercent/100) × LiveLimit,
// well below such a run's peak.
//
// The engine is another process: it keeps its own pace (sponson never sets
// GOGC in the environment it inherits).
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

const (
	// StartPercent is the collector's GOGC while the live heap is small.
	StartPercent = 400
	// LiveLimit is the live heap, in bytes, from which the collector
	// keeps Go's default pace.
	LiveLimit = 16 << 20
	// defaultPercent is Go's default GOGC.
	defaultPercent = 100
)

func init() { Start(os.Getenv("GOGC")) }

// Start sets the slow pace unless env, the GOGC the user set, is not empty.
func Start(env string) {
	if env != "" {
		return
	}
	debug.SetGCPercent(StartPercent)
	watch()
}

// watch hears the end of the next collection: a cleanup of an object
// nothing refers to runs after the collection that finds it unreachable.
// It then either keeps the slow pace and waits for the next one, or, once
// the live heap is large, goes back to the default pace and stops.
func watch() {
	runtime.AddCleanup(new(sentinel), func(struct{}) {
		if live() >= LiveLimit {
			debug.SetGCPercent(defaultPercent)
			return
		}
		watch()
	}, struct{}{})
}

// sentinel is the object whose cleanup marks a collection's end. It holds
// a pointer so that the allocator gives it a block of its own (the tiny
// allocator packs pointer-free objects of under 16 bytes together, and such
// an object may live on with its neighbours).
type sentinel struct{ _ *byte }

// liveHeap is the runtime's measure of the heap the last collection found
// live.
const liveHeap = "/gc/heap/live:bytes"

// live is the live heap in bytes, as the last collection measured it.
func live() uint64 {
	s := []metrics.Sample{{Name: liveHeap}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return LiveLimit // unknown to this runtime: the default pace
	}
	return s[0].Value.Uint64()
}
