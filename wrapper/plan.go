package wrapper

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
)

// NewCmdPlan builds `sponson plan`. runF replaces the run in tests.
func NewCmdPlan(f *Factory, out *outcome, runF func(context.Context, *runInput) outcome) *cobra.Command {
	return newRunCmd(f, out, scoperun.Plan,
		"Show what apply would change in this run's scope",
		`Plan runs init and plan against the scope's own state without taking the lease
and without writing anything; it warns when an apply is running in the scope and
when the apply will need a named approver. Like apply, it fails (exit 1,
OWNED_BY_OTHER_SCOPE) when the plan changes a resource another scope owns, so CI
fails at plan time. An environment the repository does not declare (sponson.hcl)
is refused (exit 2, ENV_UNDECLARED) before the engine starts.`, runF)
}
