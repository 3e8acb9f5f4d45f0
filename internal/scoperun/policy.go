package scoperun

import (
	"context"
	"fmt"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/failpoint"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// checkApproval refuses a run that can write production without a named
// approver (ENV_NOT_APPROVED, exit 2), before the engine writes anything: in
// the production environment, or when the plan changes a resource the
// sponson_scope policy marks as production. A plan is never refused; it says
// that its apply will need approval.
func (r *runner) checkApproval(rules ownership.Rules, plan *tfjson.Plan) error {
	hits := rules.ProductionChanges(plan)
	if !ownership.NeedsApproval(r.key.Environment, hits) {
		return nil
	}
	var why []string
	for _, h := range hits {
		why = append(why, fmt.Sprintf("%s (%s)", h.Address, h.Rule))
	}
	reason := "the environment is production"
	if len(why) > 0 {
		reason = "it writes production: " + strings.Join(why, ", ")
	}
	name, err := rules.Approved(r.o.ApprovedBy)
	if r.o.Command == Plan {
		if err != nil {
			r.res.NeedsApproval = true
			r.warn(fmt.Sprintf("apply will need a named approver (--approved-by) because %s", reason))
		}
		return nil
	}
	if err != nil {
		e := errcode.As(err)
		e.Message += "; " + reason
		return e.With("productionChanges", why)
	}
	r.o.ApprovedBy = name
	r.info(fmt.Sprintf("approved by %s (%s)", name, reason))
	return nil
}

// acquireParents takes a lease on every parent object whose children the
// plan changes, in the order of their keys, so that two runs wanting the
// same parents never deadlock; it is called while the run holds only its own
// scope lease and never waits for a scope lease afterwards. Losing a parent
// lease stops the engine like losing the scope lease. The returned function
// releases them.
func (r *runner) acquireParents(ctx context.Context, rules ownership.Rules, plan *tfjson.Plan, stop context.CancelCauseFunc) (func(), error) {
	var held []*lease.Held
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			if w := held[i].Release(context.WithoutCancel(ctx)); w != "" {
				r.warn(w)
			}
		}
	}
	if failpoint.Disabled("parent-leases") {
		return release, nil
	}
	for _, u := range rules.UnresolvedParents(plan) {
		r.warn(fmt.Sprintf("the parent object of %s is not known until apply (%s): it cannot be leased, and concurrent writers of it may lose entries", u.Address, strings.Join(u.Unknown, ", ")))
	}
	for _, p := range rules.ParentsOf(plan) {
		key := store.Key{Environment: r.key.Environment, Scope: ownership.ParentLeaseScope(p.Key)}
		cfg := r.o.Lease
		cfg.OnWait = func(l store.LeaseInfo) {
			r.info(fmt.Sprintf("waiting for the lease of parent object %s: held by %s until %s", p.Name, l.Holder, l.ExpiresAt.Local().Format("15:04:05")))
		}
		// The run's own id as holder: a sponson_lease of the same object in
		// this run's configuration joins this lease instead of waiting for
		// it.
		h, err := lease.Acquire(ctx, r.o.Store, key, r.o.RunID, cfg)
		if err != nil {
			release()
			if e := errcode.As(err); e.Code == errcode.LockHeld || e.Code == errcode.WaitTimeout {
				e.Message = fmt.Sprintf("parent object %s (written by %s): %s", p.Name, strings.Join(p.Children, ", "), e.Message)
				return func() {}, e.With("parent", p.Name)
			}
			return func() {}, err
		}
		held = append(held, h)
		go func() {
			select {
			case <-h.Lost():
				stop(errcode.As(h.Err()).With("parent", p.Name))
			case <-ctx.Done():
			}
		}()
	}
	return release, nil
}
