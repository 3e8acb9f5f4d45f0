package statuscmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// ResolveOptions are the options of `sponson resolve`.
type ResolveOptions struct {
	ReceiptOptions
	// Addresses are the resource instances resolved: the arguments.
	Addresses []string
	ID        string
	Gone      bool
	Wait      bool
	// ApprovedBy is the approver resolve needs in a protected environment
	// (editApproval).
	ApprovedBy string
}

// NewCmdResolve builds `sponson resolve`. runF replaces the run in tests.
func NewCmdResolve(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *ResolveOptions) cmdutil.Outcome) *cobra.Command {
	opts := &ResolveOptions{ReceiptOptions: ReceiptOptions{IO: f.IO()}}
	cmd := &cobra.Command{
		Use:   "resolve ADDRESS... (--gone | --id ID)",
		Short: "Say what became of objects a crashed run may have created",
		Long: `A run that is killed while the engine creates objects cannot always tell which
creates happened: the engine had started them, reported no completion, and
saved no state. The next run keeps each such object in the scope's ledger as
"unresolved" (no other scope may take it, and this scope will not create it a
second time) and lists it in 'sponson status' and 'sponson receipt'.

Resolve records what a person found, under the scope's lease, without
starting the engine:

  --gone      the object does not exist: the entry leaves the ledger and the
              next apply creates it;
  --id ID     the object exists with this id: the next apply adopts it (an
              import by that id, after the ownership check) instead of
              creating it again.

Either way the scope's ledger changes outside a plan: in a protected
environment (production, or one sponson.hcl protects) resolve needs
--approved-by NAME (env SPONSON_APPROVED_BY), one sponson.hcl allows, as an
apply does. Without it, ENV_NOT_APPROVED (exit 2) before the lease is taken or
anything is written; the receipt records the approver.`,
		Args: cobra.MinimumNArgs(1),
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, args []string) error {
			opts.Addresses = args
			return opts.Prepare(cmd, opts.Getenv)
		}, runF, runResolve),
	}
	opts.StoreFlags.Bind(cmd)
	fs := cmd.Flags()
	// resolve has had no --stack: its stack is detected (or SPONSON_STACK).
	noStack := cmdutil.ReadContextHelp
	noStack.Stack = ""
	opts.ContextFlags.Bind(cmd, noStack)
	fs.StringVar(&opts.ID, "id", "", "the object exists with this `ID`: the next apply adopts it")
	fs.BoolVar(&opts.Gone, "gone", false, "the object does not exist: forget the intent")
	fs.BoolVar(&opts.Wait, "wait", false, "wait for the scope's lease when another run holds it")
	cmdutil.BindApprovedBy(cmd, &opts.ApprovedBy, "the resolution")
	return cmd
}

func runResolve(ctx context.Context, opts *ResolveOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "resolve"}
	st, key, err := opts.scopeKey(ctx)
	if err != nil {
		o.Err = err
		return o
	}
	defer st.Close()
	approval, err := cmdutil.EditApproval(opts.Getenv, opts.Chdir, key.Environment, "resolve", opts.ApprovedBy)
	if err != nil {
		o.Err = err
		return o
	}
	declared, err := cmdutil.DeclaredIdentity(ctx, opts.Getenv, opts.Chdir, key.Environment)
	if err != nil {
		o.Err = err
		return o
	}
	rec, err := scopeedit.Resolve(ctx, scopeedit.Options{
		Store: st, Key: key, RunID: scoperun.NewRunID(), Actor: runctx.DetectJob(opts.Getenv).Actor, Approval: approval,
		Lease: lease.Config{TTL: lease.DefaultTTL, Wait: opts.Wait, WaitTimeout: lease.DefaultTTL},
		Warn:  func(w string) { fmt.Fprintf(opts.ErrOut, "warning: %s\n", w) },
	}, scopeedit.Resolution{Addresses: opts.Addresses, ID: opts.ID, Gone: opts.Gone, Declared: declared})
	if err != nil {
		o.Err = err
		return o
	}
	o.Result = rec
	if !opts.JSON {
		for _, s := range rec.Settled {
			fmt.Fprintf(opts.Out, "%s/%s: %s %s%s\n", key.Environment, key.Scope, s.Address, s.Outcome, settledNote(s))
		}
	}
	return o
}
