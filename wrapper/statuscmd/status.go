// Package statuscmd is the family of a scope's records: status, receipt,
// resolve, unlock and force-unlock.
package statuscmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/manystacks"
)

// StatusOptions are the options of `sponson status`.
type StatusOptions struct {
	*cmdutil.IO
	cmdutil.StoreFlags
	// Stack shows one stack; empty shows every stack of the environment.
	Stack string
}

// ScopeStatus is one row of `sponson status --json`.
type ScopeStatus struct {
	Stack string `json:"stack"`
	Scope string `json:"scope"`
	// Lease is the live lease of a run working in the scope.
	Lease *store.LeaseInfo `json:"lease,omitempty"`
	// ExpiredLease is a lease that expired without being released: the run
	// that held it died; the next run takes it over.
	ExpiredLease *store.LeaseInfo    `json:"expiredLease,omitempty"`
	LastRun      *cmdutil.RunSummary `json:"lastRun,omitempty"`
	Owns         int                 `json:"owns"`
	// SupersededBy names the scope the resources moved to; InheritedFrom the
	// scope they came from (DESIGN §2 "Succession").
	SupersededBy  string `json:"supersededBy,omitempty"`
	InheritedFrom string `json:"inheritedFrom,omitempty"`
	// Unresolved lists the addresses whose create a killed run may have
	// made: the scope is not clean until a person resolves them.
	Unresolved []string `json:"unresolved,omitempty"`
	// Released lists objects a removed block let go without destroying
	// them: they exist, and no scope owns them.
	Released []string `json:"released,omitempty"`
	// Reran says what the last run's settlement ran again of a killed
	// run's creates (provisioners, a file written in place), whose first
	// effects the engine does not track (docs/design.md §2.4).
	Reran []string `json:"reran,omitempty"`
}

// NewCmdStatus builds `sponson status`.
func NewCmdStatus(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *StatusOptions) cmdutil.Outcome) *cobra.Command {
	opts := &StatusOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "status [flags]",
		Short: "List the scopes of an environment: lease, last run, what each owns",
		Long: `Status lists every scope of an environment that has a lease record or a
receipt, with:

  OWNS      how many resources the scope owns (its latest receipt's ledger)
  LAST RUN  the latest receipt: outcome, time, commit and approver
  LEASE     the run holding the scope's lease and until when, or "free";
            "expired" names a run that died holding it

and, on a line under the scope, who holds a live lease ("held by run 3c1f2a9b
(job URL, @actor, commit, pull request, host) since 10:02, lease until 10:17"),
"superseded by S" when its resources moved to
scope S, "inherited from S" when they came from S.

Destroyed scopes stay listed: their last receipt is the record that they are
gone. With --json the rows are the result, with full commits and times.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return opts.Prepare(cmd, opts.Getenv)
		}, runF, runStatus),
	}
	opts.Bind(cmd)
	cmdutil.BindStack(cmd, &opts.Stack, "show only this stack (default: every stack of the environment)")
	return cmd
}

func runStatus(ctx context.Context, opts *StatusOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "status"}
	st, url, env, err := opts.Open(ctx, opts.Getenv)
	if err != nil {
		o.Err = err
		return o
	}
	defer st.Close()
	scopes, err := store.ListScopes(ctx, st, env, opts.Stack)
	if err != nil {
		o.Err = err
		return o
	}
	rows := StatusRows(scopes, time.Now())
	gone := goneStacks(opts, rows)
	res := map[string]any{"environment": env, "store": url, "scopes": rows}
	if len(gone) > 0 {
		res["gone"] = gone
	}
	if opts.Stack != "" {
		res["stack"] = opts.Stack
	}
	o.Result = res
	if opts.JSON {
		return o
	}
	fmt.Fprintf(opts.Out, "environment %s · store %s\n", env, url)
	if len(rows) == 0 {
		fmt.Fprintln(opts.Out, "no scopes yet")
		return o
	}
	// One table per stack, under its name: a monorepo's root modules have
	// scopes of the same names.
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Stack == rows[i].Stack {
			j++
		}
		fmt.Fprintf(opts.Out, "stack %s\n", cmdutil.OrDash(rows[i].Stack))
		if d, ok := gone[rows[i].Stack]; ok {
			fmt.Fprintf(opts.Out, "  its directory %s is gone from this checkout and it holds state: a run of the change that removed it (plan|apply --changed) destroys it, or `sponson destroy` in a checkout that still has it\n", d)
		}
		WriteStatusTable(opts.Out, rows[i:j])
		i = j
	}
	return o
}

// StatusRows turns the store's listing into the rows of status.
func StatusRows(scopes []store.ScopeSummary, now time.Time) []ScopeStatus {
	rows := []ScopeStatus{}
	for _, s := range scopes {
		row := ScopeStatus{Stack: s.Key.Stack, Scope: s.Key.Scope}
		if l := s.Lease; l.Live(now) {
			row.Lease = &l
		} else if l.Holder != "" {
			row.ExpiredLease = &l
		}
		if r := s.Latest; r != nil {
			row.LastRun = cmdutil.Summarize(r)
			row.Owns = len(r.Ledger)
			row.SupersededBy = r.SupersededBy
			row.InheritedFrom = r.InheritedFrom
			for _, e := range r.Ledger {
				if e.CreatedBy == receipt.CreatedByUnresolved {
					row.Unresolved = append(row.Unresolved, e.Described())
				}
			}
			for _, e := range r.Released {
				row.Released = append(row.Released, fmt.Sprintf("%s (id %s)", e.Address, e.ID))
			}
			for _, st := range r.Settled {
				if st.Rerun != "" {
					row.Reran = append(row.Reran, st.Rerun)
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// WriteStatusTable prints one line per scope, within about 105 columns for
// CI logs: times to the minute, commits short, run ids only where a lease
// names one (sponson receipt shows the rest). Lineage, rare and long, goes
// on an indented line under its scope rather than into a column.
func WriteStatusTable(w io.Writer, rows []ScopeStatus) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tOWNS\tLAST RUN\tAT\tCOMMIT\tBY\tLEASE")
	notes := make([][]string, len(rows))
	for i, r := range rows {
		last, at, commit, by := "-", "-", "-", "-"
		if lr := r.LastRun; lr != nil {
			last = lr.OutcomeText()
			at = lr.When().Local().Format("2006-01-02 15:04")
			commit = cmdutil.OrDash(cmdutil.ShortCommit(lr.Commit))
			by = cmdutil.OrDash(lr.ApprovedBy)
		}
		leaseCell := "free"
		switch {
		case r.Lease != nil:
			leaseCell = fmt.Sprintf("%s until %s", r.Lease.Holder, r.Lease.ExpiresAt.Local().Format("15:04:05"))
		case r.ExpiredLease != nil:
			leaseCell = fmt.Sprintf("expired (%s)", r.ExpiredLease.Holder)
		}
		if r.Lease != nil && r.Lease.About != (store.HolderInfo{}) {
			notes[i] = append(notes[i], "held by "+lease.Describe(*r.Lease))
		}
		if r.InheritedFrom != "" {
			notes[i] = append(notes[i], "inherited from "+r.InheritedFrom)
		}
		if r.SupersededBy != "" {
			notes[i] = append(notes[i], "superseded by "+r.SupersededBy+": its resources moved there")
		}
		if len(r.Unresolved) > 0 {
			notes[i] = append(notes[i], fmt.Sprintf("NOT CLEAN: %d unresolved (a killed run may have created them): %s; see `sponson resolve --help`", len(r.Unresolved), strings.Join(r.Unresolved, ", ")))
		}
		if len(r.Released) > 0 {
			notes[i] = append(notes[i], "released, owned by no scope: "+strings.Join(r.Released, ", "))
		}
		for _, rerun := range r.Reran {
			notes[i] = append(notes[i], "ran again after a killed run: "+rerun)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Scope, r.Owns, last, at, commit, by, leaseCell)
	}
	tw.Flush()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	fmt.Fprintln(w, lines[0])
	for i, line := range lines[1:] {
		fmt.Fprintln(w, line)
		for _, n := range notes[i] {
			fmt.Fprintf(w, "  ↳ %s\n", n)
		}
	}
}

// goneStacks names, by stack, the directory of each stack of the checkout's
// repository that holds state (a scope whose last run is not a destroy) and
// whose directory is gone (docs/design.md §4.7 "Many stacks", removed stacks).
func goneStacks(opts *StatusOptions, rows []ScopeStatus) map[string]string {
	holding := map[string]bool{}
	var names []string
	for _, r := range rows {
		if r.LastRun != nil && r.LastRun.Status != receipt.StatusDestroyed && r.SupersededBy == "" && !holding[r.Stack] {
			holding[r.Stack] = true
			names = append(names, r.Stack)
		}
	}
	dir := opts.Chdir
	if dir == "" {
		dir = "."
	}
	return manystacks.GoneStacks(opts.Getenv, dir, names)
}
