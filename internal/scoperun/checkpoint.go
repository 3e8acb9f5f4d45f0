package scoperun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// completions records, during the apply, every change the engine reports
// complete, in the journal of the run's checkpoint (receipt.Journal, the
// store's JournalRecord), fenced like every write of the run. The engine
// persists its state only every ~20 s, so after a crash the state rarely
// holds what was just created; the journal does, with the new object's
// id, and the next run adopts it (docs/design.md §2.4 "Intent"). A write
// carries the run's completions so far, not the checkpoint's ledger: its
// size follows the run's changes, not the scope's state. Writes are batched: a completion that
// finds the writer idle is written with those of the same read of the
// engine's output and those reported within the gather (an eighth of a
// write, at most checkpointGather); while a write is on its way, and for
// checkpointRest after it, completions gather for the next. So a fast apply costs a few
// writes, not one per resource.
//
// A completion that a planned create waits for (an intent's After, or the
// delete of a delete-then-create replacement) is held: the engine is paused
// (hold) and the reader of its output waits, from the moment the completion
// is read until a write holding it is in the store, without the rest. So
// the engine does not start a dependent of a completion the checkpoint
// lacks, but for the moment between writing the completion and being
// paused (docs/design.md §2.4). That is what makes a missing completion
// prove that its dependents had not started, and it keeps a completion
// from being lost while the engine goes on past it. A kill leaves at most
// the completions of the write on its way unrecorded.
//
// A completed create whose loss would need a person (a type that keeps an
// object outside the state and is not written in place: pressing, from the
// intents) does not wait for the rest either: it goes into the next write
// as soon as the one on its way lands, so it is unrecorded for at most two
// writes, not two writes and the rest. The rest still batches the instant
// creates of state-only types (terraform_data, random_*), which a lost
// completion costs nothing.
type completions struct {
	// write stores the journal: the run's completions so far, all of
	// rec's (a checkpoint's own list starts empty; receipt.Joined skips
	// any it held already).
	write func(context.Context, []receipt.Completion) error
	rec   *receipt.Receipt
	warn  func(string)
	// hold pauses the engine and returns the function that lets it go on;
	// nil never pauses. waitedFor are the addresses a planned create
	// waits for.
	hold      func() (resume func())
	waitedFor map[string]bool
	// deleteFirst are the addresses replaced by a delete, then a create:
	// the delete's completion is held.
	deleteFirst map[string]bool
	// pressing are the creates whose completion cuts the rest short; rest
	// is the shortest pause between two writes (checkpointRest), wrote
	// how long the last write took (restAfter).
	pressing map[string]bool
	rest     time.Duration
	wrote    time.Duration
	// gather is how long a write begun from idle waits for completions
	// reported just after the one that woke it (checkpointGather).
	gather time.Duration

	mu      sync.Mutex
	pending []receipt.Completion
	// held counts the pending completions the engine is paused for;
	// resume is set while it is paused, and resumed is closed when it
	// goes on.
	held    int
	resume  func()
	resumed chan struct{}
	wake    chan struct{}
	urgent  chan struct{}
	done    chan struct{}
	stopped chan struct{}
	failed  bool
	// byRead defers waking the writer for a completion that is not held
	// to the end of the read it came in (readEnd); unread and
	// unreadPressing say what that read observed.
	byRead         bool
	unread         bool
	unreadPressing bool
	// starting is the action of each address the engine started and has
	// not yet reported provisioning for (provisioning).
	starting map[string]string
}

// startCompletions starts the batching writer of rec's completions; hold
// (nil: never) pauses the engine for a completion a create waits for.
func startCompletions(ctx context.Context, rec *receipt.Receipt, write func(context.Context, []receipt.Completion) error, warn func(string), hold func() func()) *completions {
	c := &completions{write: write, rec: rec, warn: warn, hold: hold, waitedFor: map[string]bool{}, deleteFirst: map[string]bool{}, starting: map[string]string{},
		pressing: map[string]bool{}, rest: checkpointRest, gather: checkpointGather,
		wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	for _, e := range rec.Ledger {
		if isIntent(e) {
			for _, w := range e.After {
				c.waitedFor[w] = true
			}
			c.pressing[e.Address] = !e.StateOnly && len(ownership.InPlace(e.Provider, e.Type)) == 0
		}
	}
	for _, ch := range rec.Changes {
		if slices.Equal(ch.Actions, []string{"delete", "create"}) {
			// Its create waits for its own delete.
			c.deleteFirst[ch.Address] = true
		}
	}
	go c.loop(ctx)
	return c
}

// observe takes one engine event: completed creates (with the new
// object's id), updates, reads and deletes are recorded. Updates and reads
// are recorded for the creates that wait for them: while a change a create
// waits for has no completion, the create cannot have started
// (applyorder).
func (c *completions) observe(ev engine.Event) {
	if ev.Type == "apply_start" || ev.Type == "provision_start" {
		c.provisioning(ev)
		return
	}
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
	var resumed chan struct{}
	c.mu.Lock()
	c.pending = append(c.pending, done)
	waited := c.waitedFor[done.Address]
	if done.Action == "delete" {
		waited = c.deleteFirst[done.Address]
	}
	if c.hold != nil && !c.failed && waited {
		// Paused here, in the reader of the engine's output, the moment
		// the completion is read.
		if c.resume == nil {
			c.resume, c.resumed = c.hold(), make(chan struct{})
		}
		c.held++
		resumed = c.resumed
	}
	pressing := done.Action == "create" && c.pressing[done.Address]
	if c.byRead && resumed == nil {
		// The writer is woken at the end of the read (readEnd), with
		// everything the engine reported together.
		c.unread = true
		c.unreadPressing = c.unreadPressing || pressing
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	notify(c.wake)
	if pressing && resumed == nil {
		notify(c.urgent)
	}
	if resumed != nil {
		notify(c.urgent)
		// The reader waits too: nothing the engine reports after the
		// completion is shown or acted on before the completion is in
		// the store.
		<-resumed
	}
}

// provisioning records that a create's provisioners started (action
// "provision"), once per create: a settlement that creates it again says
// that they run again (docs/design.md §2.4). The engine reports a
// create's apply_start, then its provisioners, then its completion; a
// provisioner after a delete's start is a destroy-time one. It is batched
// like a state-only completion: nothing waits for it, and a kill that
// loses it leaves "may have started", which the settlement says too.
func (c *completions) provisioning(ev engine.Event) {
	c.mu.Lock()
	if ev.Type == "apply_start" {
		c.starting[ev.Address] = ev.Action
		c.mu.Unlock()
		return
	}
	act, ok := c.starting[ev.Address]
	delete(c.starting, ev.Address)
	if !ok || (act != "create" && act != "replace") {
		c.mu.Unlock()
		return
	}
	c.pending = append(c.pending, receipt.Completion{Address: ev.Address, Action: "provision"})
	if c.byRead {
		c.unread = true
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	notify(c.wake)
}

// readEnd is the end of one read of the engine's output (OnReadEnd): the
// completions observed since the last one are all the engine had written
// when sponson read, and go to the writer together. Without it, the writer
// woke at the first of four creates reported in the same instant, and the
// other three waited for that write to land before their own: a kill
// during the first write lost all four (docs/design.md §2.4).
func (c *completions) readEnd() {
	c.mu.Lock()
	unread, pressing := c.unread, c.unreadPressing
	c.unread, c.unreadPressing = false, false
	c.mu.Unlock()
	if unread {
		notify(c.wake)
	}
	if pressing {
		notify(c.urgent)
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func drain(ch chan struct{}) {
	select {
	case <-ch:
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
// apply of instant resources took 76 writes without it). A held completion
// does not wait for it.
const checkpointRest = 200 * time.Millisecond

// restPerWrite is how many times its own duration a write is followed
// by a rest, when that is longer than checkpointRest. When each write
// carried the whole receipt, a write at 1,000 instant creates took tens of
// milliseconds, and the 200 ms rest alone let 20 writes of 600 KB through;
// in proportion they were fewer, how many following the apply's length
// (BENCHMARKS.md, "Measurements behind the design", gives the counts for docs/design.md §2.4). The journal made writes small;
// the rule still bounds a slow store's: writes that nothing cuts short
// take at most a ninth of the apply. What waits
// for the rest are completions whose loss needs no person (creates of
// state-only types or of types written in place, updates and deletes no
// create waits for); held and pressing completions cut it short as before.
const restPerWrite = 8

func restAfter(floor, wrote time.Duration) time.Duration { return max(floor, restPerWrite*wrote) }

// checkpointGather bounds the gather: a write begun from idle waits an
// eighth of the last write's time, at most checkpointGather (before the
// first write, which nothing measured yet), for completions reported just
// after the one that woke it. Creates started together complete together,
// a few milliseconds apart, each in its own read of the engine's output;
// without the gather the first went alone and the others waited for its
// write to land before their own began, two writes in all (issue 25: on
// the git store, two pushes). A held completion does not wait for it: the
// engine is paused, nothing more is coming.
const checkpointGather = 10 * time.Millisecond

func gatherFor(write time.Duration) time.Duration { return min(write/8, checkpointGather) }

func (c *completions) loop(ctx context.Context) {
	defer close(c.stopped)
	defer c.release(true)
	rest := time.NewTimer(0)
	defer rest.Stop()
	for {
		select {
		case <-c.wake:
			if !c.gathered(ctx) {
				c.flush(ctx)
				return
			}
			// What cut a rest short is in this write.
			drain(c.urgent)
			c.flush(ctx)
		case <-c.done:
			c.flush(ctx)
			return
		}
		if c.isHeld() {
			// A held completion came during the write: no rest.
			continue
		}
		c.mu.Lock()
		d := restAfter(c.rest, c.wrote)
		c.mu.Unlock()
		rest.Reset(d)
		select {
		case <-rest.C:
		case <-c.urgent:
		case <-c.done:
			c.flush(ctx)
			return
		}
	}
}

// gathered waits the gather after a wake from idle, until a held
// completion comes or the gather ends; false when the writer is stopped
// meanwhile.
func (c *completions) gathered(ctx context.Context) bool {
	c.mu.Lock()
	d := c.gather
	c.mu.Unlock()
	if d <= 0 || c.isHeld() {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-c.urgent:
			if c.isHeld() {
				return true
			}
			// A pressing completion: it gathers with the others.
		case <-c.done:
			return false
		case <-ctx.Done():
			return true
		}
	}
}

func (c *completions) isHeld() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held > 0
}

// release lets the engine go on once no held completion is pending (or
// always, when all is true).
func (c *completions) release(all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume != nil && (all || c.held == 0) {
		c.resume()
		close(c.resumed)
		c.resume, c.resumed = nil, nil
	}
}

// flush writes the journal with every completion so far. A refused write
// (the lease is lost) ends the recording: the held lease has noticed, and
// the run stops the engine.
func (c *completions) flush(ctx context.Context) {
	c.mu.Lock()
	batch := c.pending
	c.pending, c.held = nil, 0
	failed := c.failed
	c.mu.Unlock()
	if len(batch) == 0 || failed {
		c.release(true)
		return
	}
	c.rec.Completed = append(c.rec.Completed, batch...)
	began := time.Now()
	err := c.write(ctx, c.rec.Completed)
	if err == nil {
		c.mu.Lock()
		c.wrote = time.Since(began)
		c.gather = gatherFor(c.wrote)
		c.mu.Unlock()
	}
	if err != nil {
		c.mu.Lock()
		c.failed = true
		c.mu.Unlock()
		c.release(true)
		if !errors.Is(err, store.ErrLeaseLost) {
			c.warn(fmt.Sprintf("could not record completed creates in the checkpoint's journal (%v); a crash now would leave them for a person to resolve", err))
		}
		return
	}
	c.release(false)
}
