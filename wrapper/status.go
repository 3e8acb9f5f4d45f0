package wrapper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

func (s *StoreFlags) open(cmd *cobra.Command, f *Factory) (store.Store, string, string, error) {
	if err := bindEnv(cmd.Flags(), runFlagEnv, f.Getenv); err != nil {
		return nil, "", "", err
	}
	env := s.Env
	if env == "" {
		env = strings.TrimSpace(f.Getenv("SPONSON_CTX_ENV"))
	}
	if env == "" {
		env = runctx.DefaultEnvironment
	}
	if err := runctx.ValidName("environment", env); err != nil {
		return nil, "", "", err
	}
	dir := s.Chdir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", "", errcode.Wrap(errcode.Usage, err, "--chdir %q", s.Chdir)
	}
	// The same names as plan and apply: --env Production reads production.
	decl, err := declaredEnvironment(cmd.Context(), f, dir, runctx.Context{Environment: env})
	if err != nil {
		return nil, "", "", err
	}
	env = decl.Name
	st, url, err := storeurl.OpenFor(s.Store, dir, env)
	return st, url, env, err
}

// StatusOptions are the options of `sponson status`.
type StatusOptions struct {
	StoreFlags
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
	ExpiredLease *store.LeaseInfo `json:"expiredLease,omitempty"`
	LastRun      *RunSummary      `json:"lastRun,omitempty"`
	Owns         int              `json:"owns"`
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

// RunSummary is a receipt in one line.
type RunSummary struct {
	RunID       string    `json:"runId"`
	Command     string    `json:"command"`
	Status      string    `json:"status"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
	StartedAt   time.Time `json:"startedAt"`
	Commit      string    `json:"commit,omitempty"`
	Branch      string    `json:"branch,omitempty"`
	PullRequest int       `json:"pullRequest,omitempty"`
	ApprovedBy  string    `json:"approvedBy,omitempty"`
}

// summarize returns the one-line form of a receipt, nil for none.
func summarize(r *receipt.Receipt) *RunSummary {
	if r == nil {
		return nil
	}
	return &RunSummary{
		RunID: r.RunID, Command: r.Command, Status: r.Status, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Commit: r.Commit, Branch: r.Branch, PullRequest: r.PullRequest, ApprovedBy: r.ApprovedBy,
	}
}

// when is the time the run finished, or started if it never finished.
func (r *RunSummary) when() time.Time {
	if r.FinishedAt.IsZero() {
		return r.StartedAt
	}
	return r.FinishedAt
}

// outcomeText is the run's outcome in a word or two: the status alone when
// it names the command (applied, destroyed), else command and status
// ("apply failed", "destroy running"); an unlock says so, with the outcome
// of the run before it ("unlocked (last run failed)").
func (r *RunSummary) outcomeText() string {
	if r.Command == "unlock" {
		// An unlock's receipt carries the scope's standing, the outcome of
		// the run before it (unlockReceipt): "unlock failed" read as if the
		// unlock had failed (issue 52).
		return "unlocked (last run " + r.Status + ")"
	}
	switch r.Status {
	case receipt.StatusApplied, receipt.StatusUnchanged, receipt.StatusDestroyed:
		return r.Status
	}
	return r.Command + " " + r.Status
}

// shortCommit abbreviates a commit to 7 characters, as git shows it.
func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

// orDash shows an empty cell as "-" so that columns stay readable.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// NewCmdStatus builds `sponson status`.
func NewCmdStatus(f *Factory, out *outcome, runF func(context.Context, *StatusOptions) outcome) *cobra.Command {
	opts := &StatusOptions{}
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
		RunE: runE(f, out, opts, nil, runF, runStatus),
	}
	opts.bind(cmd)
	bindStack(cmd, &opts.Stack, "show only this stack (default: every stack of the environment)")
	return cmd
}

func runStatus(cmd *cobra.Command, f *Factory, opts *StatusOptions) outcome {
	o := outcome{command: "status"}
	st, url, env, err := opts.open(cmd, f)
	if err != nil {
		o.err = err
		return o
	}
	defer st.Close()
	scopes, err := store.ListScopes(cmd.Context(), st, env, opts.Stack)
	if err != nil {
		o.err = err
		return o
	}
	rows := statusRows(scopes, time.Now())
	res := map[string]any{"environment": env, "store": url, "scopes": rows}
	if opts.Stack != "" {
		res["stack"] = opts.Stack
	}
	o.result = res
	if jsonMode, _ := cmd.Flags().GetBool("json"); jsonMode || wantsJSON(nil, f.Getenv) {
		return o
	}
	fmt.Fprintf(f.Out, "environment %s · store %s\n", env, url)
	if len(rows) == 0 {
		fmt.Fprintln(f.Out, "no scopes yet")
		return o
	}
	// One table per stack, under its name: a monorepo's root modules have
	// scopes of the same names.
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Stack == rows[i].Stack {
			j++
		}
		fmt.Fprintf(f.Out, "stack %s\n", orDash(rows[i].Stack))
		writeStatusTable(f.Out, rows[i:j])
		i = j
	}
	return o
}

// statusRows turns the store's listing into the rows of status.
func statusRows(scopes []store.ScopeSummary, now time.Time) []ScopeStatus {
	rows := []ScopeStatus{}
	for _, s := range scopes {
		row := ScopeStatus{Stack: s.Key.Stack, Scope: s.Key.Scope}
		if l := s.Lease; l.Live(now) {
			row.Lease = &l
		} else if l.Holder != "" {
			row.ExpiredLease = &l
		}
		if r := s.Latest; r != nil {
			row.LastRun = summarize(r)
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

// writeStatusTable prints one line per scope, within about 105 columns for
// CI logs: times to the minute, commits short, run ids only where a lease
// names one (sponson receipt shows the rest). Lineage, rare and long, goes
// on an indented line under its scope rather than into a column.
func writeStatusTable(w io.Writer, rows []ScopeStatus) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tOWNS\tLAST RUN\tAT\tCOMMIT\tBY\tLEASE")
	notes := make([][]string, len(rows))
	for i, r := range rows {
		last, at, commit, by := "-", "-", "-", "-"
		if lr := r.LastRun; lr != nil {
			last = lr.outcomeText()
			at = lr.when().Local().Format("2006-01-02 15:04")
			commit = orDash(shortCommit(lr.Commit))
			by = orDash(lr.ApprovedBy)
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
