package statuscmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/overview"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// OverviewFlags are the flags of the overview status builds (status --html,
// --json, and the filters of its table).
type OverviewFlags struct {
	// HTML is the file the page is written to; "-" is standard output.
	HTML string
	// State keeps the scopes in this state (overview.States).
	State string
	// OpenPRs and OlderThan are the facts of gc's pr-closed and
	// older-than rules, for what gc would collect.
	OpenPRs   string
	OlderThan time.Duration
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

// checkState refuses a --state that names no state.
func (f OverviewFlags) checkState() error {
	if f.State != "" && !slices.Contains(overview.States, f.State) {
		return errcode.New(errcode.Usage, "--state %q is no state", f.State).
			WithHint("Use one of " + strings.Join(overview.States, ", ") + ".")
	}
	return nil
}

// OverviewInput is what the overview of a configuration directory reads
// beyond the store: the declared environments, the repository's stacks and
// gc's facts. It is how `status` and `serve` gather the same input.
func OverviewInput(ctx context.Context, getenv func(string) string, chdir string, st store.Store, url string, f OverviewFlags) (overview.Input, error) {
	in := overview.Input{Store: st, StoreURL: url, Host: overview.HostFromEnv(getenv)}
	dir, err := filepath.Abs(cmdutil.OrDot(chdir))
	if err != nil {
		return in, errcode.Wrap(errcode.Usage, err, "--chdir %q", chdir)
	}
	rs, err := cmdutil.TrustedRules(ctx, getenv, dir, runctx.Context{Environment: runctx.DefaultEnvironment})
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

// writeHTML renders the page to path ("-": out) whole, then renames it in
// place, so that a reader never sees half a page.
func writeHTML(opts *StatusOptions, m *overview.Model) error {
	var buf bytes.Buffer
	if err := overview.Render(&buf, m, overview.RenderOptions{}); err != nil {
		return err
	}
	if opts.HTML == "-" {
		_, err := opts.Out.Write(buf.Bytes())
		return err
	}
	path := opts.HTML // as every file flag: relative to the working directory
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "--html %s", opts.HTML)
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644) //nolint:gosec // a page to publish: world-readable on purpose
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return errcode.Wrap(errcode.Usage, err, "--html %s", opts.HTML)
	}
	fmt.Fprintf(opts.Human(), "wrote the overview of %d scopes to %s\n", m.Counts.Scopes, path)
	return nil
}

// filtered keeps the model's scopes that --stack and --state select.
func filtered(m *overview.Model, stack, state string) {
	m.Scopes = slices.DeleteFunc(m.Scopes, func(s overview.Scope) bool {
		return (stack != "" && s.Stack != stack) || (state != "" && !slices.Contains(s.States, state))
	})
	m.Recount()
}
