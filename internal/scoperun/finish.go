package scoperun

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// finishSuccession is the tenth phase, after an apply that succeeded: in a
// successor the handover finishes (steps 4 to 6, package succession): the
// predecessor's side, then the successor's receipt rec closes it.
func (r *runner) finishSuccession(ctx context.Context, rec *receipt.Receipt) error {
	if r.o.Command != Apply {
		return nil
	}
	return r.handover.Finish(ctx, rec)
}
