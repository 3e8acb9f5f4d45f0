package runcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// NewCmdApply builds `sponson apply`. runF replaces the run in tests.
func NewCmdApply(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) *cobra.Command {
	return newRunCmd(f, out, scoperun.Apply,
		"Plan and apply the configuration in this run's scope",
		`Apply first refuses, before the engine starts, an environment the repository
does not declare (exit 2, ENV_UNDECLARED; see sponson.hcl), a protected one
without an allowed approver (exit 2, ENV_NOT_APPROVED) and a merge queue run
(exit 2, CTX_NULL: plan only). It takes the scope's lease (exit 3, LOCK_HELD,
when another run holds it; --wait queues behind it), then refuses a commit that
is an ancestor of the one the scope last applied (exit 2, OLDER_COMMIT; pass
--allow-older-commit to roll back on purpose), and serves the scope's own state
to the engine through a state server whose every write is fenced by the lease. It runs init and plan,
then refuses before the engine writes anything when the plan changes a resource
another scope of the environment owns (exit 1, OWNED_BY_OTHER_SCOPE) or writes
production without a named approver (exit 2, ENV_NOT_APPROVED: pass
--approved-by). It records every create as an intent, leases the shared parent
objects the plan touches, applies, and writes a receipt listing what the scope
owns. A pull request scope with no receipt takes over what its head branch's
scope created (succession).

apply FILE applies the saved plan of `+"`sponson plan -out FILE`"+` under the scope's
lease instead of planning. Before anything is written it is refused with
PLAN_STALE (exit 2), naming what changed, the run and scope that changed it and
when, if the scope's state or its predecessor's changed since the plan, the
state of another stack whose outputs the plan read (sponson_outputs) changed,
another scope has come to own or intend an object the plan touches, or the stack,
environment, scope or commit differ; the ownership and approval checks run again
on the plan itself. -var and engine flags cannot be given with FILE.

apply DIR applies the plans of `+"`sponson plan --all|--changed -out DIR`"+`: it
checks the manifest's seal and every plan's digest first (PLAN_CORRUPT, exit 2,
when a plan was replaced, added or removed, or the plan of many stacks did not
finish), then applies each stack's plan as apply FILE does, in the order of the
plans, stacks without a dependency between them at the same time. A stack whose
upstream's apply of its plan in DIR changed the outputs it read is not stale; one
that read an output known only after that apply (provisional) is.`, runF)
}
