package cmdutil

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
)

// The approval of the commands that change what a protected environment
// owns outside a plan (docs/design.md §2.11 Approval): state rm, mv and
// push, import, resolve, adopt, unlock and force-unlock. Each binds
// --approved-by with bindApprovedBy and asks editApproval before it
// writes or leases anything; scopeedit.Edit refuses an edit that did not.

// BindApprovedBy binds --approved-by (env SPONSON_APPROVED_BY) to name;
// what says what it approves.
func BindApprovedBy(cmd *cobra.Command, name *string, what string) {
	cmd.Flags().StringVar(name, "approved-by", "", "approver of "+what+" in a protected environment (production, or one sponson.hcl protects), one sponson.hcl allows; needed there, refused with ENV_NOT_APPROVED without it (env SPONSON_APPROVED_BY)")
}

// EditApproval is the approval command needs in environment env of the
// repository of dir: in a protected environment one of its approvers,
// named by flag or else SPONSON_APPROVED_BY (scopeedit.Approve).
func EditApproval(getenv func(string) string, dir, env, command, flag string) (scopeedit.Approval, error) {
	decl, err := DeclaredEnvironment(context.Background(), getenv, dir, runctx.Context{Environment: env})
	if err != nil {
		return scopeedit.Approval{}, err
	}
	name := strings.TrimSpace(flag)
	if name == "" {
		name = getenv("SPONSON_APPROVED_BY")
	}
	return scopeedit.Approve(decl, command, name)
}

// FlagEnvironment is the environment a command runs in before its context
// is detected: --env, else SPONSON_CTX_ENV, else the default, as
// runctx.Detect decides it (the environment is never inferred).
func FlagEnvironment(getenv func(string) string, flag string) string {
	if env := strings.TrimSpace(flag); env != "" {
		return env
	}
	if env := strings.TrimSpace(getenv("SPONSON_CTX_ENV")); env != "" {
		return env
	}
	return runctx.DefaultEnvironment
}
