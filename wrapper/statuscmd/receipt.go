package statuscmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// ReceiptOptions are the options of `sponson receipt`.
type ReceiptOptions struct {
	*cmdutil.IO
	cmdutil.StoreFlags
	cmdutil.ContextFlags
}

// NewCmdReceipt builds `sponson receipt`.
func NewCmdReceipt(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *ReceiptOptions) cmdutil.Outcome) *cobra.Command {
	opts := &ReceiptOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "receipt [flags]",
		Short: "Print a scope's latest receipt and what the scope owns",
		Long: `Receipt prints the latest receipt of the run's scope (detected as for apply, or
named with --scope, --pr or --branch) of the configuration's stack (detected as
for apply, or named with --stack): the last run (command, outcome, times,
branch, pull request, commit, approver, engine), where the scope's resources
came from or went (inherited from, superseded by), and the scope's ledger.
With --json the receipt document itself is the result. A run under way, or one
killed during its apply, shows its checkpoint (status "running") with the
creates its journal recorded as complete so far joined in (completedCreates).

A destroyed scope keeps its last receipt: it is the record that the scope is
gone, with an empty ledger.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return opts.Prepare(cmd, opts.Getenv)
		}, runF, runReceipt),
	}
	opts.StoreFlags.Bind(cmd)
	opts.ContextFlags.Bind(cmd, cmdutil.ReadContextHelp)
	return cmd
}

func runReceipt(ctx context.Context, opts *ReceiptOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "receipt"}
	st, key, err := opts.scopeKey(ctx)
	if err != nil {
		o.Err = err
		return o
	}
	defer st.Close()
	r, err := store.Latest(ctx, st, key)
	if err != nil {
		o.Err = err
		return o
	}
	if r == nil {
		o.Err = errcode.New(errcode.Usage, "scope %s has no receipt", key).WithHint("Check --env and --scope; `sponson status` lists the scopes that have one.")
		return o
	}
	o.Result = r
	if opts.JSON {
		return o
	}
	WriteReceipt(opts.Out, r)
	return o
}

// scopeKey opens the store and names the scope the flags select, detected
// as for apply where they name none.
func (opts *ReceiptOptions) scopeKey(ctx context.Context) (store.Store, store.Key, error) {
	st, _, env, err := opts.Open(ctx, opts.Getenv)
	if err != nil {
		return nil, store.Key{}, err
	}
	key, err := opts.Detect(opts.Getenv, opts.Chdir, env)
	if err != nil {
		st.Close()
		return nil, store.Key{}, err
	}
	return st, key, nil
}

// WriteReceipt prints a receipt for humans: what ran where, its context,
// lineage and outcome, then the ledger.
func WriteReceipt(w io.Writer, r *receipt.Receipt) {
	rs := cmdutil.Summarize(r)
	fmt.Fprintf(w, "%s/%s · %s · %s\n", r.Environment, r.Scope, rs.OutcomeText(), r.RunID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if r.Stack != "" {
		fmt.Fprintf(tw, "stack\t%s\n", r.Stack)
	}
	ran := "started " + r.StartedAt.Local().Format("2006-01-02 15:04:05")
	if !r.FinishedAt.IsZero() {
		ran += fmt.Sprintf(", finished %s (%s)", r.FinishedAt.Local().Format("15:04:05"), r.FinishedAt.Sub(r.StartedAt).Round(time.Second))
	}
	fmt.Fprintf(tw, "run\t%s %s\n", r.Command, ran)
	var ctx []string
	if r.Branch != "" {
		ctx = append(ctx, "branch "+r.Branch)
	}
	if r.PullRequest > 0 {
		ctx = append(ctx, fmt.Sprintf("pull request #%d", r.PullRequest))
	}
	if r.Commit != "" {
		ctx = append(ctx, "commit "+cmdutil.ShortCommit(r.Commit))
	}
	if r.ApprovedBy != "" {
		ctx = append(ctx, "approved by "+r.ApprovedBy)
	}
	if len(ctx) > 0 {
		fmt.Fprintf(tw, "context\t%s\n", strings.Join(ctx, " · "))
	}
	if r.Engine.Name != "" {
		fmt.Fprintf(tw, "engine\t%s %s\n", r.Engine.Name, r.Engine.Version)
	}
	if a := r.AllowedOlderCommit; a != nil {
		if a.Newer != "" {
			fmt.Fprintf(tw, "rolled back\tfrom commit %s (run %s), with --allow-older-commit\n", cmdutil.ShortCommit(a.Newer), a.NewerRun)
		} else {
			fmt.Fprintf(tw, "rolled back\tno: --allow-older-commit was given, and the commit was not older\n")
		}
	}
	if r.InheritedFrom != "" {
		fmt.Fprintf(tw, "inherited\tfrom %s\n", r.InheritedFrom)
	}
	if r.SupersededBy != "" {
		fmt.Fprintf(tw, "superseded\tby %s: its resources moved there\n", r.SupersededBy)
	}
	if p := r.LockPreempted; p != nil {
		fmt.Fprintf(tw, "lease\ttook over from %s (held since %s, expired %s)\n", p.Holder, p.Since.Local().Format("15:04:05"), p.Until.Local().Format("15:04:05"))
	}
	if len(r.Changes) > 0 {
		fmt.Fprintf(tw, "changes\t%s\n", changeSummary(r.Changes))
	}
	for _, st := range r.Settled {
		fmt.Fprintf(tw, "settled\t%s %s (intent of %s)%s\n", st.Address, st.Outcome, st.FromRun, settledNote(st))
	}
	for _, e := range r.Released {
		fmt.Fprintf(tw, "released\t%s (%s): no longer managed by any scope, not destroyed\n", e.Address, e.ID)
	}
	tw.Flush()
	if r.Error != nil {
		fmt.Fprintf(w, "error %s: %s\n", r.Error.Code, r.Error.Message)
	}
	if len(r.Ledger) == 0 {
		fmt.Fprintln(w, "owns nothing")
		return
	}
	fmt.Fprintf(w, "owns %d resources:\n", len(r.Ledger))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range r.Ledger {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Address, e.ID, e.CreatedBy)
	}
	tw.Flush()
}

func settledNote(st receipt.Settlement) string {
	switch {
	case st.Note != "":
		return ": " + st.Note
	case st.ID != "":
		return ", id " + st.ID
	}
	return ""
}

// changeSummary counts a receipt's planned actions as the engine does: a
// replacement is one to add and one to destroy.
func changeSummary(changes []receipt.Change) string {
	var add, change, destroy int
	for _, c := range changes {
		for _, a := range c.Actions {
			switch a {
			case "create":
				add++
			case "update":
				change++
			case "delete":
				destroy++
			}
		}
	}
	return fmt.Sprintf("%d to add, %d to change, %d to destroy", add, change, destroy)
}
