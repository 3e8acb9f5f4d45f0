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

// runOptions are what plan, apply and destroy read from their command line:
// the flags, and once prepared either the run of one stack or of many.
type runOptions struct {
	flags  cmdutil.RunFlags
	review cmdutil.ReviewFlags
	sel    manystacks.StackSelection
	// in is the run of one stack, many that of --all or --changed; err
	// stops the command before either starts.
	in   *runner.RunInput
	many *manystacks.Prepared
	err  error
}

// newRunCmd builds plan, apply and destroy, which differ only in words.
func newRunCmd(f *cmdutil.Factory, out *cmdutil.Outcome, command scoperun.Command, short, long string, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) *cobra.Command {
	opts := &runOptions{}
	if runF == nil {
		runF = runner.RunScope
	}
	cmd := &cobra.Command{
		Use:   string(command) + " [flags]",
		Short: short,
		Long:  long + "\n\n" + manystacks.ManyStacksHelp(command) + "\n\n" + engineflag.Help(string(command)),
		// runF replaces the run once the flags are resolved (prepare), not
		// the command: RunE gets none.
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, args []string) error {
			opts.flags.Positional = args
			opts.prepare(cmd, f, command)
			return nil
		}, nil, func(ctx context.Context, opts *runOptions) cmdutil.Outcome {
			switch {
			case opts.many != nil:
				return opts.many.Run(ctx)
			case opts.err != nil:
				return cmdutil.Outcome{Command: string(command), Err: opts.err, DetailedExitcode: opts.flags.EngineArgs.DetailedExitcode}
			}
			return runF(ctx, opts.in)
		}),
	}
	opts.flags.Bind(cmd, command != scoperun.Plan)
	opts.review.Bind(cmd)
	opts.sel.Bind(cmd, command)
	return cmd
}

// prepare resolves the flags of plan, apply or destroy into the run of
// many stacks, or of one.
func (opts *runOptions) prepare(cmd *cobra.Command, f *cmdutil.Factory, command scoperun.Command) {
	if command == scoperun.Apply && !opts.sel.Wanted() && manystacks.IsPlanSet(opts.flags.Positional) {
		opts.many = manystacks.PreparePlanSet(cmd, f, &opts.flags, &opts.review, &opts.sel, opts.flags.Positional[0])
		return
	}
	if opts.sel.Wanted() {
		opts.many = manystacks.PrepareStacks(cmd, f, &opts.flags, &opts.review, &opts.sel, command, opts.flags.Positional)
		return
	}
	if opts.err = opts.sel.CheckOne(cmd); opts.err != nil {
		return
	}
	opts.in, opts.err = runner.ResolveRun(&opts.flags, cmd, f, command, opts.flags.Positional)
	if opts.err != nil {
		opts.flags.EngineArgs.DetailedExitcode = opts.flags.EngineArgs.DetailedExitcode || runner.DetailedRequested(cmd)
		return
	}
	if opts.err = cmdutil.BindEnv(cmd.Flags(), cmdutil.ReviewFlagEnv, f.Getenv); opts.err != nil {
		opts.in.Opts.Store.Close()
		return
	}
	opts.in.Review = opts.review
}
