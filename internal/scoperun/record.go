package scoperun

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// record is the ninth phase: the receipt rec the checkpoint wrote is
// completed from the state the engine left (the ledger), the outcome and
// the late identity check, and written. It returns the run's error: the
// engine's, else an unreadable state; a late identity hit of an apply that
// otherwise succeeded comes back as lateErr, for after the handover. The
// ledger is built against st.prev, with the entries settle left
// unresolved.
func (r *runner) record(ctx, bg context.Context, eng *engineRun, ld *loaded, st *settled, c *checked, rec *receipt.Receipt, applyErr error) (lateErr, err error) {
	prev := st.prev
	// Without the state the checkpoint's ledger stays, intents included,
	// for the next run to settle.
	resources, readErr := r.currentState(bg, eng)
	if readErr == nil {
		var notes []string
		rec.Ledger, notes = ownership.Ledger(prev, resources, c.policy, append(slices.Clone(c.planned), ownership.Moves(c.plan)...))
		for _, n := range notes {
			r.warn(n)
		}
		rec.Ledger = r.keepUnaccounted(rec.Ledger, c, resources, st.unresolved)
		rec.Settled = rewritten(rec.Settled, c, resources)
		for _, s := range rec.Settled {
			if s.Outcome == receipt.SettledRewritten && s.Rerun != "" {
				r.warn(s.Rerun)
			}
		}
		rec.Ledger = r.keepStale(rec.Ledger, c, rec, resources, applyErr)
		rec.Released = append(rec.Released, r.released(prev, c, resources)...)
	}
	if r.o.Command == Destroy && len(st.unresolved) > 0 {
		var addrs []string
		for _, e := range st.unresolved {
			addrs = append(addrs, e.Address)
		}
		r.warn(fmt.Sprintf("the destroy cannot vouch for %d objects a killed run may have created (%s): they may still exist; find them, delete them by hand or adopt them (`sponson resolve --help`); the scope keeps listing them", len(addrs), strings.Join(addrs, ", ")))
	}
	rec.FinishedAt = time.Now().UTC()
	var engineErr error
	if applyErr != nil {
		engineErr = r.engineErr(ctx, applyErr)
	}
	r.outcome(rec, c, engineErr, readErr)
	// Creates whose identity was unknown at plan time are checked now that
	// it is known: the object exists already, so a hit is reported loudly
	// (the run fails) instead of being refused.
	lateHit, lookupErr := ownership.CheckLate(bg, r.o.Store, r.key, c.planned, rec.Ledger, foreignExcept(ld.handover))
	if lookupErr != nil {
		r.warn(fmt.Sprintf("could not check the identities learned during the apply: %v", lookupErr))
	}
	if lateHit != nil && rec.Error == nil {
		rec.Status = receipt.StatusFailed
		e := errcode.As(lateHit)
		rec.Error = &receipt.Failure{Code: string(e.Code), Message: e.Message}
	}
	r.res.Status = rec.Status
	if err := r.held.WriteReceipt(bg, rec); err != nil {
		return nil, err
	}
	switch {
	case engineErr != nil:
		return nil, engineErr
	case readErr != nil:
		return nil, errcode.Wrap(errcode.Internal, readErr, "reading the state after the apply")
	}
	return lateHit, nil
}

// outcome sets the receipt's status and error: a failure of the engine or
// of reading the state, else what the run did.
func (r *runner) outcome(rec *receipt.Receipt, c *checked, engineErr, readErr error) {
	switch {
	case engineErr != nil:
		rec.Status = receipt.StatusFailed
		e := errcode.As(engineErr)
		if e.Code == errcode.Interrupted {
			rec.Status = receipt.StatusCancelled
		}
		rec.Error = &receipt.Failure{Code: string(e.Code), Message: e.Message}
	case readErr != nil:
		rec.Status = receipt.StatusFailed
		rec.Error = &receipt.Failure{Code: string(errcode.Internal), Message: readErr.Error()}
	case r.o.Command == Destroy && (!r.o.EngineFlags.Partial() || len(rec.Ledger) == 0):
		// A targeted destroy leaves the scope owning the rest.
		rec.Status = receipt.StatusDestroyed
	case c.changed:
		rec.Status = receipt.StatusApplied
	default:
		rec.Status = receipt.StatusUnchanged
	}
}

// keepUnaccounted adds to a ledger built from the state what the state
// cannot vouch for: the entries settle left unresolved (unresolved), and, when the
// engine could not persist its state (it was quarantined), the intents of
// creates the state lacks, which the next run settles against the
// quarantined state and the completions of the checkpoint.
func (r *runner) keepUnaccounted(ledger []receipt.Entry, c *checked, resources []stateResource, unresolved []receipt.Entry) []receipt.Entry {
	inState := map[string]bool{}
	idAt := map[string]string{}
	for _, res := range resources {
		inState[res.Address] = true
		idAt[res.Address] = res.ID
	}
	for i, e := range ledger {
		if _, rewritten := c.rewrites[e.Address]; rewritten && e.CreatedBy == receipt.CreatedByUnresolved {
			// Built from the state, it took how it came to be owned from
			// the unresolved entry of its identity: this run created it.
			ledger[i].CreatedBy = receipt.CreatedBySponson
		}
	}
	for _, e := range unresolved {
		// An unresolved entry stays until the object it stands for is
		// accounted for: by its id, not by whatever is at its address;
		// or, for a type written where its arguments say, by this run's
		// create of it at the same place (c.rewrites).
		if _, rewritten := c.rewrites[e.Address]; rewritten && inState[e.Address] {
			continue
		}
		if e.ID == "" || idAt[e.Address] != e.ID {
			ledger = append(ledger, e)
		}
	}
	if r.res.Quarantined {
		for _, e := range ownership.Intents(c.planned) {
			if !inState[e.Address] {
				ledger = append(ledger, e)
			}
		}
	}
	return ledger
}

// keepStale keeps, after an apply the engine did not finish, the intents
// of the creates the state lacks but the engine may have made: those whose
// completion the checkpoint recorded (the engine ended without writing
// them to the state: it crashed, or was killed), and, when the engine
// itself was killed by a signal (an OOM kill) or stopped at once by a
// second interrupt (hurryOnSecondSignal), every one. The next run
// settles them (§2.4): adopted by the recorded id, or dropped, or
// unresolved. Quarantine is keepUnaccounted's.
func (r *runner) keepStale(ledger []receipt.Entry, c *checked, rec *receipt.Receipt, resources []stateResource, applyErr error) []receipt.Entry {
	if applyErr == nil || r.res.Quarantined {
		return ledger
	}
	inState := map[string]bool{}
	for _, res := range resources {
		inState[res.Address] = true
	}
	for _, e := range ledger {
		inState[e.Address] = inState[e.Address] || isOpen(e)
	}
	completed := map[string]bool{}
	for _, done := range rec.Completed {
		if done.Action != "delete" && done.ID != "" {
			completed[done.Address] = true
		}
	}
	var exit *exec.ExitError
	killed := errors.As(applyErr, &exit) && exit.ProcessState != nil && !exit.Exited()
	r.mu.Lock()
	killed = killed || r.hurried
	r.mu.Unlock()
	for _, e := range intents(c.plan, c.planned, c.rules) {
		if !inState[e.Address] && (completed[e.Address] || killed) {
			ledger = append(ledger, e)
		}
	}
	return ledger
}

// released lists the objects the plan forgot (a `removed` block with
// destroy = false) that the state no longer holds: they still exist, and no
// scope owns them any more, so no scope's destroy will ever delete them.
// That is what the user asked for, but it must never happen silently.
func (r *runner) released(prev *receipt.Receipt, c *checked, resources []stateResource) []receipt.Entry {
	if prev == nil || c.plan == nil {
		return nil
	}
	inState := map[string]bool{}
	for _, res := range resources {
		inState[res.Address] = true
	}
	forgotten := map[string]bool{}
	for _, rc := range c.plan.ResourceChanges {
		if rc.Change != nil && rc.Change.Actions.Forget() && !inState[rc.Address] {
			forgotten[rc.Address] = true
		}
	}
	var out []receipt.Entry
	for _, e := range prev.Ledger {
		if forgotten[e.Address] && !isOpen(e) {
			out = append(out, e)
			r.warn(fmt.Sprintf("%s (id %s) is released: a removed block took it out of the state without destroying it, so no scope owns it any more and no scope's destroy will delete it", e.Address, e.ID))
		}
	}
	return out
}

// rewritten is settled with the unresolved entries this run created again
// at the same place (c.rewrites), which the state now holds, settled as
// rewritten (docs/design.md §2.4).
func rewritten(settled []receipt.Settlement, c *checked, resources []stateResource) []receipt.Settlement {
	if len(c.rewrites) == 0 {
		return settled
	}
	idAt := map[string]string{}
	for _, res := range resources {
		idAt[res.Address] = res.ID
	}
	out := slices.Clone(settled)
	for addr, e := range c.rewrites {
		id, ok := idAt[addr]
		if !ok {
			continue
		}
		st := receipt.Settlement{Address: addr, Outcome: receipt.SettledRewritten, ID: id,
			Note: "created again at the same place by this run, which wrote the object the stopped run may have made"}
		if keys := ownership.InPlace(e.Provider, e.Type); len(keys) > 0 {
			place := make([]string, len(keys))
			for i, k := range keys {
				place[i] = fmt.Sprintf("%s=%q", k, e.Planned[k])
			}
			st.Note = fmt.Sprintf("created again at the same place (%s) by this run, which wrote the object the stopped run may have made", strings.Join(place, ", "))
			st.Rerun = fmt.Sprintf("%s was written again in place (%s): what the stopped run may have written there was replaced, and the engine does not track it", addr, strings.Join(place, ", "))
		} else {
			st.Rerun = fmt.Sprintf("%s was written again in place: what the stopped run may have written there was replaced, and the engine does not track it", addr)
		}
		i := slices.IndexFunc(out, func(s receipt.Settlement) bool { return s.Address == addr })
		if i < 0 {
			out = append(out, st)
			continue
		}
		st.FromRun = out[i].FromRun
		out[i] = st
	}
	return out
}
