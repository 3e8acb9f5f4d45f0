package wrapper

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
)

// NewCmdApply builds `sponson apply`. runF replaces the run in tests.
func NewCmdApply(f *Factory, out *outcome, runF func(context.Context, *runInput) outcome) *cobra.Command {
	return newRunCmd(f, out, scoperun.Apply,
		"Plan and apply the configuration in this run's scope",
		`Apply takes the scope's lease (exit 3, LOCK_HELD, when another run holds it;
--wait queues behind it), serves the scope's own state to the engine through a
state server whose every write is fenced by the lease, runs init, plan and apply
through the engine, and writes a receipt listing what the scope owns.

Production needs --approved-by NAME (ENV_NOT_APPROVED otherwise).`, runF)
}
