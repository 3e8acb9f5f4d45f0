// Command sponson is the Sponson CLI. The same binary is also the provider:
// under the wrapper it serves the provider from its own process
// (docs/design.md §7.2), so the wrapper and the provider are always the same
// build; started by an engine as terraform-provider-sponson (installed from
// a mirror `sponson provider mirror` wrote), it serves the provider alone.
//
// Profiles (docs/design.md §8): SPONSON_CPUPROFILE=FILE writes a CPU profile
// of the whole command; SPONSON_RUSAGE=FILE writes sponson's own CPU and
// peak memory apart from its children's (rusage.go), which
// BenchmarkScaleTenThousand compares with the engine's. On virtual machines
// the CPU profile misses much of the time; `perf record -g` read with
// `perf report --comm sponson` accounts for it. Tests and benchmarks build
// the binary as the release does (no cgo, -trimpath, -s -w).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	// The collector's slow pace while the heap is small, for every mode of
	// the binary (package gcpace).
	_ "github.com/sponson/terraform-provider-sponson/internal/gcpace"
	// One processor for every mode of the binary, set before the other
	// packages initialise (package oneproc).
	_ "github.com/sponson/terraform-provider-sponson/internal/oneproc"
	"github.com/sponson/terraform-provider-sponson/internal/reaper"
	"github.com/sponson/terraform-provider-sponson/internal/secrets"
	"github.com/sponson/terraform-provider-sponson/internal/version"
	"github.com/sponson/terraform-provider-sponson/provider"
	"github.com/sponson/terraform-provider-sponson/wrapper"
)

func main() {
	if strings.HasPrefix(filepath.Base(os.Args[0]), engine.ProviderBinaryPrefix) {
		if err := provider.Serve(context.Background(), version.Version, false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == reaper.Command {
		// The watcher a run starts to end its engine's children if the run
		// dies (package reaper); not a command for people.
		if err := reaper.Main(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	// The keys leave the process environment before anything runs: no
	// process sponson starts can read them (package secrets).
	secrets.Handover()
	stop := profile(os.Getenv("SPONSON_CPUPROFILE"))
	code := wrapper.Main()
	stop()
	reportUsage(os.Getenv("SPONSON_RUSAGE"))
	os.Exit(int(code))
}

// profile writes a CPU profile of the whole command to path (for `go tool
// pprof`; the profiles behind docs/design.md §8 were taken this way), or does
// nothing when path is empty.
func profile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		// A run spends milliseconds of its own CPU: sample at 1 kHz, not
		// the default 100 Hz (the runtime then notes once on stderr that
		// the rate was already set).
		runtime.SetCPUProfileRate(1000)
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: SPONSON_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
