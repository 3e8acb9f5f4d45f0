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
	r := newRun(stacks, o)
	for {
		r.startReady(ctx)
		if r.running == 0 {
			return r.status
		}
		r.finish(<-r.finished)
	}
}

// run is one Run: the stacks in the order they start in, whom each waits
// for, and how far each has got. Only Run's goroutine touches it; the
// stacks' goroutines only send on finished.
type run struct {
	o        Options
	order    []*stackgraph.Stack
	waits    map[string][]string
	limit    int
	event    func(Event)
	status   map[string]Status
	finished chan done
	running  int
}

// done is a stack's goroutine reporting its end.
type done struct {
	s  *stackgraph.Stack
	ok bool
}

// running is the status of a stack that started and has not ended; Run
// returns only once none is left.
const running Status = "running"

func newRun(stacks []*stackgraph.Stack, o Options) *run {
	r := &run{
		o:        o,
		order:    slices.Clone(stacks),
		limit:    max(o.Parallelism, 1),
		event:    o.Event,
		status:   map[string]Status{},
		finished: make(chan done),
	}
	r.waits = waitsOf(r.order, o.Reverse)
	if o.Reverse {
		slices.Reverse(r.order)
	}
	if r.event == nil {
		r.event = func(Event) {}
	}
	return r
}

// waitsOf is, by directory, the stacks each stack waits for: those it
// needs, or in reverse those that need it. A need outside the set is no
// wait: that stack is not part of this run.
func waitsOf(stacks []*stackgraph.Stack, reverse bool) map[string][]string {
	in := map[string]bool{}
	for _, s := range stacks {
		in[s.Directory] = true
	}
	waits := map[string][]string{}
	for _, s := range stacks {
		for _, n := range s.Needs {
			switch {
			case !in[n]:
			case reverse:
				waits[n] = append(waits[n], s.Directory)
			default:
				waits[s.Directory] = append(waits[s.Directory], n)
			}
		}
	}
	return waits
}

// startReady skips what can no longer run and starts what can, in order,
// until a pass changes nothing: a skip can make a later stack's wait
// final, so one pass is not enough.
func (r *run) startReady(ctx context.Context) {
	for progress := true; progress; {
		progress = false
		for _, s := range r.order {
			if _, decided := r.status[s.Directory]; !decided && r.decide(ctx, s) {
				progress = true
			}
		}
	}
}

// decide skips s or starts it if it can, and says whether it did either.
// A failed or skipped stack it waits for skips it before an interrupted
// run does, so that the reason given is the more specific one.
func (r *run) decide(ctx context.Context, s *stackgraph.Stack) bool {
	ready, because := r.readiness(s)
	switch {
	case because != "":
		r.skip(s, "it waits for "+because)
	case ctx.Err() != nil:
		r.skip(s, "the run was interrupted")
	case ready && r.running < r.limit:
		r.status[s.Directory] = running
		r.running++
		r.event(Event{Stack: s, Started: true})
		go func() { r.finished <- done{s, r.o.Run(ctx, s)} }()
	default:
		return false
	}
	return true
}

// readiness says whether every stack s waits for succeeded, or, when one
// failed or was skipped, which (and s can never run).
func (r *run) readiness(s *stackgraph.Stack) (ready bool, because string) {
	ready = true
	for _, w := range r.waits[s.Directory] {
		switch r.status[w] {
		case Failed:
			return false, w + ", which failed"
		case Skipped:
			return false, w + ", which was skipped"
		case Succeeded:
		default:
			ready = false
		}
	}
	return ready, ""
}

// skip decides that s never starts, and says why.
func (r *run) skip(s *stackgraph.Stack, because string) {
	r.status[s.Directory] = Skipped
	r.event(Event{Stack: s, Status: Skipped, Because: because})
}

// finish records how a started stack ended.
func (r *run) finish(d done) {
	r.running--
	st := Failed
	if d.ok {
		st = Succeeded
	}
	r.status[d.s.Directory] = st
	r.event(Event{Stack: d.s, Status: st})
}
