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

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/overview"
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
	OverviewFlags
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
	// MovedTo names the stack this scope's state was moved to (a renamed
	// stack, internal/stackmove), MovedFrom the stack it came from.
	MovedTo   string `json:"movedTo,omitempty"`
	MovedFrom string `json:"movedFrom,omitempty"`
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
receipt, one table per stack, the stacks in dependency order (the order
plan --all runs them in; a stack of the store whose directory is gone comes
last), with:

  OWNS      how many resources the scope owns (its latest receipt's ledger)
  LAST RUN  the latest receipt: outcome, time, commit and approver
  LEASE     the run holding the scope's lease and until when, or "free";
            "expired" names a run that died holding it

and, on a line under the scope, who holds a live lease ("held by run 3c1f2a9b
(job URL, @actor, commit, pull request, host) since 10:02, lease until 10:17"),
"superseded by S" when its resources moved to
scope S, "inherited from S" when they came from S.

Destroyed scopes are folded: a line under their stack's table counts and
names them (their last receipt is the record that they are gone).

Filters: --stack S keeps one stack; --state STATE keeps the scopes in that
state: running (a live lease), stale-lease (a lease that expired unreleased:
its run died), collectable (what ` + "`sponson gc`" + ` would destroy, by the rules
whose facts are given: --open-prs LIST for pr-closed, --older-than DURATION
for older-than; branch-gone needs the remote and is off here), drifted (drift
records nothing in the store: --drift FILE gives the output of a sponson drift
--json, of one stack or of --all), failed, destroyed.

With --json the rows are the result, with full commits and times, and
"overview" carries the facts of the page below for the environment, the
same filters applied.

--html FILE writes one self-contained HTML page (inline CSS, script and SVG;
no network, no external asset: a CI artifact or a Pages site) of every
environment of the store, declared or held: per scope its owner (pull
request or branch, linked when the CI's variables name the repository), age,
last run, lease, what it owns, what gc would collect and why, and its
receipts as a timeline; the stacks' dependency graph; filters by
environment, stack and state, and sort by age. It reads only what status
reads (leases and receipts, never a state or a secret). "-" writes it to
standard output.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			if err := opts.checkState(); err != nil {
				return err
			}
			if opts.HTML == "-" && opts.JSON {
				return errcode.New(errcode.Usage, "--html - and --json would both write to standard output").
					WithHint("Write the page to a file: --html FILE.")
			}
			return opts.Prepare(cmd, opts.Getenv)
		}, runF, runStatus),
	}
	opts.Bind(cmd)
	cmdutil.BindStack(cmd, &opts.Stack, "show only this stack (default: every stack of the environment)")
	fs := cmd.Flags()
	fs.StringVar(&opts.HTML, "html", "", "write the overview of the whole store as one HTML page to `FILE` (\"-\": standard output)")
	fs.StringVar(&opts.State, "state", "", "show only the scopes in this `STATE`: "+strings.Join(overview.States, ", "))
	opts.GCFactFlags.Bind(cmd)
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
	in, err := cmdutil.OverviewInput(ctx, opts.Getenv, opts.Chdir, st, url, opts.GCFactFlags)
	if err != nil {
		o.Err = err
		return o
	}
	if opts.HTML != "" {
		// The page is of the whole store; the filters are the page's own.
		m, err := overview.Build(ctx, in)
		if err == nil {
			err = writeHTML(opts, m)
		}
		o.Err = err
		if err == nil {
			o.Result = map[string]any{"store": url, "html": opts.HTML, "counts": m.Counts}
		}
		return o
	}
	in.Only = []string{env}
	m, err := overview.Build(ctx, in)
	if err != nil {
		o.Err = err
		return o
	}
	filtered(m, opts.Stack, opts.State)
	scopes, err := store.ListScopes(ctx, st, env, opts.Stack)
	if err != nil {
		o.Err = err
		return o
	}
	// The rows of the scopes the overview kept, in its order: stacks in
	// dependency order, scopes by name.
	byKey := map[store.Key]store.ScopeSummary{}
	for _, s := range scopes {
		byKey[s.Key] = s
	}
	kept := make([]store.ScopeSummary, 0, len(m.Scopes))
	for _, s := range m.Scopes {
		if sum, ok := byKey[store.Key{Stack: s.Stack, Environment: env, Scope: s.Scope}]; ok {
			kept = append(kept, sum)
		}
	}
	rows := StatusRows(kept, time.Now())
	goneDirs := goneStacks(opts, rows)
	res := map[string]any{"environment": env, "store": url, "scopes": rows, "overview": m}
	if len(goneDirs) > 0 {
		res["gone"] = goneDirs
	}
	if opts.Stack != "" {
		res["stack"] = opts.Stack
	}
	if opts.State != "" {
		res["state"] = opts.State
	}
	o.Result = res
	if opts.JSON {
		return o
	}
	writeStatusText(opts, env, url, rows, m.Stacks, goneDirs)
	return o
}

// writeStatusText prints the rows for people: one table per stack, under
// its name (a monorepo's root modules have scopes of the same names), the
// destroyed folded into a line under it, then the stacks gone.
// goneDirs are the stacks of this checkout's repository whose directory is
// gone (goneStacks), by name.
func writeStatusText(opts *StatusOptions, env, url string, rows []ScopeStatus, stacks []overview.Stack, goneDirs map[string]string) {
	fmt.Fprintf(opts.Out, "environment %s · store %s\n", env, url)
	if len(rows) == 0 {
		if opts.State != "" || opts.Stack != "" {
			fmt.Fprintln(opts.Out, "no scope matches")
		} else {
			fmt.Fprintln(opts.Out, "no scopes yet")
		}
		return
	}
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Stack == rows[i].Stack {
			j++
		}
		var live []ScopeStatus
		var gone []string
		for _, r := range rows[i:j] {
			if r.LastRun != nil && r.LastRun.Status == receipt.StatusDestroyed && opts.State != overview.StateDestroyed {
				gone = append(gone, r.Scope)
				continue
			}
			live = append(live, r)
		}
		fmt.Fprintf(opts.Out, "stack %s\n", cmdutil.OrDash(rows[i].Stack))
		if d, ok := goneDirs[rows[i].Stack]; ok {
			fmt.Fprintf(opts.Out, "  its directory %s is gone from this checkout and it holds state: a run of the change that removed it (plan|apply --changed) destroys it, or `sponson destroy` in a checkout that still has it\n", d)
		}
		if len(live) > 0 {
			WriteStatusTable(opts.Out, live)
		}
		if len(gone) > 0 {
			fmt.Fprintf(opts.Out, "+ %d destroyed: %s (--state destroyed lists them)\n", len(gone), strings.Join(gone, ", "))
		}
		i = j
	}
	writeOtherGone(opts, rows, stacks, goneDirs)
}

// writeOtherGone names the stacks of the store that hold state and have no
// directory in the repository, beside those goneDirs already named. A stack
// whose scopes were all destroyed (or moved away) keeps only their
// receipts: nothing is left behind, so there is nothing to say.
func writeOtherGone(opts *StatusOptions, rows []ScopeStatus, stacks []overview.Stack, goneDirs map[string]string) {
	holding := map[string]bool{}
	for _, name := range holdingStacks(rows) {
		holding[name] = true
	}
	for _, s := range stacks {
		if _, said := goneDirs[s.Name]; s.Gone && !said && holding[s.Name] && (opts.Stack == "" || opts.Stack == s.Name) {
			fmt.Fprintf(opts.Out, "stack %s has scopes in the store and no directory in the repository\n", s.Name)
		}
	}
}

// holdingStacks are the stacks of rows that hold state, in order: a scope
// whose last run is not a destroy, not superseded, and not moved away with
// nothing left.
func holdingStacks(rows []ScopeStatus) []string {
	holding := map[string]bool{}
	var names []string
	for _, r := range rows {
		if r.LastRun != nil && r.LastRun.Status != receipt.StatusDestroyed && r.SupersededBy == "" && (r.MovedTo == "" || r.Owns > 0) && !holding[r.Stack] {
			holding[r.Stack] = true
			names = append(names, r.Stack)
		}
	}
	return names
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
			row.MovedTo, row.MovedFrom = r.MovedTo, r.MovedFrom
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
		if r.MovedTo != "" {
			notes[i] = append(notes[i], "moved to stack "+r.MovedTo+": its state and resources are that stack's now")
		}
		if r.MovedFrom != "" {
			notes[i] = append(notes[i], "moved from stack "+r.MovedFrom)
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
// repository that holds state (a scope whose last run is not a destroy,
// and whose state was not moved to another stack) and
// whose directory is gone (docs/design.md §4.7 "Many stacks", removed stacks).
func goneStacks(opts *StatusOptions, rows []ScopeStatus) map[string]string {
	names := holdingStacks(rows)
	dir := opts.Chdir
	if dir == "" {
		dir = "."
	}
	return manystacks.GoneStacks(opts.Getenv, dir, names)
}
