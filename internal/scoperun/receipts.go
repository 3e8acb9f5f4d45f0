package scoperun

import (
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// The receipt of this run, as the checkpoint (commit) and the no-change
// fast path (unchanged) begin it.

// approvedBy is the approver a receipt records: the one checkApproval
// accepted, or in a protected environment the one the command checked
// before the run (a run that fails before its checks still needed it).
func (r *runner) approvedBy() string {
	if r.res.ApprovedBy != "" {
		return r.res.ApprovedBy
	}
	if r.o.Protected {
		return r.o.ApprovedBy
	}
	return ""
}

// newReceipt is the receipt of this run, carried forward from st.prev: what
// it plans (plan, planned, rules) as intents, what load found of
// --allow-older-commit and the quarantined runs settle reconciled.
func (r *runner) newReceipt(ld *loaded, st *settled, plan *tfjson.Plan, planned []ownership.Planned, rules ownership.Rules) *receipt.Receipt {
	c := r.o.Context
	base := st.prev
	if base == nil {
		base = receipt.First(r.key.Stack, c.Environment, c.Scope)
	}
	// Carried forward (receipt.Next): a run that fails before it can read
	// the state forgets nothing the scope owned, intents of an earlier
	// crash included; the succession chain stays visible on every later
	// receipt, and released objects stay listed: nobody else will remember
	// them.
	rec := receipt.Next(base, receipt.Run{RunID: r.o.RunID, Command: r.o.label(), Status: receipt.StatusRunning, Actor: r.o.Job.Actor, JobURL: r.o.Job.URL, StartedAt: r.started.UTC()})
	rec.Stack, rec.Environment, rec.Scope = r.key.Stack, c.Environment, c.Scope
	rec.Branch, rec.PullRequest, rec.Commit = c.Branch, c.PullRequest, c.Commit
	rec.ApprovedBy, rec.AllowedOlderCommit, rec.Engine = r.approvedBy(), ld.olderCommit, r.res.Engine
	rec.Changes, rec.Reads = Changes(plan), StackReads(plan)
	if r.o.Saved != nil {
		rec.SavedPlan = r.o.Saved.Meta.RunID
	}
	rec.Ledger = append(rec.Ledger, intents(plan, planned, rules)...)
	rec.Reconciled = st.reconciled
	// The run's own completions start empty: what an earlier run left was
	// settled before this run planned. A handover the scope promised was
	// finished before (FinishPending), or the scope keeps its own backend
	// and takes no part in a succession.
	rec.Completed, rec.HeldCompletions, rec.Handover = nil, false, nil
	if p := r.held.Preempted; p != nil {
		rec.LockPreempted = &receipt.Preempted{Holder: p.Holder, Since: p.AcquiredAt, Until: p.ExpiresAt}
	}
	if r.o.Command == Destroy {
		// A destroy that gets this far owns what it destroys: an open
		// handover was finished (finishForDestroy) or there was none.
		rec.Inheriting = ""
	}
	return rec
}

// label is the command's name as the receipt records it.
func (o Options) label() string {
	if o.Label != "" {
		return o.Label
	}
	return string(o.Command)
}
