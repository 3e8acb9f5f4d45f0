package runner

import (
	"context"
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/policy"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/rules"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

// runPolicies loads the policies that judge a run in the environment env:
// those the trusted rules declare, read from the trusted revision's files
// (docs/design.md §2.19 Policies), and, when the change proposes other
// ones, the proposed policies, read from the checkout, for the review
// alone. A trusted policy that cannot be read or compiled refuses the run;
// a proposed one that cannot is a warning (the change under review is
// where it gets fixed). trusted is nil when the environment declares no
// policy; proposed is nil when the change proposes none or the same.
func runPolicies(ctx context.Context, rs rules.Rules, env string) (trusted, proposed *policy.Set, warning string, err error) {
	if e, lerr := rs.Declared.Lookup(env); lerr == nil && len(e.Policies) > 0 {
		if rs.Files == nil {
			return nil, nil, "", errcode.New(errcode.Internal, "the policies of %s are declared without the files that hold them", env)
		}
		if trusted, err = policy.Load(ctx, rs.Files, e.Policies); err != nil {
			return nil, nil, "", err
		}
	}
	p := rs.Proposed
	if p == nil || p.Files == nil {
		return trusted, nil, "", nil
	}
	// A change that drops the environment proposes no policy for it.
	var paths []string
	if e, lerr := p.Declared.Lookup(env); lerr == nil {
		paths = e.Policies
	}
	if len(paths) == 0 {
		return trusted, nil, "", nil
	}
	proposed, perr := policy.Load(ctx, p.Files, paths)
	if perr != nil {
		return trusted, nil, fmt.Sprintf("the change's proposed policies are not evaluated: %v", perr), nil
	}
	if trusted != nil && proposed.Digest == trusted.Digest {
		return trusted, nil, "", nil
	}
	return trusted, proposed, "", nil
}

// policyVerdicts are a run's policy verdicts as its summary shows them.
func policyVerdicts(p *receipt.Policies) (trusted, proposed *summary.PolicyVerdict) {
	if p == nil {
		return nil, nil
	}
	lines := func(v receipt.PolicyVerdict) *summary.PolicyVerdict {
		out := &summary.PolicyVerdict{}
		for _, m := range v.Deny {
			out.Deny = append(out.Deny, fmt.Sprintf("%s (%s, %s)", m.Msg, m.Rule, m.Policy))
		}
		for _, m := range v.Warn {
			out.Warn = append(out.Warn, fmt.Sprintf("%s (%s, %s)", m.Msg, m.Rule, m.Policy))
		}
		return out
	}
	trusted = lines(p.PolicyVerdict)
	if p.Proposed != nil {
		proposed = lines(*p.Proposed)
	}
	return trusted, proposed
}
