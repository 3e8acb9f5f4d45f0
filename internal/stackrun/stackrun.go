// Package stackrun runs one command over a set of stacks in dependency order
// (docs/design.md §4.7 "Many stacks"): a stack starts once every stack it
// depends on succeeded, stacks without a dependency between them run at
// the same time up to a parallelism, and a failure stops the stacks that
// depend on the failed one, never the others. In reverse (destroy) a stack
// starts once every stack that depends on it succeeded.
//
// It decides only the order; running a stack is the caller's (the wrapper
// runs each as its own sponson process, with its own lease).
package stackrun

import (
	"context"
	"slices"

	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
)

// Status is how a stack's part of the run ended.
type Status string

// The statuses of a stack.
const (
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	// Skipped is a stack that did not start: a stack it waits for failed
	// or was skipped, or the run was interrupted.
	Skipped Status = "skipped"
)

// Event is one thing that happened to one stack.
type Event struct {
	Stack *stackgraph.Stack
	// Started is true when the stack starts; otherwise Status says how
	// it ended, and Because, for a skipped stack, why.
	Started bool
	Status  Status
	Because string
}

// Options configure Run.
type Options struct {
	// Reverse runs dependents first (destroy).
	Reverse bool
	// Parallelism is how many stacks run at once; below 1 means 1.
	Parallelism int
	// Run runs one stack and reports whether it succeeded. It is called
	// from several goroutines at once.
	Run func(ctx context.Context, s *stackgraph.Stack) bool
	// Event hears every event, from one goroutine at a time, in the order
	// they happen; nil hears none.
	Event func(Event)
}

// Run runs every stack of stacks (in the order of their set: by depth) and
// returns the status of each by directory. Once ctx is done no stack
// starts: the rest are skipped; those running are the caller's to stop
// (Run's ctx is theirs).
func Run(ctx context.Context, stacks []*stackgraph.Stack, o Options) map[string]Status {
	order := slices.Clone(stacks)
	in := map[string]bool{}
	for _, s := range order {
		in[s.Directory] = true
	}
	waits := map[string][]string{}
	for _, s := range order {
		for _, n := range s.Needs {
			if !in[n] {
				continue
			}
			if o.Reverse {
				waits[n] = append(waits[n], s.Directory)
			} else {
				waits[s.Directory] = append(waits[s.Directory], n)
			}
		}
	}
	if o.Reverse {
		slices.Reverse(order)
	}
	limit := max(o.Parallelism, 1)
	event := o.Event
	if event == nil {
		event = func(Event) {}
	}

	status := map[string]Status{}
	type done struct {
		s  *stackgraph.Stack
		ok bool
	}
	finished := make(chan done)
	running := 0
	for {
		// Skip what can no longer run, start what can, in order.
		progress := true
		for progress {
			progress = false
			for _, s := range order {
				if _, decided := status[s.Directory]; decided {
					continue
				}
				ready, because := true, ""
				for _, w := range waits[s.Directory] {
					switch status[w] {
					case Failed:
						because = w + ", which failed"
					case Skipped:
						because = w + ", which was skipped"
					case Succeeded:
					default:
						ready = false
					}
					if because != "" {
						break
					}
				}
				switch {
				case because != "":
					status[s.Directory] = Skipped
					event(Event{Stack: s, Status: Skipped, Because: "it waits for " + because})
					progress = true
				case ctx.Err() != nil:
					status[s.Directory] = Skipped
					event(Event{Stack: s, Status: Skipped, Because: "the run was interrupted"})
					progress = true
				case ready && running < limit:
					status[s.Directory] = "running"
					running++
					event(Event{Stack: s, Started: true})
					go func() { finished <- done{s, o.Run(ctx, s)} }()
					progress = true
				}
			}
		}
		if running == 0 {
			break
		}
		d := <-finished
		running--
		st := Failed
		if d.ok {
			st = Succeeded
		}
		status[d.s.Directory] = st
		event(Event{Stack: d.s, Status: st})
	}
	return status
}
