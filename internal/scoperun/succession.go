package scoperun

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/failpoint"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/succession"
)

// handover is the successor's side of a succession in progress.
type handover struct {
	pred     store.Key
	held     *lease.Held
	promised *receipt.Receipt // the predecessor's receipt carrying the promise
	// done: the predecessor is superseded already; this run only closes the
	// handover on its own receipt.
	done bool
}

// finishPending completes, in a run of a predecessor scope, a handover an
// earlier successor run promised but did not finish: the promised resources
// are the successor's, so they leave this scope's state and ledger before
// the run does anything else. It returns the scope's receipt afterwards.
func (r *runner) finishPending(ctx context.Context, prev *receipt.Receipt) (*receipt.Receipt, error) {
	if prev == nil || prev.Handover == nil || r.ownBackend {
		return prev, nil
	}
	to := prev.Handover.To
	done, err := r.finishPredecessor(ctx, r.held, prev)
	if err != nil {
		return nil, err
	}
	r.warn(fmt.Sprintf("finished the handover of %d resources to %s, which its run %s had promised", len(prev.Ledger), to, prev.Handover.RunID))
	return done, nil
}

// finishPredecessor performs steps 4 and 5 of the handover on the
// predecessor, under its lease h: empty its state, then rewrite its receipt
// without the handed-over resources and with supersededBy.
func (r *runner) finishPredecessor(ctx context.Context, h *lease.Held, promised *receipt.Receipt) (*receipt.Receipt, error) {
	to := promised.Handover.To
	l := h.Lease()
	state, err := r.o.Store.ReadState(ctx, l.Key)
	if err != nil {
		return nil, err
	}
	if empty, err := succession.EmptyState(state); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "emptying the state of %s for %s", l.Key, to)
	} else if empty != nil {
		if err := h.WriteState(ctx, empty); err != nil {
			return nil, err
		}
	}
	failpoint.Hit(succession.StepEmptied)
	done := *promised
	done.RunID = l.Holder
	done.Command = "handover"
	done.Handover = nil
	done.SupersededBy = to
	done.Ledger = []receipt.Entry{}
	done.FinishedAt = time.Now().UTC()
	if err := h.WriteReceipt(ctx, &done); err != nil {
		return nil, err
	}
	failpoint.Hit(succession.StepDone)
	return &done, nil
}

// beginSuccession is the successor's side of steps 1 and 2: it takes the
// predecessor's lease, copies its state and ledger unless the promise was
// made already, and makes the promise. It returns the receipt the run then
// carries forward (the inherited ledger), or prev when there is no
// succession.
func (r *runner) beginSuccession(ctx context.Context, prev *receipt.Receipt) (*receipt.Receipt, error) {
	p := r.o.Context.Predecessor
	if prev != nil && prev.Inheriting != "" {
		// A handover in progress is resumed whatever this run was told.
		p = prev.Inheriting
	}
	if p == "" || r.ownBackend {
		return prev, nil
	}
	if r.o.Command == Destroy {
		return prev, r.finishForDestroy(ctx, prev)
	}
	if r.o.Command != Apply {
		return prev, nil
	}
	predKey := store.Key{Environment: r.key.Environment, Scope: p}
	pred, err := r.o.Store.LatestReceipt(ctx, predKey)
	if err != nil {
		return nil, err
	}
	action, err := succession.Decide(r.key.Scope, prev, pred)
	if err != nil {
		return nil, err
	}
	switch action {
	case succession.None:
		return prev, nil
	case succession.Finish:
		r.handover = &handover{pred: predKey, done: true}
		return prev, nil
	}
	// The successor holds the predecessor's lease for the whole handover:
	// a run of the branch scope meanwhile gets LOCK_HELD, or waits.
	cfg := r.o.Lease
	cfg.About = r.holderInfo()
	cfg.OnWait = func(l store.LeaseInfo) {
		r.info(fmt.Sprintf("waiting for the lease of %s (to take over its resources): held by %s until %s", predKey, l.Holder, l.ExpiresAt.Local().Format("15:04:05")))
	}
	held, err := lease.Acquire(ctx, r.o.Store, predKey, "handover-"+strings.TrimPrefix(r.o.RunID, "run-"), cfg)
	if err != nil {
		return nil, err
	}
	r.handover = &handover{pred: predKey, held: held}
	// Read again under the lease: the predecessor may have run meanwhile.
	if pred, err = r.o.Store.LatestReceipt(ctx, predKey); err != nil {
		return nil, err
	}
	// Decided again under the lease: another successor may have made its
	// promise meanwhile.
	if action, err = succession.Decide(r.key.Scope, prev, pred); err != nil {
		return nil, err
	}
	switch action {
	case succession.None:
		return prev, nil
	case succession.Finish:
		r.handover.done = true
		return prev, nil
	}
	if succession.Promised(r.key.Scope, pred) {
		r.handover.promised = pred
		r.warn(fmt.Sprintf("resuming the takeover of %d resources from %s", len(pred.Ledger), p))
		return r.withInherited(prev, pred), nil
	}

	// Step 1: copy. The resources stay the predecessor's until the promise.
	state, err := r.o.Store.ReadState(ctx, predKey)
	if err != nil {
		return nil, err
	}
	if state != nil {
		if err := r.held.WriteState(ctx, state); err != nil {
			return nil, err
		}
	}
	// The copy's receipt claims nothing yet (its ledger is empty), so the
	// ownership index keeps the resources the predecessor's until the
	// promise.
	copied := r.inheritedReceipt(pred)
	copied.Ledger = []receipt.Entry{}
	if err := r.held.WriteReceipt(ctx, copied); err != nil {
		return nil, err
	}
	failpoint.Hit(succession.StepCopied)

	// Step 2: the promise, the commit point of the handover.
	promised := *pred
	promised.RunID = held.Lease().Holder
	promised.Command = "handover"
	promised.Handover = &receipt.Handover{To: r.key.Scope, RunID: r.o.RunID, At: time.Now().UTC()}
	if err := held.WriteReceipt(ctx, &promised); err != nil {
		return nil, err
	}
	r.handover.promised = &promised
	failpoint.Hit(succession.StepPromised)
	inherited := r.withInherited(prev, &promised)
	r.warn(fmt.Sprintf("inherited %d resources from %s", len(succession.Inherited(pred)), p))
	return inherited, nil
}

// withInherited is the receipt a successor run carries forward once the
// predecessor's resources are promised to it: its own ledger (when an
// earlier run of the handover applied already) and the inherited entries.
func (r *runner) withInherited(prev, pred *receipt.Receipt) *receipt.Receipt {
	rec := r.inheritedReceipt(pred)
	if prev == nil {
		return rec
	}
	seen := map[string]bool{}
	var ledger []receipt.Entry
	for _, e := range prev.Ledger {
		seen[e.Identity] = true
		ledger = append(ledger, e)
	}
	for _, e := range rec.Ledger {
		if !seen[e.Identity] {
			ledger = append(ledger, e)
		}
	}
	rec.Ledger = ledger
	return rec
}

// finishForDestroy completes, before a successor's destroy, a handover
// whose promise is made but whose predecessor side is not finished: the
// resources are the successor's, so the predecessor's ledger must stop
// claiming them before the destroy's foreign check (found by the property
// test: otherwise neither scope's destroy deleted them).
func (r *runner) finishForDestroy(ctx context.Context, prev *receipt.Receipt) error {
	if prev == nil || prev.Inheriting == "" {
		return nil
	}
	predKey := store.Key{Environment: r.key.Environment, Scope: prev.Inheriting}
	pred, err := r.o.Store.LatestReceipt(ctx, predKey)
	if err != nil || pred == nil || pred.Handover == nil || pred.Handover.To != r.key.Scope {
		return err
	}
	held, err := lease.Acquire(ctx, r.o.Store, predKey, "handover-"+strings.TrimPrefix(r.o.RunID, "run-"), r.o.Lease)
	if err != nil {
		return err
	}
	r.handover = &handover{pred: predKey, held: held, done: true}
	if pred, err = r.o.Store.LatestReceipt(ctx, predKey); err != nil {
		return err
	}
	if pred != nil && pred.Handover != nil && pred.Handover.To == r.key.Scope {
		if _, err := r.finishPredecessor(ctx, held, pred); err != nil {
			return err
		}
	}
	return nil
}

// inheritedReceipt is the successor's receipt right after the copy: the
// predecessor's ledger, inherited.
func (r *runner) inheritedReceipt(pred *receipt.Receipt) *receipt.Receipt {
	c := r.o.Context
	return &receipt.Receipt{
		Version: receipt.Version, RunID: r.o.RunID, Command: string(r.o.Command),
		Environment: c.Environment, Scope: c.Scope, Status: receipt.StatusRunning,
		StartedAt: r.started.UTC(), Branch: c.Branch, PullRequest: c.PullRequest, Commit: c.Commit,
		Changes: []receipt.Change{}, Ledger: succession.Inherited(pred), InheritedFrom: pred.Scope, Inheriting: pred.Scope,
	}
}

// unpromisedCopy reports whether this scope's state is only a copy of a
// predecessor's that was never promised to it: the resources are not this
// scope's, and its destroy must leave them alone.
func (r *runner) unpromisedCopy(ctx context.Context, prev *receipt.Receipt) (bool, error) {
	if prev == nil || prev.Inheriting == "" {
		return false, nil
	}
	pred, err := r.o.Store.LatestReceipt(ctx, store.Key{Environment: r.key.Environment, Scope: prev.Inheriting})
	if err != nil {
		return false, err
	}
	return !succession.Promised(r.key.Scope, pred), nil
}

// dropCopy ends a destroy of a scope whose state is only an unpromised copy
// of its predecessor's: the copy is emptied, nothing is deleted.
func (r *runner) dropCopy(ctx context.Context, prev *receipt.Receipt) error {
	state, err := r.o.Store.ReadState(ctx, r.key)
	if err != nil {
		return err
	}
	if empty, err := succession.EmptyState(state); err != nil {
		return errcode.Wrap(errcode.Internal, err, "emptying the copied state of %s", r.key)
	} else if empty != nil {
		if err := r.held.WriteState(ctx, empty); err != nil {
			return err
		}
	}
	rec := r.inheritedReceipt(prev)
	rec.InheritedFrom, rec.Inheriting = "", ""
	rec.Command = string(Destroy)
	rec.Status = receipt.StatusDestroyed
	rec.Ledger = []receipt.Entry{}
	rec.FinishedAt = time.Now().UTC()
	r.res.Receipt, r.res.Status = rec, rec.Status
	r.warn(fmt.Sprintf("%s held only a copy of %s's resources, never handed over to it: dropped the copy, deleted nothing (they remain %s's)", r.key.Scope, prev.Inheriting, prev.Inheriting))
	return r.held.WriteReceipt(ctx, rec)
}
