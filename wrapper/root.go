// Package wrapper is the `sponson` command line's root: the command tree
// built from the command families (one package each under wrapper/), the
// reading of the engine's own argument grammar (NormalizeArgs), and Run,
// which prints every outcome (docs/design.md §4).
package wrapper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/secrets"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/driftcmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/enginecmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/gccmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/mcpcmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/policycmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/providercmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/runcmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
	"github.com/sponson/terraform-provider-sponson/wrapper/servecmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/stackscmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/statecmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/statuscmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/storecmd"
)

// Main runs the sponson command line of the real process.
func Main() errcode.ExitCode {
	cmdutil.CloseProgressOnExec(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], cmdutil.NewFactory())
}

// Run executes one command line and prints its outcome: the summary in human
// mode, exactly one JSON document on Out with --json, whatever happens
// (flag errors and panics included).
func Run(ctx context.Context, args []string, f *cmdutil.Factory) errcode.ExitCode {
	return runWith(ctx, args, f, nil)
}

// runWith is Run with the run function of plan, apply and destroy replaced
// (nil: the real one), the seam of the command tests.
func runWith(ctx context.Context, args []string, f *cmdutil.Factory, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) (code errcode.ExitCode) {
	args = NormalizeArgs(args)
	jsonMode := cmdutil.WantsJSON(args, f.Getenv)
	var result cmdutil.Outcome
	defer func() {
		if p := recover(); p != nil {
			result = cmdutil.Outcome{Command: commandName(args), Err: errcode.New(errcode.Internal, "panic: %v", p).With("stack", string(debug.Stack()))}
			code = finish(f, jsonMode, result)
		}
	}()
	if err := secrets.Err(); err != nil {
		// The keys given cannot be read: no command may run without them.
		return finish(f, jsonMode, cmdutil.Outcome{Command: commandName(args), Err: err})
	}
	root := newCmdRoot(f, &result, runF)
	root.SetArgs(args)
	root.SetOut(f.Out)
	root.SetErr(f.ErrOut)
	err := root.ExecuteContext(ctx)
	if err != nil && result.Err == nil {
		// Errors cobra returns itself: unknown commands and flags.
		result.Err = usageError(err)
		var name string
		if n, serr := fmt.Sscanf(err.Error(), "unknown command %q for \"sponson\"", &name); n == 1 && serr == nil {
			e := enginecmd.UnknownCommand(name)
			if s := root.SuggestionsFor(name); len(s) > 0 {
				e.Hint = fmt.Sprintf("Did you mean `sponson %s`? ", s[0]) + e.Hint
			}
			result.Err = e
		}
		if result.Command == "" {
			result.Command = commandName(args)
		}
	}
	if result.Command == "" {
		return errcode.ExitOK // help or a bare `sponson`: cobra printed it
	}
	if result.Err != nil && result.Command == engineflagPlan && runner.DetailedInArgs(args) {
		result.DetailedExitcode = true
	}
	return finish(f, jsonMode, result)
}

func finish(f *cmdutil.Factory, jsonMode bool, o cmdutil.Outcome) errcode.ExitCode {
	cmdutil.AnnotateOutcome(f.IO(), o)
	if jsonMode {
		return cmdutil.WriteEnvelope(f.Out, o)
	}
	if o.Err != nil {
		cmdutil.WriteHumanError(f.ErrOut, o.Err)
	}
	return o.Exit()
}

func usageError(err error) error {
	var e *errcode.Error
	if errors.As(err, &e) {
		return e
	}
	return errcode.New(errcode.Usage, "%s", err.Error())
}

// NewCmdRoot builds the command tree. Commands report their outcome through
// out rather than printing the final result themselves.
func NewCmdRoot(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	return newCmdRoot(f, out, nil)
}

func newCmdRoot(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) *cobra.Command {
	root := &cobra.Command{
		Use:   "sponson",
		Short: "Run OpenTofu or Terraform per pull request scope, with fenced leases",
		Long: `sponson runs OpenTofu or Terraform in a scope of an environment: pr-<n> in a pull
request, main on the default branch, branch-<name> elsewhere. Each scope has its
own state, receipts and lease; a run that lost its lease can write nothing.

Use 'sponson apply' where a pipeline used 'terraform apply'.

` + enginecmd.EngineTableHelp(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().Bool("json", false, "print exactly one JSON document on stdout for every outcome (env SPONSON_JSON)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		out.Command = c.Name()
		return errcode.New(errcode.Usage, "%s", err.Error()).WithHint(fmt.Sprintf("Run `%s --help` to see its flags.", c.CommandPath()))
	})
	for _, c := range []*cobra.Command{
		runcmd.NewCmdPlan(f, out, runF),
		runcmd.NewCmdApply(f, out, runF),
		runcmd.NewCmdDestroy(f, out, runF),
		statuscmd.NewCmdStatus(f, out, nil),
		statuscmd.NewCmdReceipt(f, out, nil),
		runcmd.NewCmdImport(f, out, runF),
		statecmd.NewCmdOutput(f, out, nil),
		statecmd.NewCmdState(f, out),
		statuscmd.NewCmdUnlock(f, out, nil),
		statuscmd.NewCmdResolve(f, out, nil),
		gccmd.NewCmdGC(f, out, nil),
		driftcmd.NewCmdDrift(f, out, nil),
		statecmd.NewCmdAdopt(f, out),
		mcpcmd.NewCmdMCP(f, out),
		providercmd.NewCmdProvider(f, out),
		storecmd.NewCmdMigrate(f, out, nil),
		storecmd.NewCmdGrants(f, out, nil),
		storecmd.NewCmdStore(f, out),
		stackscmd.NewCmdStacks(f, out, nil),
		servecmd.NewCmdServe(f, out, nil),
		enginecmd.NewCmdVersion(f, out),
		policycmd.NewCmdPolicy(policycmd.IO{Out: f.Out, ErrOut: f.ErrOut, Getenv: f.Getenv}, func(c string, r any, err error) { *out = cmdutil.Outcome{Command: c, Result: r, Err: err} }, nil),
	} {
		root.AddCommand(c)
	}
	// The engine's commands run as the engine would; show and force-unlock
	// give two of them their meaning under sponson.
	root.AddCommand(enginecmd.NewCmdEngine(f, out)...)
	root.AddCommand(statecmd.NewCmdShow(f, out), statuscmd.NewCmdForceUnlock(f, out))
	return root
}

func commandName(args []string) string {
	if at := commandAt(args); at >= 0 {
		return args[at]
	}
	return "sponson"
}
