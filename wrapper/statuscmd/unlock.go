package statuscmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// UnlockOptions are the options of `sponson unlock`.
type UnlockOptions struct {
	*cmdutil.IO
	cmdutil.StoreFlags
	Scope, Reason, By, Stack string
	// ApprovedBy is the approver an unlock in a protected environment needs.
	ApprovedBy string
	// LockID is force-unlock's LOCK_ID: when set, the lease must be held
	// by that run, or nothing is ended.
	LockID string
}

// UnlockResult is the result part of unlock's envelope.
type UnlockResult struct {
	Stack       string `json:"stack"`
	Environment string `json:"environment"`
	Scope       string `json:"scope"`
	// Ended is the lease that was ended; nil when none was live.
	Ended   *store.LeaseInfo `json:"ended,omitempty"`
	Receipt string           `json:"receipt,omitempty"`
}

// unlockTTL is how long unlock holds the scope's lease to record itself.
const unlockTTL = time.Minute

// NewCmdUnlock builds `sponson unlock`.
func NewCmdUnlock(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *UnlockOptions) cmdutil.Outcome) *cobra.Command {
	opts := &UnlockOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "unlock --scope S --reason TEXT [flags]",
		Short: "End a live lease by hand (break-glass), recording who and why",
		Long: `Unlock ends the live lease of a scope, for when the run holding it is stuck
(a hung or stopped CI job) and waiting for its TTL is not an option. The
holder is fenced out: its next state or receipt write, and its next renewal,
are refused, so it stops with LOCK_LOST and can change nothing more; what it
had begun is settled by the next run from its intents, as after a crash.

Unlock then takes the lease for a moment and writes a receipt that carries the
scope's ledger unchanged and records who ended whose lease and why (--reason
is required; --by defaults to the CI actor or $USER). It is refused without a
reason, and it needs --scope: a break-glass action never guesses the scope.
A scope whose lease is free has nothing to unlock. This is sponson's
counterpart of the engine's force-unlock, which sponson's own lock does not
need otherwise: its leases expire.

In a protected environment (production, or one sponson.hcl protects) ending
a run's lease is break-glass on that environment: it needs --approved-by
(env SPONSON_APPROVED_BY) from the environment's approvers, as an apply
does, and the receipt records the approver with who, why and which run was
ended (ENV_NOT_APPROVED, exit 2, otherwise).`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return opts.Prepare(cmd, opts.Getenv)
		}, runF, runUnlock),
	}
	opts.bindUnlock(cmd)
	return cmd
}

// bindUnlock binds the flags of unlock (and force-unlock) to opts.
func (opts *UnlockOptions) bindUnlock(cmd *cobra.Command) {
	opts.Bind(cmd)
	fs := cmd.Flags()
	fs.StringVar(&opts.Scope, "scope", "", "the scope whose lease to end (required)")
	cmdutil.BindStack(cmd, &opts.Stack, cmdutil.StackFlagHelp)
	fs.StringVar(&opts.Reason, "reason", "", "why the lease is ended, recorded in the receipt (required)")
	fs.StringVar(&opts.By, "by", "", "who ends it, recorded in the receipt (default: the CI actor, or $USER)")
	cmdutil.BindApprovedBy(cmd, &opts.ApprovedBy, "the unlock")
}

// NewCmdForceUnlock builds `sponson force-unlock`: the engine's command
// name for unlock, with its LOCK_ID (the run holding the lease) and its
// -force (a no-op: sponson never asks).
func NewCmdForceUnlock(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	cmd := NewCmdUnlock(f, out, nil)
	opts := &UnlockOptions{IO: f.IO()}
	cmd.ResetFlags()
	opts.bindUnlock(cmd)
	cmd.Flags().Bool("force", false, "no-op: sponson never asks for confirmation (the engine's -force)")
	cmd.Use = "force-unlock [LOCK_ID] --scope S --reason TEXT [flags]"
	cmd.Short = "The engine's force-unlock: sponson unlock, with the same rules"
	cmd.Long = `force-unlock is sponson unlock under the engine's name: it ends the live lease
of --scope, recording --reason (both required, as for unlock) and who ended
it. LOCK_ID, when given, is the run id holding the lease (sponson status
shows it): a lease held by another run is not ended.

` + cmd.Long
	cmd.Args = cobra.MaximumNArgs(1)
	cmd.RunE = cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			opts.LockID = args[0]
		}
		return opts.Prepare(cmd, opts.Getenv)
	}, nil, func(ctx context.Context, opts *UnlockOptions) cmdutil.Outcome {
		o := runUnlock(ctx, opts)
		o.Command = "force-unlock"
		return o
	})
	return cmd
}

func runUnlock(ctx context.Context, opts *UnlockOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "unlock"}
	reason := strings.TrimSpace(opts.Reason)
	if reason == "" {
		o.Err = errcode.New(errcode.Usage, "unlock needs --reason").
			WithHint("Say why the lease is ended, e.g. --reason \"job 1234 hung during apply\": the receipt records it.")
		return o
	}
	if strings.TrimSpace(opts.Scope) == "" {
		o.Err = errcode.New(errcode.Usage, "unlock needs --scope").
			WithHint("Name the scope whose lease to end; `sponson status` lists the scopes and who holds their lease.")
		return o
	}
	if err := runctx.ValidName("scope", opts.Scope); err != nil {
		o.Err = err
		return o
	}
	by := strings.TrimSpace(opts.By)
	if by == "" {
		by = runctx.DetectJob(opts.Getenv).Actor
	}
	if by == "" {
		by = "unknown"
	}
	st, _, env, err := opts.Open(ctx, opts.Getenv)
	if err != nil {
		o.Err = err
		return o
	}
	defer st.Close()
	dir, stk, err := cmdutil.StackOf(opts.Getenv, opts.Chdir, opts.Stack)
	if err != nil {
		o.Err = err
		return o
	}
	key := store.Key{Stack: stk.Name, Environment: env, Scope: opts.Scope}
	approval, err := cmdutil.EditApproval(opts.Getenv, dir, env, "unlock", opts.ApprovedBy)
	if err != nil {
		o.Err = err
		return o
	}
	res := UnlockResult{Stack: key.Stack, Environment: key.Environment, Scope: key.Scope}
	o.Result = &res
	l, err := st.ReadLease(ctx, key)
	if err != nil {
		o.Err = err
		return o
	}
	if !l.Live(time.Now()) {
		fmt.Fprintf(opts.ErrOut, "the lease of %s is not held: nothing to unlock\n", key)
		return o
	}
	if opts.LockID != "" && opts.LockID != l.Holder {
		o.Err = errcode.New(errcode.Usage, "the lease of %s is held by %s, not %s: nothing was ended", key, l.Holder, opts.LockID).
			WithHint("Give the run id `sponson status` shows as the holder, or leave LOCK_ID out.")
		return o
	}
	// Releasing with the holder's own id and token ends exactly that grant:
	// a renewal in between keeps both, a takeover in between changes them
	// and this release is refused.
	if err := st.Release(ctx, store.Lease{Key: key, Holder: l.Holder, Token: l.Token, ExpiresAt: l.ExpiresAt}); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			o.Err = errcode.New(errcode.LockHeld, "the lease of %s changed hands while unlocking; it was not ended", key).
				WithHint("Run `sponson status` to see who holds it now, and unlock again if it is still stuck.")
			return o
		}
		o.Err = err
		return o
	}
	res.Ended = &l
	fmt.Fprintf(opts.ErrOut, "ended the lease of %s held by %s (token %d) since %s\n", key, l.Holder, l.Token, l.AcquiredAt.Local().Format(time.RFC3339))

	// Record it: under a lease of its own (an edit outside a run, through
	// the held lease like every fenced write), a receipt that carries the
	// ledger (intents included, for the next run to settle) unchanged.
	id := "unlock-" + strings.TrimPrefix(scoperun.NewRunID(), "run-")
	_, err = scopeedit.Edit(ctx, scopeedit.Options{
		Store: st, Key: key, RunID: id, Actor: by, Approval: approval, Lease: lease.Config{TTL: unlockTTL},
		Warn: func(w string) { fmt.Fprintf(opts.ErrOut, "warning: %s\n", w) },
	}, func(_ context.Context, s *scopeedit.Scope) (scopeedit.Change, error) {
		return scopeedit.Change{Receipt: unlockReceipt(s, l, by, reason)}, nil
	})
	if err != nil {
		o.Err = errcode.Wrap(errcode.As(err).Code, err, "the lease of %s was ended, but the unlock could not be recorded", key)
		return o
	}
	res.Receipt = id
	fmt.Fprintf(opts.ErrOut, "recorded in receipt %s: unlocked by %s: %s\n", id, by, reason)
	return o
}

// unlockReceipt is the receipt unlock records: the scope's standing as
// it was, the outcome of its last run too, and who ended whose lease and
// why (and scopeedit.Edit adds who approved it).
func unlockReceipt(s *scopeedit.Scope, ended store.LeaseInfo, by, reason string) *receipt.Receipt {
	rec := s.Next("unlock", receipt.StatusUnchanged)
	if prev := s.Latest; prev != nil {
		rec.Status, rec.Error = prev.Status, prev.Error
		if prev.Status == receipt.StatusRunning {
			// The holder stopped before its receipt: its outcome is
			// unknown, and its intents stay for the next run to settle.
			rec.Status = receipt.StatusFailed
			rec.Error = &receipt.Failure{Code: string(errcode.LockLost), Message: fmt.Sprintf("run %s lost its lease to sponson unlock by %s: %s", ended.Holder, by, reason)}
		}
	}
	rec.Unlocked = &receipt.Unlocked{By: by, Reason: reason, Holder: ended.Holder, Token: ended.Token, At: rec.FinishedAt}
	return rec
}
