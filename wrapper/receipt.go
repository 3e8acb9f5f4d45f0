package wrapper

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// ReceiptOptions are the options of `sponson receipt`.
type ReceiptOptions struct {
	StoreFlags
	Scope, PR, Branch string
}

// NewCmdReceipt builds `sponson receipt`.
func NewCmdReceipt(f *Factory, out *outcome, runF func(context.Context, *ReceiptOptions) outcome) *cobra.Command {
	opts := &ReceiptOptions{}
	cmd := &cobra.Command{
		Use:   "receipt [flags]",
		Short: "Print a scope's latest receipt and what the scope owns",
		Long: `Receipt prints the latest receipt of the run's scope (detected as for apply, or
named with --scope, --pr or --branch): the last run and the scope's ledger.
With --json the receipt document itself is the result.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out.command = "receipt"
			if runF != nil {
				*out = runF(cmd.Context(), opts)
				return nil
			}
			*out = runReceipt(cmd, f, opts)
			return nil
		},
	}
	opts.bind(cmd)
	cmd.Flags().StringVar(&opts.Scope, "scope", "", "scope name (env SPONSON_CTX_SCOPE)")
	cmd.Flags().StringVar(&opts.PR, "pr", "", "pull request number: scope pr-<n> (env SPONSON_CTX_PR)")
	cmd.Flags().StringVar(&opts.Branch, "branch", "", "branch: scope main or branch-<name> (env SPONSON_CTX_BRANCH)")
	return cmd
}

func runReceipt(cmd *cobra.Command, f *Factory, opts *ReceiptOptions) outcome {
	o := outcome{command: "receipt"}
	st, _, env, err := opts.open(cmd, f)
	if err != nil {
		o.err = err
		return o
	}
	defer st.Close()
	dir := opts.Chdir
	if dir == "" {
		dir = "."
	}
	src := runctx.ProcessSources(dir)
	src.Getenv = f.Getenv
	c, err := runctx.Detect(runctx.Flags{Environment: env, Scope: opts.Scope, PullRequest: opts.PR, Branch: opts.Branch}, src)
	if err != nil {
		o.err = err
		return o
	}
	key := store.Key{Environment: c.Environment, Scope: c.Scope}
	r, err := st.LatestReceipt(cmd.Context(), key)
	if err != nil {
		o.err = err
		return o
	}
	if r == nil {
		o.err = errcode.New(errcode.Usage, "scope %s has no receipt", key).WithHint("Check --env and --scope; `sponson status` lists the scopes that have one.")
		return o
	}
	o.result = r
	if jsonMode, _ := cmd.Flags().GetBool("json"); jsonMode || wantsJSON(nil, f.Getenv) {
		return o
	}
	fmt.Fprintf(f.Out, "%s/%s · %s %s · %s · started %s\n", r.Environment, r.Scope, r.Command, r.Status, r.RunID, r.StartedAt.Local().Format("2006-01-02 15:04:05"))
	if r.Error != nil {
		fmt.Fprintf(f.Out, "error %s: %s\n", r.Error.Code, r.Error.Message)
	}
	if len(r.Ledger) == 0 {
		fmt.Fprintln(f.Out, "owns nothing")
		return o
	}
	fmt.Fprintf(f.Out, "owns %d resources:\n", len(r.Ledger))
	tw := tabwriter.NewWriter(f.Out, 0, 0, 2, ' ', 0)
	for _, e := range r.Ledger {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Address, e.ID, e.CreatedBy)
	}
	tw.Flush()
	return o
}
