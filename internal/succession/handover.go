package succession

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/failpoint"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// The commands a handover takes part in.
const (
	commandApply   = "apply"
	commandDestroy = "destroy"
)

// Run is what the handover needs of the run it is part of.
type Run struct {
	Store lease.Store
	Key   store.Key // the run's own scope
	RunID string
	// Command is "apply" or "destroy"; a plan takes no part.
	Command string
	Context runctx.Context
	// Lease configures the predecessor's lease, which a successor takes;
	// About describes the run in that lease's record when it takes it
	// for the handover.
	Lease lease.Config
	About store.HolderInfo
	// Held is the run's own scope lease.
	Held    *lease.Held
	Started time.Time
	// Warn and Info report what the handover did; neither may be nil.
	Warn, Info func(string)
}

// Handover is one run's part in a succession: as a predecessor, it finishes
// a handover an earlier successor run promised (FinishPending); as a
// successor, it takes the predecessor's resources over (Begin, then Finish
// after its apply), holding the predecessor's lease until Release.
type Handover struct {
	run Run
	// active: a handover is in progress on the successor's side; pred is
	// the predecessor and held its lease, when this run took it.
	active   bool
	pred     store.Key
	held     *lease.Held
	promised *receipt.Receipt // the predecessor's receipt carrying the promise
	// done: the predecessor is superseded already; this run only closes the
	// handover on its own receipt.
	done bool
}

// New returns the handover part of run; nothing is read or written yet.
func New(run Run) *Handover { return &Handover{run: run} }

// Predecessor returns the scope whose resources are promised to this run's
// scope while the handover is open: its entries in the ownership index are
// this scope's, and drop out when the handover finishes.
func (h *Handover) Predecessor() (scope string, ok bool) { return h.pred.Scope, h.active }

// Preview marks, in a plan, the succession its apply will do with the
// predecessor pred (done: the predecessor is superseded already): pred's
// entries in the ownership index count as this scope's (Predecessor).
// Nothing is taken or written.
func (h *Handover) Preview(pred store.Key, done bool) {
	h.active, h.pred, h.done = true, pred, done
}

// FinishPending completes, in a run of a predecessor scope, a handover an
// earlier successor run promised but did not finish: the promised resources
// are the successor's, so they leave this scope's state and ledger before
// the run does anything else. It returns the scope's receipt afterwards.
func (h *Handover) FinishPending(ctx context.Context, prev *receipt.Receipt) (*receipt.Receipt, error) {
	if prev == nil || prev.Handover == nil {
		return prev, nil
	}
	to := prev.Handover.To
	done, err := h.finishPredecessor(ctx, h.run.Held, prev)
	if err != nil {
		return nil, err
	}
	h.run.Warn(fmt.Sprintf("finished the handover of %d resources to %s, which its run %s had promised", len(prev.Ledger), to, prev.Handover.RunID))
	return done, nil
}

// finishPredecessor performs steps 4 and 5 on the predecessor, under its
// lease held: empty its state, then rewrite its receipt without the
// handed-over resources and with supersededBy.
func (h *Handover) finishPredecessor(ctx context.Context, held *lease.Held, promised *receipt.Receipt) (*receipt.Receipt, error) {
	to := promised.Handover.To
	l := held.Lease()
	state, err := h.run.Store.ReadState(ctx, l.Key)
	if err != nil {
		return nil, err
	}
	if empty, err := tfstate.Emptied(state); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "emptying the state of %s for %s", l.Key, to)
	} else if empty != nil {
		if err := held.WriteState(ctx, empty); err != nil {
			return nil, err
		}
	}
	failpoint.Hit(StepEmptied)
	done := receipt.Next(promised, handoverRun(l.Holder, promised))
	done.Handover = nil
	done.SupersededBy = to
	done.Ledger = []receipt.Entry{}
	if err := held.WriteReceipt(ctx, done); err != nil {
		return nil, err
	}
	failpoint.Hit(StepDone)
	return done, nil
}

// Begin is the successor's side of steps 1 and 2: it takes the
// predecessor's lease, copies its state and ledger unless the promise was
// made already, and makes the promise, the commit point. It returns the
// receipt the run then carries forward (the inherited ledger), or prev when
// there is no succession. A destroy instead finishes a promised handover
// first (finishForDestroy).
func (h *Handover) Begin(ctx context.Context, prev *receipt.Receipt) (*receipt.Receipt, error) {
	p := h.run.Context.Predecessor
	if prev != nil && prev.Inheriting != "" {
		// A handover in progress is resumed whatever this run was told.
		p = prev.Inheriting
	}
	if p == "" {
		return prev, nil
	}
	if h.run.Command == commandDestroy {
		return prev, h.finishForDestroy(ctx, prev)
	}
	if h.run.Command != commandApply {
		return prev, nil
	}
	predKey := store.Key{Stack: h.run.Key.Stack, Environment: h.run.Key.Environment, Scope: p}
	pred, err := store.Latest(ctx, h.run.Store, predKey)
	if err != nil {
		return nil, err
	}
	action, err := Decide(h.run.Key.Scope, prev, pred)
	if err != nil {
		return nil, err
	}
	switch action {
	case None:
		return prev, nil
	case Finish:
		h.active, h.pred, h.done = true, predKey, true
		return prev, nil
	}
	// The successor holds the predecessor's lease for the whole handover:
	// a run of the branch scope meanwhile gets LOCK_HELD, or waits.
	cfg := h.run.Lease
	cfg.About = h.run.About
	cfg.OnWait = func(l store.LeaseInfo) {
		h.run.Info(fmt.Sprintf("waiting for the lease of %s (to take over its resources): held by %s until %s", predKey, l.Holder, l.ExpiresAt.Local().Format("15:04:05")))
	}
	held, err := lease.Acquire(ctx, h.run.Store, predKey, h.holder(), cfg)
	if err != nil {
		return nil, err
	}
	h.active, h.pred, h.held = true, predKey, held
	// Read again under the lease: the predecessor may have run meanwhile.
	if pred, err = store.Latest(ctx, h.run.Store, predKey); err != nil {
		return nil, err
	}
	// Decided again under the lease: another successor may have made its
	// promise meanwhile.
	if action, err = Decide(h.run.Key.Scope, prev, pred); err != nil {
		return nil, err
	}
	switch action {
	case None:
		return prev, nil
	case Finish:
		h.done = true
		return prev, nil
	}
	if Promised(h.run.Key.Scope, pred) {
		h.promised = pred
		h.run.Warn(fmt.Sprintf("resuming the takeover of %d resources from %s", len(pred.Ledger), p))
		return h.withInherited(prev, pred), nil
	}
	if err := refuseUnresolved(h.run.Key.Scope, pred); err != nil {
		return nil, err
	}
	return h.copyAndPromise(ctx, prev, pred)
}

// refuseUnresolved refuses to begin a takeover of pred while its ledger
// holds creates nobody could vouch for: the successor could vouch for them
// no better, and a person's answer belongs to the scope whose run started
// them (a resolution in the successor would be undone by the next resume).
func refuseUnresolved(succ string, pred *receipt.Receipt) error {
	var addrs []string
	for _, e := range pred.Ledger {
		if e.CreatedBy == receipt.CreatedByUnresolved {
			addrs = append(addrs, e.Address)
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	return errcode.New(errcode.IntentUnresolved, "%s cannot take over the resources of %s yet: %d create(s) there may have happened (a run of %s stopped before it could tell): %s",
		succ, pred.Scope, len(addrs), pred.Scope, strings.Join(addrs, ", ")).
		WithHint(fmt.Sprintf("Say what became of each in %s first: `sponson resolve ADDR --scope %s --id ID` where the object exists, `--gone` where it does not; then run again.", pred.Scope, pred.Scope)).
		With("scope", pred.Scope).With("addresses", addrs)
}

// copyAndPromise performs steps 1 and 2 under both leases.
func (h *Handover) copyAndPromise(ctx context.Context, prev, pred *receipt.Receipt) (*receipt.Receipt, error) {
	// Step 1: copy. The resources stay the predecessor's until the promise.
	state, err := h.run.Store.ReadState(ctx, h.pred)
	if err != nil {
		return nil, err
	}
	if state != nil {
		if err := h.run.Held.WriteState(ctx, state); err != nil {
			return nil, err
		}
	}
	// The copy's receipt claims nothing yet (its ledger is empty), so the
	// ownership index keeps the resources the predecessor's until the
	// promise.
	copied := h.inheritedReceipt(pred)
	copied.Ledger = []receipt.Entry{}
	if err := h.run.Held.WriteReceipt(ctx, copied); err != nil {
		return nil, err
	}
	failpoint.Hit(StepCopied)

	// Step 2: the promise, the commit point of the handover.
	promised := receipt.Next(pred, handoverRun(h.held.Lease().Holder, pred))
	promised.Handover = &receipt.Handover{To: h.run.Key.Scope, RunID: h.run.RunID, At: promised.FinishedAt}
	if err := h.held.WriteReceipt(ctx, promised); err != nil {
		return nil, err
	}
	h.promised = promised
	failpoint.Hit(StepPromised)
	inherited := h.withInherited(prev, promised)
	h.run.Warn(fmt.Sprintf("inherited %d resources from %s", len(Inherited(pred)), h.pred.Scope))
	return inherited, nil
}

// holder is the holder id of the predecessor's lease: the run's id with
// "handover-" for "run-".
func (h *Handover) holder() string { return "handover-" + strings.TrimPrefix(h.run.RunID, "run-") }

// withInherited is the receipt a successor run carries forward once the
// predecessor's resources are promised to it: its own ledger (when an
// earlier run of the handover applied already) and the inherited entries.
func (h *Handover) withInherited(prev, pred *receipt.Receipt) *receipt.Receipt {
	rec := h.inheritedReceipt(pred)
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
func (h *Handover) finishForDestroy(ctx context.Context, prev *receipt.Receipt) error {
	if prev == nil || prev.Inheriting == "" {
		return nil
	}
	predKey := store.Key{Stack: h.run.Key.Stack, Environment: h.run.Key.Environment, Scope: prev.Inheriting}
	pred, err := store.Latest(ctx, h.run.Store, predKey)
	if err != nil || pred == nil || pred.Handover == nil || pred.Handover.To != h.run.Key.Scope {
		return err
	}
	held, err := lease.Acquire(ctx, h.run.Store, predKey, h.holder(), h.run.Lease)
	if err != nil {
		return err
	}
	h.active, h.pred, h.held, h.done = true, predKey, held, true
	if pred, err = store.Latest(ctx, h.run.Store, predKey); err != nil {
		return err
	}
	if pred != nil && pred.Handover != nil && pred.Handover.To == h.run.Key.Scope {
		if _, err := h.finishPredecessor(ctx, held, pred); err != nil {
			return err
		}
	}
	return nil
}

// inheritedReceipt is the successor's receipt right after the copy: the
// predecessor's ledger, inherited.
func (h *Handover) inheritedReceipt(pred *receipt.Receipt) *receipt.Receipt {
	c, k := h.run.Context, h.run.Key
	rec := receipt.Next(receipt.First(k.Stack, k.Environment, k.Scope),
		receipt.Run{RunID: h.run.RunID, Command: h.run.Command, Status: receipt.StatusRunning, StartedAt: h.run.Started.UTC()})
	rec.Branch, rec.PullRequest, rec.Commit = c.Branch, c.PullRequest, c.Commit
	rec.Ledger, rec.InheritedFrom, rec.Inheriting = Inherited(pred), pred.Scope, pred.Scope
	return rec
}

// handoverRun is the successor run's write of the predecessor's receipt
// (the promise, then the finish) under the predecessor's lease, held by
// holder: it keeps the outcome of the predecessor's last run.
func handoverRun(holder string, pred *receipt.Receipt) receipt.Run {
	now := time.Now().UTC()
	return receipt.Run{RunID: holder, Command: "handover", Status: pred.Status, StartedAt: now, FinishedAt: now}
}

// Finish runs steps 4 to 6 after the successor's apply succeeded: the
// predecessor's side, then the successor's receipt rec closes the
// handover.
func (h *Handover) Finish(ctx context.Context, rec *receipt.Receipt) error {
	if !h.active || (h.promised == nil && !h.done) {
		return nil
	}
	failpoint.Hit(StepApplied)
	if p := h.promised; p != nil && p.SupersededBy != h.run.Key.Scope {
		if _, err := h.finishPredecessor(ctx, h.held, p); err != nil {
			return err
		}
	}
	rec.Inheriting = ""
	return h.run.Held.WriteReceipt(ctx, rec)
}

// Release releases the predecessor's lease, if the run took it, and
// returns a warning when that failed.
func (h *Handover) Release(ctx context.Context) (warning string) {
	if h.held == nil {
		return ""
	}
	return h.held.Release(ctx)
}

// UnpromisedCopy reports whether this scope's state is only a copy of a
// predecessor's that was never promised to it: the resources are not this
// scope's, and its destroy must leave them alone.
func (h *Handover) UnpromisedCopy(ctx context.Context, prev *receipt.Receipt) (bool, error) {
	if prev == nil || prev.Inheriting == "" {
		return false, nil
	}
	pred, err := store.Latest(ctx, h.run.Store, store.Key{Stack: h.run.Key.Stack, Environment: h.run.Key.Environment, Scope: prev.Inheriting})
	if err != nil {
		return false, err
	}
	return !Promised(h.run.Key.Scope, pred), nil
}

// DropCopy ends a destroy of a scope whose state is only an unpromised copy
// of its predecessor's: the copy is emptied, nothing is deleted. It returns
// the destroy's receipt, also when writing it failed.
func (h *Handover) DropCopy(ctx context.Context, prev *receipt.Receipt) (*receipt.Receipt, error) {
	key := h.run.Key
	state, err := h.run.Store.ReadState(ctx, key)
	if err != nil {
		return nil, err
	}
	if empty, err := tfstate.Emptied(state); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "emptying the copied state of %s", key)
	} else if empty != nil {
		if err := h.run.Held.WriteState(ctx, empty); err != nil {
			return nil, err
		}
	}
	rec := h.inheritedReceipt(prev)
	rec.InheritedFrom, rec.Inheriting = "", ""
	rec.Command = commandDestroy
	rec.Status = receipt.StatusDestroyed
	rec.Ledger = []receipt.Entry{}
	rec.FinishedAt = time.Now().UTC()
	h.run.Warn(fmt.Sprintf("%s held only a copy of %s's resources, never handed over to it: dropped the copy, deleted nothing (they remain %s's)", key.Scope, prev.Inheriting, prev.Inheriting))
	return rec, h.run.Held.WriteReceipt(ctx, rec)
}
