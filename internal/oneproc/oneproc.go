// Package oneproc runs the sponson binary's goroutines on one processor,
// unless the user chose how many (GOMAXPROCS in the environment, which the
// Go runtime reads itself). The sponson command imports it for its side
// effect (docs/design.md §8, the paragraph on one processor).
//
// A run's own work is sequential: one engine command at a time, one plan
// read at a time, and each stack of `--all` and each agent's run is a
// process of its own (docs/design.md §4.7). Its goroutines mostly wait: on
// the engine's pipes, the state server's requests, the lease's timer. With
// a processor per core, each wake-up of one of them also woke an idle
// thread to look for other work, which cost more than the work: at 10,000
// resources, a 100-change apply took 17% less of sponson's own CPU on one
// processor (five pairs in turn, median ratio 0.83) and the same wall time
// (0.99). The engine is another process: it keeps every core.
//
// It is done in an init function of a package that imports only os and
// runtime, so that it runs among the first of the binary's 271 package
// initialisations: changing the number of processors stops the world and
// hands back what the processors given up had cached, which cost 1.3 ms
// once the dependencies' initialisations had run on them and costs 0.25 ms
// this early.
package oneproc

import (
	"os"
	"runtime"
)

func init() { oneProcessor(os.Getenv("GOMAXPROCS")) }

// oneProcessor sets one processor unless env, the GOMAXPROCS the user set,
// is not empty.
func oneProcessor(env string) {
	if env == "" {
		runtime.GOMAXPROCS(1)
	}
}
