package scoperun

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/reaper"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// apply is the eighth phase: the engine applies the saved plan, if it
// changes anything. applyErr is the engine's failure, which record writes
// down; lost is set when the run lost its lease, and then nothing more may
// be written: the run that took over is authoritative, and the lost run's
// receipt stays as its checkpoint.
func (r *runner) apply(bg context.Context, eng *engineRun, c *checked, rec *receipt.Receipt) (applyErr, lost error) {
	if c.changed {
		applyErr = r.applyRecording(bg, eng, c, rec)
	}
	if applyErr != nil {
		r.quarantineErrored(bg)
	}
	if lost = r.held.Err(); lost != nil {
		r.res.Status = receipt.StatusFailed
	}
	return applyErr, lost
}

// applyRecording applies the plan while the checkpoint records each
// completed create. A plan that creates nothing has no intent for a
// completion to settle (§2.4): the checkpoint is not written again during
// its apply, which at 10,000 resources is a receipt of megabytes per write
// (issue 31 item 3).
func (r *runner) applyRecording(bg context.Context, eng *engineRun, c *checked, rec *receipt.Receipt) error {
	r.mu.Lock()
	r.engineProcs = nil
	r.mu.Unlock()
	if createsAny(c.planned) {
		cs := startCompletions(bg, rec, r.writeJournal(rec.RunID), r.warn, r.pauseEngine)
		// The engine's stream says where each of its reads ends
		// (onEngineReadEnd): what it reported together is written together.
		cs.byRead = true
		r.setCompletions(cs)
		defer r.setCompletions(nil)
	}
	defer r.section("apply", "engine apply")()
	stopHurry := r.hurryOnSecondSignal(eng.ctx)
	defer stopHurry()
	var err error
	if c.early != nil {
		err = c.early.run()
	} else {
		err = eng.sess.Apply(eng.ctx, c.path)
	}
	if err == nil {
		r.progress(Progress{Step: StepApplied})
	}
	return err
}

// hurryOnSecondSignal passes on to the engine, once ctx is done (the first
// SIGINT or SIGTERM cancelled the run, and terraform-exec interrupted the
// engine), every further SIGINT or SIGTERM the process receives, as a
// SIGINT: the engine's second interrupt stops it at once, without waiting
// for its operations in flight, as it does without sponson. The run then
// keeps the intents of every create the state lacks (keepStale): the
// engine did not wait to learn their outcome.
func (r *runner) hurryOnSecondSignal(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sigs)
		for {
			select {
			case <-sigs:
				r.mu.Lock()
				r.hurried = true
				r.mu.Unlock()
				for _, pid := range r.enginePIDs() {
					_ = syscall.Kill(pid, syscall.SIGINT)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// pauseEngine stops the run's engine process (SIGSTOP; its plugins and
// provisioners go on with what they were doing, but the engine starts
// nothing new) and returns the function that lets it go on. The process is
// looked up once, at the engine's first event, so that a pause costs one
// signal (the engine goes on between writing a completion and being
// stopped: the pause must come at once). Where it cannot be found (no
// /proc, an engine stand-in) nothing is paused.
func (r *runner) pauseEngine() func() {
	pids := r.enginePIDs()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	return func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// enginePIDs returns the engine's processes, looked up on the first call
// of each apply.
func (r *runner) enginePIDs() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.engineProcs == nil {
		r.engineProcs = reaper.Children(r.o.RunID)
		if r.engineProcs == nil {
			r.engineProcs = []int{}
		}
	}
	return r.engineProcs
}

// setCompletions installs the recorder of completed creates (nil stops the
// current one, after writing what it still holds).
func (r *runner) setCompletions(c *completions) {
	r.mu.Lock()
	old := r.completions
	r.completions = c
	r.mu.Unlock()
	if old != nil {
		old.stop()
	}
}

// onEngineEvent is the engine's report of one resource event.
func (r *runner) onEngineEvent(ev engine.Event) {
	if p, ok := engineProgress(ev); ok {
		r.progress(p)
	}
	r.mu.Lock()
	c := r.completions
	r.mu.Unlock()
	if c != nil {
		r.enginePIDs()
		c.observe(ev)
	}
}

// onEngineReadEnd is the end of one read of the engine's output.
func (r *runner) onEngineReadEnd() {
	r.mu.Lock()
	c := r.completions
	r.mu.Unlock()
	if c != nil {
		c.readEnd()
	}
}

// quarantineErrored moves the errored.tfstate an engine leaves in the
// configuration directory when a state write was refused (measured with
// OpenTofu 1.12: it writes the whole new state there, sensitive values
// included) into the store, so it never stays among the user's files.
func (r *runner) quarantineErrored(ctx context.Context) {
	p := filepath.Join(r.o.Dir, "errored.tfstate")
	fi, err := os.Stat(p)
	if err != nil || fi.ModTime().Before(r.started.Add(-time.Second)) {
		return
	}
	data, err := os.ReadFile(p)
	if err != nil {
		r.warn(fmt.Sprintf("the engine left %s and it could not be read: %v; remove it by hand, it may hold sensitive values", p, err))
		return
	}
	if err := r.o.Store.Quarantine(ctx, r.key, r.o.RunID, data); err != nil {
		r.warn(fmt.Sprintf("the engine left %s and it could not be quarantined in the store (%v); it stays there", p, err))
		return
	}
	os.Remove(p)
	r.res.Quarantined = true
	r.warn(fmt.Sprintf("the engine could not persist its state; the state it had is quarantined in the store as %s of %s, not left in %s", r.o.RunID, r.key, r.o.Dir))
}

// createsAny reports whether a plan creates (or replaces) anything.
func createsAny(planned []ownership.Planned) bool {
	for _, p := range planned {
		if p.Creates() {
			return true
		}
	}
	return false
}

// writeJournal returns the write of run runID's journal of completions
// (receipt.Journal), fenced by the run's lease.
func (r *runner) writeJournal(runID string) func(context.Context, []receipt.Completion) error {
	return func(ctx context.Context, done []receipt.Completion) error {
		data, err := receipt.MarshalJournal(runID, done)
		if err != nil {
			return err
		}
		return r.held.WriteRecord(ctx, store.JournalRecord, data)
	}
}
