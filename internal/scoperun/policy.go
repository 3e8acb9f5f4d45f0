package scoperun

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/policy"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// checkPolicies is the policy step, the last of planAndCheck's checks
// (docs/design.md §2.19 Policies): the environment's trusted policies
// judge the plan's JSON, after the plan is read and before anything of
// the run is written (the checkpoint, its intents, the engine's apply,
// which waits at the state server's gate until the run takes it). A deny
// refuses an apply or destroy with POLICY_DENIED; a plan is shown and then
// fails with it, as a policy check turns the review red. The checkout's
// own policies, when they differ (Options.ProposedPolicy), are evaluated
// for the review alone: their verdict never refuses.
func (r *runner) checkPolicies(ctx context.Context, c *checked, prev *receipt.Receipt) error {
	if r.o.Policy == nil && r.o.ProposedPolicy == nil {
		return nil
	}
	planJSON := c.planJSON
	if planJSON == nil {
		// An engine that gives only the parsed plan (a test's stand-in).
		var err error
		if planJSON, err = json.Marshal(c.plan); err != nil {
			return errcode.Wrap(errcode.Internal, err, "encoding the plan for the policies")
		}
	}
	sctx := r.policyContext(c, prev)
	out := &receipt.Policies{}
	if r.o.Policy != nil {
		v, err := r.o.Policy.Eval(ctx, planJSON, sctx)
		if err != nil {
			return err
		}
		out.PolicyVerdict = verdictOf(v)
	}
	if r.o.ProposedPolicy != nil {
		if v, err := r.o.ProposedPolicy.Eval(ctx, planJSON, sctx); err != nil {
			r.warn(fmt.Sprintf("the change's proposed policies could not be evaluated (shown for information, they judge nothing): %v", err))
		} else {
			pv := verdictOf(v)
			out.Proposed = &pv
		}
	}
	r.res.Policies = out
	// The warnings are shown as they come; the review lists them with the
	// verdict (Result.Policies), not again among the run's warnings.
	if r.o.Report.Warn != nil {
		for _, m := range out.Warn {
			r.o.Report.Warn(fmt.Sprintf("policy warning: %s (%s, %s)", m.Msg, m.Rule, m.Policy))
		}
	}
	if p := out.Proposed; p != nil {
		r.info(fmt.Sprintf("the change's proposed policies (effective when merged, not judging this run) would deny %d and warn %d: %s",
			len(p.Deny), len(p.Warn), strings.Join(msgs(append(append([]receipt.PolicyMessage{}, p.Deny...), p.Warn...)), "; ")))
	}
	if len(out.Deny) == 0 {
		return nil
	}
	what := "nothing was written"
	if r.o.Command == Plan {
		what = "its apply will be refused"
	}
	return errcode.New(errcode.PolicyDenied, "the environment's policies refuse the plan of %s (%s): %s", r.key, what, strings.Join(msgs(out.Deny), "; ")).
		With("deny", out.Deny)
}

// policyContext is sponson's context of the run, data.sponson to the
// policies.
func (r *runner) policyContext(c *checked, prev *receipt.Receipt) policy.Context {
	return policy.Context{
		Environment: r.key.Environment, Scope: r.key.Scope, Stack: r.key.Stack,
		PullRequest: r.o.Context.PullRequest, Actor: r.o.Job.Actor, RunID: r.o.RunID,
		Owners: ownersByAddress(r.key.Scope, prev, c.planned, c.owners),
	}
}

// ownersByAddress maps the address of each planned change to the scope
// that owns its object: this scope for what its ledger (prev) holds at
// that address (the object a replacement or a delete removes), else the
// scope the foreign check saw own one of its identities (a predecessor in a
// succession). A change whose object nobody owns yet (a create) is left
// out.
func ownersByAddress(self string, prev *receipt.Receipt, planned []ownership.Planned, owners []store.Owner) map[string]string {
	own := map[string]bool{}
	if prev != nil {
		for _, e := range prev.Ledger {
			own[e.Address] = true
		}
	}
	byID := map[string]string{}
	for _, o := range owners {
		byID[o.Identity] = o.Scope
	}
	out := map[string]string{}
	for _, p := range planned {
		if own[p.Address] {
			out[p.Address] = self
			continue
		}
		for _, id := range p.AllKeys() {
			if s, ok := byID[id]; ok && id != "" {
				out[p.Address] = s
				break
			}
		}
	}
	return out
}

func verdictOf(v policy.Verdict) receipt.PolicyVerdict {
	conv := func(ms []policy.Message) []receipt.PolicyMessage {
		var out []receipt.PolicyMessage
		for _, m := range ms {
			out = append(out, receipt.PolicyMessage{Policy: m.Policy, Rule: m.Rule, Msg: m.Msg})
		}
		return out
	}
	return receipt.PolicyVerdict{Deny: conv(v.Deny), Warn: conv(v.Warn)}
}

func msgs(ms []receipt.PolicyMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s (%s, %s)", m.Msg, m.Rule, m.Policy)
	}
	return out
}
