// Package runcmd is the runs family: plan, apply, destroy and import, each
// also over many stacks (--all, --changed).
package runcmd

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/sponson/terraform-provider-sponson/internal/engineflag"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/manystacks"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// newRunCmd builds plan, apply and destroy, which differ only in words.
func newRunCmd(f *cmdutil.Factory, out *cmdutil.Outcome, command scoperun.Command, short, long string, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) *cobra.Command {
	var flags cmdutil.RunFlags
	var review cmdutil.ReviewFlags
	var sel manystacks.StackSelection
	cmd := &cobra.Command{
		Use:   string(command) + " [flags]",
		Short: short,
		Long:  long + "\n\n" + manystacks.ManyStacksHelp(command) + "\n\n" + engineflag.Help(string(command)),
		// runF replaces the run once the flags are resolved (runCommand),
		// not the command: runE gets none.
		RunE: cmdutil.RunECmd(f, out, &flags, func(_ *cobra.Command, args []string) error {
			flags.Positional = args
			return nil
		}, nil, func(cmd *cobra.Command, f *cmdutil.Factory, flags *cmdutil.RunFlags) cmdutil.Outcome {
			if sel.Wanted() {
				return manystacks.RunStacksCommand(cmd, f, flags, &review, &sel, command, flags.Positional)
			}
			return cmdutil.UnlessFailed(string(command), sel.CheckOne(cmd), func() cmdutil.Outcome {
				return runCommand(cmd, f, flags, &review, command, flags.Positional, runF)
			})
		}),
	}
	flags.Bind(cmd, command != scoperun.Plan)
	review.Bind(cmd)
	sel.Bind(cmd, command)
	return cmd
}

// runCommand resolves the flags of plan, apply or destroy and performs the
// run (or runF, in tests).
func runCommand(cmd *cobra.Command, f *cmdutil.Factory, flags *cmdutil.RunFlags, review *cmdutil.ReviewFlags, command scoperun.Command, args []string, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) cmdutil.Outcome {
	in, err := runner.ResolveRun(flags, cmd, f, command, args)
	if err != nil {
		return cmdutil.Outcome{Command: string(command), Err: err, DetailedExitcode: flags.EngineArgs.DetailedExitcode || runner.DetailedRequested(cmd)}
	}
	if err := cmdutil.BindEnv(cmd.Flags(), cmdutil.ReviewFlagEnv, f.Getenv); err != nil {
		return cmdutil.Outcome{Command: string(command), Err: err}
	}
	in.Review = *review
	jsonMode, _ := cmd.Flags().GetBool("json")
	jsonMode = jsonMode || cmdutil.WantsJSON(nil, f.Getenv)
	if runF != nil {
		return runF(cmd.Context(), in)
	}
	return runner.RunScope(cmd.Context(), f, jsonMode, in)
}
