package main

import "runtime"

// oneProcessor runs the command's goroutines on one processor, unless the
// user chose how many (GOMAXPROCS in env, read by the Go runtime itself).
//
// A run's own work is sequential: one engine command at a time, one plan
// read at a time, and each stack of `--all` and each agent's run is a
// process of its own (docs/design.md §4.7). Its goroutines mostly wait: on
// the engine's pipes, the state server's requests, the lease's timer. With
// a processor per core, each wake-up of one of them also woke an idle
// thread to look for other work, which cost more than the work: at 10,000
// resources, a 100-change apply took 17% less of sponson's own CPU on one
// processor (five pairs in turn, median ratio 0.83) and the same wall time
// (0.99); docs/design.md §8. The engine is another process: it keeps every
// core.
func oneProcessor(env string) {
	if env == "" {
		runtime.GOMAXPROCS(1)
	}
}
