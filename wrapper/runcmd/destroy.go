package runcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// NewCmdDestroy builds `sponson destroy`. runF replaces the run in tests.
func NewCmdDestroy(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) *cobra.Command {
	return newRunCmd(f, out, scoperun.Destroy,
		"Destroy everything this run's scope owns, and nothing else",
		`Destroy refuses what apply refuses before the engine starts (an undeclared
environment, a protected one without an allowed approver, a merge queue run),
then takes the scope's lease and destroys the resources in the scope's own
state; other scopes have their own states and are never touched (a planned
delete of another scope's resource is refused like in apply). The receipt
records the scope as destroyed with an empty ledger. A scope that was never
applied, or is destroyed already, has nothing to destroy: the command says so
and writes nothing.`, runF)
}
