package scoperun

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The no-change fast path (docs/design.md §8, the no-change apply). Most CI
// applies change nothing: a re-run, a push that touched another stack. The
// engine's plan says so by its exit code (-detailed-exitcode: 0 when the
// plan cannot be applied, which both engines decide as "no resource change,
// no move, no import, no forget, no root output change, and, in a
// refresh-only plan, no drift"). Such an apply then skips `show -json`, the
// checkpoint and the engine's no-op apply, and writes one receipt, the one
// the full path would have written, provided nothing the full path reads
// from the plan could make that receipt or a check different:
//
//   - the run is an apply of a new plan (no saved plan, no import, no
//     review text), of a scope sponson serves the state of, with a previous
//     receipt and no succession under way;
//   - no approval is needed (the approvers are among the plan's values);
//   - the environment declares no policy (they judge the plan's JSON);
//   - this run settled nothing;
//   - the engine read no other stack's outputs (the receipt records those
//     reads from the plan, with their serials);
//   - the ledger computed from the state, under the policy the state's
//     sponson_scope declares, is the previous receipt's, entry for entry: a
//     policy the state alone cannot reproduce (an identifying attribute only
//     a provider's schema marks sensitive), an intent or an unresolved entry
//     all make them differ.
//
// Whenever one of these fails the run reads the plan as JSON and takes the
// full path: the fast path only ever leaves out work whose outcome is known.
//
// A plan that saves nothing (no -out, no --json-plan) takes the same path
// under the same conditions, and ends there with nothing written: its
// outcome is "no changes", its result carries no plan, and the stacks that
// read its outputs in a run of many stacks read its applied state, which
// is what it plans (issue 50 item 2: `plan --all` of unchanged stacks pays
// one engine start per stack, the plan, as the bare engine does).

// fastPathAllowed reports whether an apply may skip the plan's JSON when
// the engine finds no change: what can be decided before the engine plans,
// from what load and settle produced.
func (r *runner) fastPathAllowed(work workdir, ld *loaded, st *settled) bool {
	switch r.o.Command {
	case Apply:
	case Plan:
		// A plan that saves nothing: no -out, no --json-plan.
		if r.o.SavePlan != "" || r.o.JSONPlan != "" {
			return false
		}
	default:
		return false
	}
	if r.o.Saved != nil || r.o.ImportOnly || r.o.PlanText || work.ownBackend() || len(st.out) > 0 {
		return false
	}
	if prev := st.prev; prev == nil || prev.Handover != nil || prev.Inheriting != "" || len(st.unresolved) > 0 {
		return false
	}
	if h := ld.handover; h != nil {
		if _, ok := h.Predecessor(); ok {
			return false
		}
	}
	// Policies judge the plan's JSON, which the fast path does not read.
	if r.o.Policy != nil || r.o.ProposedPolicy != nil {
		return false
	}
	return !r.o.Protected && !ownership.NeedsApproval(r.key.Environment, nil)
}

// unchangedLedger is the ledger a no-change apply leaves, and whether the
// fast path may write it: the engine read no other stack, and the ledger is
// the previous receipt's.
func (r *runner) unchangedLedger(ctx context.Context, eng *engineRun, prev *receipt.Receipt) ([]receipt.Entry, bool, error) {
	if r.stackReads.Load() > 0 {
		return nil, false, nil
	}
	objects, err := r.currentState(ctx, eng)
	if err != nil {
		return nil, false, errcode.Wrap(errcode.Internal, err, "reading the state of a no-change apply")
	}
	pol := r.o.Declared.Policy()
	pol.Identity = ownership.ScopePolicy(objects)
	// The environment's key, if it has one: an identifying value the state
	// marks sensitive is hashed with it. None is made here.
	if pol.HashKey, err = ownership.LoadHashKey(ctx, r.o.Store, r.key.Environment, "", r.o.Lease, false, false); err != nil {
		return nil, false, err
	}
	ledger, notes := ownership.Ledger(prev, objects, pol, nil)
	if len(notes) > 0 {
		return nil, false, nil
	}
	if !sameLedger(ledger, carried(prev)) {
		return nil, false, nil
	}
	return ledger, true, nil
}

// sameLedger reports whether two ledgers say the same, as the store would
// record them (their JSON).
func sameLedger(a, b []receipt.Entry) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// recordUnchanged ends a no-change apply on the fast path: the receipt the
// full path would write, written once (no checkpoint: the engine writes
// nothing).
func (r *runner) recordUnchanged(bg context.Context, ld *loaded, st *settled, c *checked) error {
	rec := r.newReceipt(ld, st, nil, nil, ownership.Rules{})
	rec.Ledger = c.unchanged
	rec.Status = receipt.StatusUnchanged
	rec.FinishedAt = time.Now().UTC()
	r.res.Receipt = rec
	if lost := r.held.Err(); lost != nil {
		r.res.Status = receipt.StatusFailed
		return lost
	}
	r.res.Status = rec.Status
	if err := r.held.WriteReceipt(bg, rec); err != nil {
		return err
	}
	return r.finishSuccession(bg, ld.handover, rec)
}

// countingReader is the run's store as the provider's sponson_outputs reads
// it, counting the reads of other scopes' states.
type countingReader struct {
	states store.StateReader
	self   store.Key
	n      *atomic.Int64
}

func (c countingReader) ReadState(ctx context.Context, key store.Key) ([]byte, error) {
	if key != c.self {
		c.n.Add(1)
	}
	return c.states.ReadState(ctx, key)
}
