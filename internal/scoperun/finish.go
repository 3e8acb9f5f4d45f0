package scoperun

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/succession"
)

// finishSuccession is the tenth phase, after an apply that succeeded: in a
// successor the handover finishes (steps 4 to 6, package succession): the
// predecessor's side, then the successor's receipt rec closes it. h is the
// handover load began.
func (r *runner) finishSuccession(ctx context.Context, h *succession.Handover, rec *receipt.Receipt) error {
	if r.o.Command != Apply {
		return nil
	}
	return h.Finish(ctx, rec)
}
