package runcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// NewCmdPlan builds `sponson plan`. runF replaces the run in tests.
func NewCmdPlan(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) *cobra.Command {
	return newRunCmd(f, out, scoperun.Plan,
		"Show what apply would change in this run's scope",
		`Plan runs init and plan against the scope's own state without taking the lease
and without writing anything; a pull request scope that its apply will make take
over its head branch's scope (succession) is planned against that branch's state,
so the plan shows what the apply will do. It warns when an apply is running in the scope and
when the apply will need a named approver. Like apply, it fails (exit 1,
OWNED_BY_OTHER_SCOPE) when the plan changes a resource another scope owns, so CI
fails at plan time. An environment the repository does not declare (sponson.hcl)
is refused (exit 2, ENV_UNDECLARED) before the engine starts.

-out FILE saves the engine's plan with what sponson decided (stack, environment,
scope, commit, the state it was made against, the owners of every object it
touches, the approval and succession it needs), mode 0600: it holds the engine's
plan and so variable values and the prior state, sensitive ones included, and
never the state server's secret or a state key. `+"`sponson apply FILE`"+` applies
exactly that plan. The file is sealed (SHA-256, or HMAC-SHA256 with the hex key in
SPONSON_PLAN_KEY); a damaged one is refused with PLAN_CORRUPT (exit 2). With
--all or --changed, -out DIR names a new or empty directory: each stack's plan
goes in it, and once every stack planned, a sealed manifest listing them in order
with their digests; `+"`sponson apply DIR`"+` applies them.`, runF)
}
