package scoperun

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// load is the third phase: it reads the scope's latest receipt, the one the
// run carries forward, and in a run that writes takes the succession
// (package succession) as far as it goes before the engine starts: a
// predecessor finishes a handover it promised, a successor takes over or
// resumes one. done is set when a destroy ends here, having only dropped a
// copy of a predecessor's state.
func (r *runner) load(ctx, bg context.Context) (prev *receipt.Receipt, done bool, err error) {
	prev, err = r.o.Store.LatestReceipt(ctx, r.key)
	if err != nil || r.o.Command == Plan {
		return prev, false, err
	}
	r.onRelease(func() { r.releaseHandover(bg) })
	if prev, err = r.finishPending(bg, prev); err != nil {
		return nil, false, err
	}
	if r.o.Command == Destroy {
		copyOnly, err := r.unpromisedCopy(ctx, prev)
		if err != nil {
			return nil, false, err
		}
		if copyOnly {
			return nil, true, r.dropCopy(bg, prev)
		}
	}
	prev, err = r.beginSuccession(bg, prev)
	return prev, false, err
}
