// Package succession hands a branch scope's resources to the pull request
// scope that continues its work (branch-feat-search → pr-42), so that work
// started before the pull request existed is taken over, not created twice.
//
// The invariant, crashes included: at every instant each resource has
// exactly one scope whose destroy deletes it. The handover is ordered around
// one commit point, the promise written on the predecessor's receipt:
//
//  1. copy: the successor's state becomes a copy of the predecessor's, and
//     its receipt says inheritedFrom and inheriting (the handover is open). Before the promise the resources are
//     still the predecessor's; the successor's destroy leaves them alone
//     (its state is only the copy: it has applied nothing yet).
//  2. promise (commit point): the predecessor's receipt gets a handover to
//     the successor. From now on they are the successor's: its destroy
//     deletes them, the predecessor's leaves them alone.
//  3. the successor plans and applies with the inherited state.
//  4. the predecessor's state is emptied of them, then
//  5. its receipt is rewritten without them and with supersededBy;
//  6. the successor's receipt closes the handover (inheriting cleared).
//
// Every step is a fenced write under the lease of the scope it writes (the
// successor holds both leases during the handover). A run that dies between
// any two steps leaves the handover to the next run of either scope: the
// successor resumes it; the predecessor finishes steps 4 and 5 of an
// outstanding promise before doing anything else.
package succession

import (
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// The named steps, for failpoints in tests.
const (
	StepCopied   = "handover-copied"
	StepPromised = "handover-promised"
	StepApplied  = "handover-applied"
	StepEmptied  = "handover-pred-emptied"
	StepDone     = "handover-superseded"
)

// Action is what a successor's run must do about its predecessor.
type Action int

// What a successor run does.
const (
	None   Action = iota // no succession
	Start                // copy the predecessor's state and ledger, then promise
	Resume               // an earlier run began it: copy again if not promised, then continue
	Finish               // the predecessor is superseded; only this scope's marker remains
)

// Decide says what a run of scope succ, whose predecessor is pred, must do,
// given its own latest receipt and the predecessor's. A scope that copied
// the predecessor's state but whose handover another successor now holds
// (two pull requests on one head branch) is refused with HANDOVER_TAKEN:
// resuming would overwrite the other's promise, and both would own the
// same objects (issue 12 item 5).
func Decide(succ string, own, pred *receipt.Receipt) (Action, error) {
	a := decide(succ, own, pred)
	if a != Resume {
		return a, nil
	}
	if holder, run := Holder(pred); holder != "" && holder != succ {
		return None, errcode.New(errcode.HandoverTaken, "the resources of %s are handed over to %s (run %s), not to %s: %s holds only an unpromised copy of them, and nothing was written",
			pred.Scope, holder, run, succ, succ).
			WithHint(fmt.Sprintf("Continue the work in %s, or run `sponson destroy` in %s to drop its copy (it deletes nothing) and apply again to start fresh.", holder, succ)).
			With("holder", holder).With("holderRun", run).With("predecessor", pred.Scope)
	}
	return Resume, nil
}

// Holder names the successor that holds pred's handover, promised or
// finished, and the run that made it; "" when there is none.
func Holder(pred *receipt.Receipt) (scope, run string) {
	switch {
	case pred == nil:
		return "", ""
	case pred.Handover != nil:
		return pred.Handover.To, pred.Handover.RunID
	case pred.SupersededBy != "":
		return pred.SupersededBy, pred.RunID
	}
	return "", ""
}

func decide(succ string, own, pred *receipt.Receipt) Action {
	if pred == nil {
		return None
	}
	if own == nil {
		// A fresh pull request scope inherits a live ledger: one with
		// resources, not superseded, not promised to another scope.
		if pred.SupersededBy != "" || len(pred.Ledger) == 0 {
			return None
		}
		if pred.Handover != nil && pred.Handover.To != succ {
			return None
		}
		return Start
	}
	if own.Inheriting != pred.Scope {
		// Finished, or never begun: a scope inherits once. A branch scope
		// applied again after its pull request took over keeps its new
		// resources (its receipts keep supersededBy).
		return None
	}
	if pred.SupersededBy == succ && pred.Handover == nil {
		return Finish
	}
	return Resume
}

// Promised reports whether pred's resources are promised to succ: the
// commit point has passed.
func Promised(succ string, pred *receipt.Receipt) bool {
	return pred != nil && (pred.SupersededBy == succ || (pred.Handover != nil && pred.Handover.To == succ))
}

// Inherited returns the predecessor's ledger as the successor owns it.
func Inherited(pred *receipt.Receipt) []receipt.Entry {
	out := make([]receipt.Entry, 0, len(pred.Ledger))
	for _, e := range pred.Ledger {
		switch e.CreatedBy {
		case receipt.CreatedByIntent:
			continue // never created: nothing to inherit
		case receipt.CreatedByUnresolved:
			// A create of the predecessor's that nobody could vouch for
			// moves with the objects, still a question: the successor
			// asks it (INTENT_UNRESOLVED) rather than own an object it
			// cannot name, or forget one that may exist.
			out = append(out, e)
			continue
		}
		e.CreatedBy = receipt.CreatedByInherited
		out = append(out, e)
	}
	return out
}
