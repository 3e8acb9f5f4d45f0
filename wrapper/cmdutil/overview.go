package cmdutil

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/overview"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// GCFactFlags are the facts of gc's rules a command showing the overview
// is given: the open pull requests (pr-closed) and an age limit
// (older-than).
type GCFactFlags struct {
	OpenPRs   string
	OlderThan time.Duration
	// Drift is the file of a `sponson drift --json` result: drift records
	// nothing in the store.
	Drift string
}

// Bind adds --open-prs and --older-than to cmd, for what gc would
// collect.
func (g *GCFactFlags) Bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&g.OpenPRs, "open-prs", "", "open pull requests, `LIST` like 12,15, or none: turns gc's pr-closed rule on for what gc would collect")
	fs.Var(&ageFlag{&g.OlderThan}, "older-than", "turn gc's older-than rule on with this `DURATION` (720h, 30d) for what gc would collect")
	fs.StringVar(&g.Drift, "drift", "", "show drift from `FILE`, the output of sponson drift --json (drift records nothing in the store)")
}

// ageFlag is a duration flag that also takes whole days (30d), as gc's.
type ageFlag struct{ d *time.Duration }

func (a *ageFlag) String() string {
	if a.d == nil || *a.d == 0 {
		return ""
	}
	return a.d.String()
}

func (a *ageFlag) Set(s string) error {
	d, err := gc.ParseAge(s)
	if err != nil {
		return err
	}
	*a.d = d
	return nil
}

func (a *ageFlag) Type() string { return "duration" }

// OverviewInput is what the overview of a configuration directory reads
// beyond the store: the declared environments, the repository's stacks and
// gc's facts. It is how `status` and `serve` gather the same input.
func OverviewInput(ctx context.Context, getenv func(string) string, chdir string, st store.Store, url string, f GCFactFlags) (overview.Input, error) {
	in := overview.Input{Store: st, StoreURL: url, Host: overview.HostFromEnv(getenv)}
	dir, err := filepath.Abs(OrDot(chdir))
	if err != nil {
		return in, errcode.Wrap(errcode.Usage, err, "--chdir %q", chdir)
	}
	rs, err := TrustedRules(ctx, getenv, dir, runctx.Context{Environment: runctx.DefaultEnvironment})
	if err != nil {
		return in, err
	}
	in.Environments = rs.Declared.Names()
	in.Stacks, in.StacksNote = discoverStacks(getenv, dir)
	if f.OpenPRs != "" {
		prs, err := gc.ParsePRList(f.OpenPRs)
		if err != nil {
			return in, errcode.Wrap(errcode.Usage, err, "--open-prs")
		}
		in.GC.OpenPRs, in.GC.PRsKnown = gc.Set(prs), true
	}
	in.GCOptions.OlderThan = f.OlderThan
	if f.Drift != "" {
		data, err := os.ReadFile(f.Drift)
		if err == nil {
			in.Drift, err = overview.ParseDrift(data)
		}
		if err != nil {
			return in, errcode.Wrap(errcode.Usage, err, "--drift %s", f.Drift)
		}
	}
	return in, nil
}

// discoverStacks finds the stacks of dir's repository for the graph and
// the order; a repository whose stacks cannot be read gets the reason
// instead (the overview is still drawn, without the graph).
func discoverStacks(getenv func(string) string, dir string) (*stackgraph.Set, string) {
	top := dir
	if t, err := runctx.ProcessSources(dir).Git("rev-parse", "--show-toplevel"); err == nil && t != "" {
		top = t
	}
	if t, err := filepath.EvalSymlinks(top); err == nil {
		top = t
	}
	set, err := stackgraph.Discover(stackgraph.Options{Root: top, Top: top, Getenv: getenv})
	if err != nil {
		return nil, "the stacks of " + top + " could not be read, so no graph is drawn: " + err.Error()
	}
	return set, ""
}
