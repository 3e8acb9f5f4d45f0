package scoperun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// completions records, during the apply, every create the engine reports
// complete, in the run's checkpoint (the receipt under way), fenced like
// every receipt write. The engine persists its state only every ~20 s, so
// after a crash the state rarely holds what was just created; the
// checkpoint does, with the new object's id, and the next run adopts it
// (docs/design.md, "Crashes"). Writes are batched: the first completion is
// written at once; while a write is on its way, and for checkpointRest after
// it, completions gather for the next. So a fast apply costs a few writes,
// not one per resource (each write is three durable files), and a crash
// leaves at most the last rest's completions unrecorded: those are
// unresolved for a person, never forgotten.
type completions struct {
	write func(context.Context, *receipt.Receipt) error
	rec   *receipt.Receipt
	warn  func(string)

	mu      sync.Mutex
	pending []receipt.Completion
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
	failed  bool
}

// startCompletions starts the batching writer of rec's completions.
func startCompletions(ctx context.Context, rec *receipt.Receipt, write func(context.Context, *receipt.Receipt) error, warn func(string)) *completions {
	c := &completions{write: write, rec: rec, warn: warn,
		wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go c.loop(ctx)
	return c
}

// observe takes one engine event: completed creates (with the new
// object's id), updates, reads and deletes are recorded. Updates and reads
// are recorded for the creates that wait for them: while a change a create
// waits for has no completion, the create cannot have started
// (applyorder).
func (c *completions) observe(ev engine.Event) {
	if ev.Type != "apply_complete" {
		return
	}
	var done receipt.Completion
	switch ev.Action {
	case "delete", "update", "read":
		done = receipt.Completion{Address: ev.Address, Action: ev.Action}
	case "create", "replace":
		done = receipt.Completion{Address: ev.Address, ID: ev.IDValue, Action: "create"}
	default:
		return
	}
	c.mu.Lock()
	c.pending = append(c.pending, done)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// stop writes what is pending and ends the writer.
func (c *completions) stop() {
	close(c.done)
	<-c.stopped
}

// checkpointRest is the pause between two checkpoint writes: short next to
// a cloud create (seconds), long next to an instant one (a 200-resource
// apply of instant resources took 76 writes without it).
const checkpointRest = 200 * time.Millisecond

func (c *completions) loop(ctx context.Context) {
	defer close(c.stopped)
	rest := time.NewTimer(0)
	defer rest.Stop()
	for {
		select {
		case <-c.wake:
			c.flush(ctx)
		case <-c.done:
			c.flush(ctx)
			return
		}
		rest.Reset(checkpointRest)
		select {
		case <-rest.C:
		case <-c.done:
			c.flush(ctx)
			return
		}
	}
}

// flush writes the checkpoint with every completion so far. A refused write
// (the lease is lost) ends the recording: the held lease has noticed, and
// the run stops the engine.
func (c *completions) flush(ctx context.Context) {
	c.mu.Lock()
	batch := c.pending
	c.pending = nil
	c.mu.Unlock()
	if len(batch) == 0 || c.failed {
		return
	}
	c.rec.Completed = append(c.rec.Completed, batch...)
	if err := c.write(ctx, c.rec); err != nil {
		c.failed = true
		if !errors.Is(err, store.ErrLeaseLost) {
			c.warn(fmt.Sprintf("could not record completed creates in the checkpoint (%v); a crash now would leave them for a person to resolve", err))
		}
	}
}
