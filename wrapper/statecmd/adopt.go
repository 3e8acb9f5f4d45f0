package statecmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/adopt"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// AdoptResult is the result part of the envelope of `sponson adopt`.
type AdoptResult struct {
	RunID       string            `json:"runId"`
	Environment string            `json:"environment"`
	Scope       string            `json:"scope"`
	Store       string            `json:"store"`
	Owns        int               `json:"owns"`
	AdoptedFrom *receipt.Adoption `json:"adoptedFrom,omitempty"`
	Context     runctx.Context    `json:"context"`
	Receipt     *receipt.Receipt  `json:"receipt,omitempty"`
}

// AdoptOptions are the options of `sponson adopt`.
type AdoptOptions struct {
	*cmdutil.IO
	cmdutil.RunFlags
	// Workspace is the workspace of the configuration's backend to adopt.
	Workspace string
	// approval and in are what the flags resolve to, before the run.
	approval scopeedit.Approval
	in       *runner.RunInput
}

// NewCmdAdopt builds `sponson adopt`.
func NewCmdAdopt(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	opts := &AdoptOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "adopt [flags]",
		Short: "Take the state the configuration's own backend holds into a scope of the store",
		Long: `Adopt reads the state of the configuration's own backend (the backend block it
declares: s3, gcs, azurerm, local, ...; the local terraform.tfstate without one)
through the engine (init and state pull, in a data directory of its own), and
writes it into the run's scope of the Sponson store under that scope's lease,
with the ledger built from it and a receipt recording where it came from
(backend, workspace, lineage, serial, SHA-256). It refuses a scope that already
has state or owns resources (exit 2, SCOPE_HAS_STATE), and a state whose
resources another scope of the environment owns (exit 1, OWNED_BY_OTHER_SCOPE).

The old backend is never changed or deleted. To retire it, remove the backend
block from the configuration (sponson then serves the adopted, fenced state),
run 'sponson plan' to see no changes, and delete the old state when you no
longer need it (see docs/guides/adopt.md).

In a protected environment (production, or one sponson.hcl protects) adopting
gives the scope what the state holds outside a plan: it needs --approved-by
NAME (env SPONSON_APPROVED_BY), one sponson.hcl allows, or it is refused
(exit 2, ENV_NOT_APPROVED) before the engine starts or anything is leased or
written; the receipt records the approver.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) (err error) {
			opts.approval, err = cmdutil.EditApproval(opts.Getenv, opts.Chdir, cmdutil.FlagEnvironment(opts.Getenv, opts.Env), adopt.Command, opts.ApprovedBy)
			if err != nil {
				return err
			}
			opts.in, err = runner.ResolveRun(&opts.RunFlags, cmd, f, scoperun.Command(adopt.Command), nil)
			return err
		}, nil, runAdopt),
	}
	opts.Bind(cmd, true)
	cmd.Flags().StringVar(&opts.Workspace, "from-workspace", "default", "the workspace of the configuration's backend to adopt")
	return cmd
}

func runAdopt(ctx context.Context, opts *AdoptOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: adopt.Command}
	in := opts.in
	defer in.Opts.Store.Close()
	p := cmdutil.Printer{W: opts.Out}
	engineOut := opts.Out
	if opts.JSON {
		p.W, engineOut = opts.ErrOut, opts.ErrOut
	}
	warnOut := cmdutil.Printer{W: opts.ErrOut}
	runID := scoperun.NewRunID()
	c := in.Opts.Context
	p.Line("%s", cmdutil.Header(adopt.Command, c.Environment, c.Scope, runID))
	res, err := adopt.Run(ctx, adopt.Options{
		Dir: in.Opts.Dir, Context: c, Store: in.Opts.Store, Engine: in.Opts.Engine,
		ProviderVersion: in.Opts.ProviderVersion,
		Lease:           in.Opts.Lease, RunID: runID, Workspace: opts.Workspace, EngineOut: engineOut, Declared: in.Opts.Declared,
		Approval:      opts.approval,
		ServeProvider: in.Opts.ServeProvider,
		Warn:          func(s string) { warnOut.Warn(s); o.Warnings = append(o.Warnings, s) },
	})
	r := AdoptResult{RunID: runID, Environment: c.Environment, Scope: c.Scope, Store: in.StoreURL, Context: c, Receipt: res.Receipt}
	if res.Receipt != nil {
		r.Owns, r.AdoptedFrom = len(res.Receipt.Ledger), res.Receipt.AdoptedFrom
	}
	o.Result, o.Err = r, err
	if err == nil {
		p.Line("%s", fmt.Sprintf("sponson adopt %s/%s: adopted the %s backend's state (workspace %s, serial %d); the scope owns %d resources; receipt %s. The old backend is unchanged: remove its block from the configuration to let sponson serve the state.",
			c.Environment, c.Scope, r.AdoptedFrom.Backend, r.AdoptedFrom.Workspace, r.AdoptedFrom.Serial, r.Owns, runID))
	}
	return o
}
