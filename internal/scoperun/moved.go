package scoperun

import (
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// refuseMoved refuses a run of a scope whose state was promised to another
// stack (internal/stackmove: the stack its directory was renamed to): its
// resources are that stack's, so a destroy here would delete what the
// other stack owns, and an apply would create them a second time
// (docs/design.md §4.7 "Many stacks", removed stacks).
func refuseMoved(prev *receipt.Receipt) error {
	if prev == nil || prev.MovedTo == "" {
		return nil
	}
	if len(prev.Ledger) > 0 {
		return errcode.New(errcode.Usage, "the state of %s/%s of stack %s is being moved to stack %s (run %s), which owns its %d resources now; the move has not finished",
			prev.Environment, prev.Scope, prev.Stack, prev.MovedTo, prev.RunID, len(prev.Ledger)).
			WithHint("Finish the move: run `sponson apply --changed` of the change that renamed the stack's directory again, on the default branch.").
			With("movedTo", prev.MovedTo)
	}
	return errcode.New(errcode.Usage, "the state of %s/%s of stack %s was moved to stack %s (run %s): this stack owns nothing there any more",
		prev.Environment, prev.Scope, prev.Stack, prev.MovedTo, prev.RunID).
		WithHint(fmt.Sprintf("Run the stack %s, from its directory, instead.", prev.MovedTo)).
		With("movedTo", prev.MovedTo)
}
