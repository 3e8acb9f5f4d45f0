package scoperun

import (
	"context"
	"fmt"
	"strings"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/failpoint"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/reaper"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// commitIntents is the seventh phase: it leases the parent objects the plan
// writes into, then writes the checkpoint, the receipt of a run under way
// that holds an intent for every create, under the intent lease when
// another scope's intents could race it. It returns the receipt that record
// completes.
func (r *runner) commitIntents(ctx, bg context.Context, eng *engineRun, ld *loaded, st *settled, c *checked) (*receipt.Receipt, error) {
	releaseParents, err := r.acquireParents(eng.ctx, c.rules, c.plan, eng.stop)
	if err != nil {
		return nil, err
	}
	r.onRelease(releaseParents)

	rec := r.newReceipt(ld, st, c.plan, c.planned, c.rules)
	rec.Settled = st.out
	rec.Policies = r.res.Policies
	// The engine is paused for the completions its creates wait for
	// (apply.go, pauseEngine) where its process can be found.
	rec.HeldCompletions = r.o.OpenEngine == nil && reaper.CanFind()
	r.res.Receipt = rec
	// The checkpoint: before the engine writes anything, the store knows a
	// run is under way and holds an intent for every create, so a crash
	// mid-apply never leaves a resource nobody knows may exist.
	written := false
	write := func(ctx context.Context) error {
		if err := r.held.WriteReceipt(ctx, rec); err != nil {
			return err
		}
		written = true
		return nil
	}
	if !ownership.NeedsIntentLease(c.planned) {
		if err := write(bg); err != nil {
			return nil, err
		}
		return rec, nil
	}
	// Another scope may be about to write an intent for the same object:
	// the check is made again, and the checkpoint written, under the
	// environment's intent lease, which orders the two (the intent race
	// rule, package ownership). A run refused there has written nothing.
	icfg := r.o.Lease
	icfg.About = r.holderInfo()
	warning, err := ownership.UnderIntentLease(bg, r.o.Store, r.key.Environment, "intents-"+strings.TrimPrefix(r.o.RunID, "run-"), icfg,
		func(context.Context) error {
			if err := r.schemesUnchanged(ctx); err != nil {
				return err
			}
			_, err := ownership.CheckForeign(ctx, r.o.Store, r.key, c.planned, foreignExcept(ld.handover))
			return err
		}, write)
	if warning != "" {
		r.warn(warning)
	}
	if err != nil && written && r.held.Err() == nil {
		// The intent lease was lost around the checkpoint: the order is
		// not proven, so the run ends failed with its intents dropped.
		rec.Status = receipt.StatusFailed
		rec.FinishedAt = time.Now().UTC()
		rec.Ledger = carried(st.prev)
		e := errcode.As(err)
		rec.Error = &receipt.Failure{Code: string(e.Code), Message: e.Message}
		r.res.Status = rec.Status
		if werr := r.held.WriteReceipt(bg, rec); werr != nil {
			return nil, werr
		}
	}
	if err != nil {
		if !written {
			r.res.Receipt = nil
		}
		return nil, err
	}
	return rec, nil
}

// acquireParents takes a lease on every parent object whose children the
// plan changes, in the order of their keys, so that two runs wanting the
// same parents never deadlock; it is called while the run holds only its own
// scope lease and never waits for a scope lease afterwards. Losing a parent
// lease stops the engine like losing the scope lease. The returned function
// releases them.
func (r *runner) acquireParents(ctx context.Context, rules ownership.Rules, plan *tfjson.Plan, stop context.CancelCauseFunc) (func(), error) {
	var held []*lease.Held
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			if w := held[i].Release(context.WithoutCancel(ctx)); w != "" {
				r.warn(w)
			}
		}
	}
	if failpoint.Disabled("parent-leases") {
		return release, nil
	}
	for _, u := range rules.UnresolvedParents(plan) {
		r.warn(fmt.Sprintf("the parent object of %s is not known until apply (%s): it cannot be leased, and concurrent writers of it may lose entries", u.Address, strings.Join(u.Unknown, ", ")))
	}
	for _, p := range rules.ParentsOf(plan) {
		key := store.Key{Environment: r.key.Environment, Scope: ownership.ParentLeaseScope(p.Key)}
		cfg := r.o.Lease
		cfg.About = r.holderInfo()
		cfg.OnWait = func(l store.LeaseInfo) {
			r.info(fmt.Sprintf("waiting for the lease of parent object %s: held by %s", p.Name, lease.Describe(l)))
		}
		// The run's own id as holder: a sponson_lease of the same object in
		// this run's configuration joins this lease instead of waiting for
		// it.
		h, err := lease.Acquire(ctx, r.o.Store, key, r.o.RunID, cfg)
		if err != nil {
			release()
			if e := errcode.As(err); e.Code == errcode.LockHeld || e.Code == errcode.WaitTimeout {
				e.Message = fmt.Sprintf("parent object %s (written by %s): %s", p.Name, strings.Join(p.Children, ", "), e.Message)
				return func() {}, e.With("parent", p.Name)
			}
			return func() {}, err
		}
		held = append(held, h)
		go func() {
			select {
			case <-h.Lost():
				stop(errcode.As(h.Err()).With("parent", p.Name))
			case <-ctx.Done():
			}
		}()
	}
	return release, nil
}
