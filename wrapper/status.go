package wrapper

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// StoreFlags locate a store without running the engine.
type StoreFlags struct {
	Env, Chdir, Store string
}

func (s *StoreFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&s.Env, "env", "", "environment (env SPONSON_CTX_ENV; default \"preview\")")
	fs.StringVar(&s.Chdir, "chdir", "", "configuration directory (env SPONSON_CHDIR; default: the working directory)")
	fs.StringVar(&s.Store, "store", "", "store URL, file://DIR (env SPONSON_STORE; default: .sponson/ in the configuration directory)")
}

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
	st, url, err := storeurl.Open(s.Store, dir)
	return st, url, env, err
}

// StatusOptions are the options of `sponson status`.
type StatusOptions struct {
	StoreFlags
}

// ScopeStatus is one row of `sponson status --json`.
type ScopeStatus struct {
	Scope   string           `json:"scope"`
	Lease   *store.LeaseInfo `json:"lease,omitempty"`
	LastRun *RunSummary      `json:"lastRun,omitempty"`
	Owns    int              `json:"owns"`
}

// RunSummary is a receipt in one line.
type RunSummary struct {
	RunID      string    `json:"runId"`
	Command    string    `json:"command"`
	Status     string    `json:"status"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	StartedAt  time.Time `json:"startedAt"`
}

// NewCmdStatus builds `sponson status`.
func NewCmdStatus(f *Factory, out *outcome, runF func(context.Context, *StatusOptions) outcome) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status [flags]",
		Short: "List the scopes of an environment: lease, last run, what each owns",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out.command = "status"
			if runF != nil {
				*out = runF(cmd.Context(), opts)
				return nil
			}
			*out = runStatus(cmd, f, opts)
			return nil
		},
	}
	opts.bind(cmd)
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
	scopes, err := st.List(cmd.Context(), env)
	if err != nil {
		o.err = err
		return o
	}
	now := time.Now()
	rows := []ScopeStatus{}
	for _, s := range scopes {
		row := ScopeStatus{Scope: s.Key.Scope}
		if s.Lease.Live(now) {
			l := s.Lease
			row.Lease = &l
		}
		if r := s.Latest; r != nil {
			row.LastRun = &RunSummary{RunID: r.RunID, Command: r.Command, Status: r.Status, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
			row.Owns = len(r.Ledger)
		}
		rows = append(rows, row)
	}
	o.result = map[string]any{"environment": env, "store": url, "scopes": rows}
	if jsonMode, _ := cmd.Flags().GetBool("json"); jsonMode || wantsJSON(nil, f.Getenv) {
		return o
	}
	fmt.Fprintf(f.Out, "environment %s · store %s\n", env, url)
	if len(rows) == 0 {
		fmt.Fprintln(f.Out, "no scopes yet")
		return o
	}
	tw := tabwriter.NewWriter(f.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tOWNS\tLAST RUN\tLEASE")
	for _, r := range rows {
		last := "-"
		if r.LastRun != nil {
			when := r.LastRun.FinishedAt
			if when.IsZero() {
				when = r.LastRun.StartedAt
			}
			last = fmt.Sprintf("%s %s %s (%s)", r.LastRun.Command, r.LastRun.Status, when.Local().Format("2006-01-02 15:04"), r.LastRun.RunID)
		}
		held := "free"
		if r.Lease != nil {
			held = fmt.Sprintf("held by %s until %s", r.Lease.Holder, r.Lease.ExpiresAt.Local().Format("15:04:05"))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Scope, r.Owns, last, held)
	}
	tw.Flush()
	return o
}
