package scoperun

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/statesrv"
)

// EarlyApplier is an engine that can start an apply before the run has
// decided to apply (engine.Session.StartApply).
type EarlyApplier interface {
	StartApply(ctx context.Context, plan string) (*engine.PendingApply, error)
}

// earlyApply is an apply started as soon as the plan is written, while the
// run still reads the plan as JSON, checks it and records its intents
// (docs/design.md §8, the early apply): the engine's start, 100 to
// 150 ms of its own, overlaps that work instead of following it. The state
// server holds the engine's requests (statesrv.Gate) until the run takes
// the apply (run); until then the engine cannot lock, read or write the
// state, which an apply does before anything else, so it cannot start a
// change either.
type earlyApply struct {
	pending *engine.PendingApply
	gate    *statesrv.Gate
	taken   bool
}

// startApplyEarly starts the apply of c's plan behind the state server's
// gate, in an apply whose plan changes something and whose state the run
// serves (a configuration with its own backend has no gate: its apply
// starts when the checks are done). A run that never takes it (a refused
// plan, an error, an interrupt) stops it at release.
func (r *runner) startApplyEarly(eng *engineRun, c *checked) {
	ea, ok := eng.sess.(EarlyApplier)
	if !ok || !c.changed || r.o.Command == Plan || r.o.Saved != nil || eng.states == nil || r.held == nil {
		return
	}
	gate := eng.states.Hold()
	p, err := ea.StartApply(eng.ctx, c.path)
	if err != nil {
		// The apply starts when the checks are done, as without an early
		// start; nothing waits at the gate.
		gate.Open()
		return
	}
	e := &earlyApply{pending: p, gate: gate}
	c.early = e
	r.onRelease(e.stop)
}

// run lets the engine go on and waits for the end of its apply.
func (e *earlyApply) run() error {
	e.taken = true
	e.pending.Release()
	e.gate.Open()
	return e.pending.Wait()
}

// stop ends an apply the run did not take: every request of the engine is
// refused as a lock held by another, so it ends without touching the
// state, and its output is dropped.
func (e *earlyApply) stop() {
	if e.taken {
		return
	}
	e.gate.Shut()
	e.pending.Discard()
	_ = e.pending.Wait()
}
