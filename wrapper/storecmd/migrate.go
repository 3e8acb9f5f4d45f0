// Package storecmd is the family of a store's own upkeep: migrate (a store's
// layout brought up to date), grants (the access a prefix needs) and store
// verify (an object store's server proved to honour what fencing needs).
package storecmd

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// MigrateOptions are the options of `sponson migrate`.
type MigrateOptions struct {
	*cmdutil.IO
	Chdir, Store, Stack string
}

// MigrateResult is the result of `sponson migrate --json`.
type MigrateResult struct {
	Store string `json:"store"`
	Stack string `json:"stack"`
	// Scopes are the scopes moved into the stack, as environment/scope.
	Scopes []string `json:"scopes"`
}

// NewCmdMigrate builds `sponson migrate`.
func NewCmdMigrate(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *MigrateOptions) cmdutil.Outcome) *cobra.Command {
	opts := &MigrateOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "migrate [flags]",
		Short: "Move a store written before stacks into the configuration's stack",
		Long: `Migrate moves a store written by a sponson before stacks (every record keyed by
environment and scope only) into the current layout, where everything is keyed
by stack, environment and scope. Every scope of every environment of the old
store becomes a scope of one stack: the configuration's (detected as for apply,
or named with --stack). Leases of shared parent objects stay shared by every
stack.

Until it runs, every other command refuses such a store with STORE_LAYOUT_OLD
rather than read it as empty (which would let the next apply create everything
again). Run it once, from the root module the store's scopes belong to, when no
run of the old sponson is in progress: it refuses with LOCK_HELD, moving
nothing, while an old scope's lease is live. Running it again finishes an
interrupted migration and is otherwise a no-op.

What moves: state, lease record (and its fencing token), receipts, ledger and
ownership index, records and quarantined states. The file store renames each
scope directory; the git store copies each sponson-receipts/ branch to a
sponson-stacks/ branch (sealing the state again for its new place, so it needs
SPONSON_STATE_KEY) and leaves the old branches as they were; PostgreSQL gives
the old rows the stack in one transaction.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return cmdutil.BindEnv(cmd.Flags(), cmdutil.RunFlagEnv, opts.Getenv)
		}, runF, runMigrate),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Chdir, "chdir", "", "configuration directory (env SPONSON_CHDIR; default: the working directory)")
	fs.StringVar(&opts.Store, "store", "", "store URL: file://DIR, git (the remote origin), git+URL, or postgres://... (env SPONSON_STORE; default: .sponson/ in the configuration directory)")
	cmdutil.BindStack(cmd, &opts.Stack, "the stack the old scopes move into (env SPONSON_STACK; default: the configuration's, detected as for apply)")
	return cmd
}

func runMigrate(ctx context.Context, opts *MigrateOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "migrate"}
	dir, stk, err := cmdutil.StackOf(opts.Getenv, opts.Chdir, opts.Stack)
	if err != nil {
		o.Err = err
		return o
	}
	if stk.Warning != "" {
		o.Warnings = append(o.Warnings, stk.Warning)
		cmdutil.Printer{W: opts.ErrOut}.Warn(stk.Warning)
	}
	m, url, err := storeurl.OpenForMigration(opts.Store, dir)
	if err != nil {
		o.Err = err
		return o
	}
	defer m.Close()
	moved, err := m.Migrate(ctx, stk.Name)
	res := MigrateResult{Store: url, Stack: stk.Name, Scopes: []string{}}
	for _, k := range moved {
		res.Scopes = append(res.Scopes, k.Environment+"/"+k.Scope)
	}
	o.Result = res
	var held *store.HeldError
	if errors.As(err, &held) {
		err = errcode.New(errcode.LockHeld, "not migrated: %s", held.Error()).
			WithHint("Wait until the run of the old sponson holding it has finished (or its lease expired), then run `sponson migrate` again.").
			With("holder", held.Lease.Holder)
	}
	if err != nil {
		o.Err = err
		return o
	}
	if opts.JSON {
		return o
	}
	p := cmdutil.Printer{W: opts.Out}
	if len(moved) == 0 {
		p.Line("sponson migrate · store %s: already in the current layout, nothing to move", url)
		return o
	}
	p.Line("sponson migrate · store %s: %d scope(s) moved into stack %s", url, len(moved), stk.Name)
	for _, s := range res.Scopes {
		p.Line("  %s", s)
	}
	return o
}
