package scoperun

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/failpoint"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/succession"
)

// finishSuccession is the tenth phase, after an apply that succeeded: in a
// successor it runs steps 4 to 6 of the handover, the predecessor's side,
// then the successor's receipt rec closes the handover.
func (r *runner) finishSuccession(ctx context.Context, rec *receipt.Receipt) error {
	if r.o.Command != Apply || r.handover == nil || (r.handover.promised == nil && !r.handover.done) {
		return nil
	}
	failpoint.Hit(succession.StepApplied)
	if p := r.handover.promised; p != nil && p.SupersededBy != r.key.Scope {
		if _, err := r.finishPredecessor(ctx, r.handover.held, p); err != nil {
			return err
		}
	}
	rec.Inheriting = ""
	return r.held.WriteReceipt(ctx, rec)
}
