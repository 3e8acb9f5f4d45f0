// Package scoperun runs the engine in one scope: it takes the scope's lease,
// serves the scope's state through the fenced state server, drives
// init/plan/apply through terraform-exec, and writes the receipt. It is what
// `sponson plan`, `apply` and `destroy` do once the command line has been
// read (DESIGN.md §3, "An apply, end to end").
package scoperun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/statesrv"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Command is what a run does.
type Command string

// The commands.
const (
	Plan    Command = "plan"
	Apply   Command = "apply"
	Destroy Command = "destroy"
)

// Options describe one run.
type Options struct {
	Command Command
	Dir     string // the configuration directory, absolute
	Context runctx.Context
	Store   store.Store
	// Engine is the engine binary; ProviderBinary the executable that
	// serves the sponson provider (the sponson binary itself), offered to
	// the engine under ProviderVersion.
	Engine          string
	ProviderBinary  string
	ProviderVersion string
	Lease           lease.Config
	ApprovedBy      string
	Vars            []engine.VarArg
	// EngineOut receives the engine's own output as it runs.
	EngineOut io.Writer
	// Warn and Info report progress as it happens; either may be nil.
	Warn func(string)
	Info func(string)
	// RunID identifies the run; NewRunID when empty.
	RunID string
}

// Result is what a run did. It is filled as far as the run got, also when
// it returns an error.
type Result struct {
	RunID    string
	Command  Command
	Key      store.Key
	Status   string
	Summary  engine.Summary
	Receipt  *receipt.Receipt
	Engine   receipt.Engine
	Warnings []string
	// Running is the live lease a plan saw: an apply in progress.
	Running *store.LeaseInfo
}

// NewRunID returns a fresh run id: "run-" and 8 hex digits.
func NewRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "run-" + hex.EncodeToString(b)
}

type runner struct {
	o    Options
	res  *Result
	key  store.Key
	held *lease.Held
}

func (r *runner) warn(msg string) {
	r.res.Warnings = append(r.res.Warnings, msg)
	if r.o.Warn != nil {
		r.o.Warn(msg)
	}
}

func (r *runner) info(msg string) {
	if r.o.Info != nil {
		r.o.Info(msg)
	}
}

// Run performs o.Command.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	if o.EngineOut == nil {
		o.EngineOut = io.Discard
	}
	r := &runner{o: o, key: store.Key{Environment: o.Context.Environment, Scope: o.Context.Scope}}
	r.res = &Result{RunID: o.RunID, Command: o.Command, Key: r.key}
	err := r.run(ctx)
	if err != nil && r.res.Status == "" {
		r.res.Status = receipt.StatusFailed
	}
	return r.res, err
}

func (r *runner) run(ctx context.Context) (err error) {
	o := r.o
	writes := o.Command != Plan
	tmp, err := os.MkdirTemp("", "sponson-run-")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "creating a temporary directory")
	}
	defer os.RemoveAll(tmp)

	// Writes after an interrupt (the failed receipt, the release) must
	// still happen: they use a context that the interrupt does not cancel.
	bg := context.WithoutCancel(ctx)

	if writes {
		cfg := o.Lease
		cfg.OnWait = func(l store.LeaseInfo) {
			r.info(fmt.Sprintf("waiting for the lease of %s: held by %s until %s", r.key, l.Holder, l.ExpiresAt.Local().Format("15:04:05")))
		}
		r.held, err = lease.Acquire(ctx, o.Store, r.key, o.RunID, cfg)
		if err != nil {
			return err
		}
		defer func() {
			if w := r.held.Release(bg); w != "" {
				r.warn(w)
			}
		}()
		if p := r.held.Preempted; p != nil {
			r.warn(fmt.Sprintf("took over an expired lease held by %s since %s", p.Holder, p.AcquiredAt.Local().Format(time.RFC3339)))
		}
	} else if l, err := o.Store.ReadLease(ctx, r.key); err == nil && l.Live(time.Now()) {
		r.res.Running = &l
		r.warn(fmt.Sprintf("apply running in this scope since %s (run %s); this plan may be outdated when it finishes", l.AcquiredAt.Local().Format("15:04"), l.Holder))
	}

	prev, err := o.Store.LatestReceipt(ctx, r.key)
	if err != nil {
		return err
	}

	// The engine runs under runCtx: losing the lease cancels it, which makes
	// terraform-exec interrupt the engine (SIGINT: it flushes and exits).
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if r.held != nil {
		go func() {
			select {
			case <-r.held.Lost():
				cancel(r.held.Err())
			case <-runCtx.Done():
			}
		}()
	}

	leaseFn := func() (store.Lease, bool) {
		if r.held == nil {
			return store.Lease{}, false
		}
		return r.held.Lease(), true
	}
	srv, err := statesrv.Start(o.Store, r.key, leaseFn, statesrv.OnLeaseLost(func(e error) {
		if r.held != nil {
			r.held.MarkLost(e)
		}
	}))
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "starting the state server")
	}
	defer srv.Close()

	ov, err := engine.PlaceOverride(o.Dir)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "placing the backend override in %s", o.Dir)
	}
	defer ov.Release()

	cli, err := engine.WriteCLIConfig(filepath.Join(tmp, "cli"), o.ProviderBinary, o.ProviderVersion, os.Getenv("TF_CLI_CONFIG_FILE"))
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "writing the engine's CLI configuration")
	}
	if cli.Warning != "" {
		r.warn(cli.Warning)
	}
	env := append([]string{
		"TF_CLI_CONFIG_FILE=" + cli.File,
		"TF_DATA_DIR=" + DataDir(o.Dir, r.key),
	}, srv.Environ()...)
	env = append(env, o.Context.Environ()...)

	sess, err := engine.Open(runCtx, engine.Options{Dir: o.Dir, Binary: o.Engine, Env: env, Stdout: o.EngineOut, Stderr: o.EngineOut})
	if err != nil {
		return err
	}
	r.res.Engine = receipt.Engine{Name: sess.Name, Version: sess.Version}
	if err := sess.Init(runCtx); err != nil {
		return r.engineErr(err)
	}
	planPath := filepath.Join(tmp, "plan.bin")
	changed, err := sess.Plan(runCtx, planPath, o.Command == Destroy, writes, o.Vars)
	if err != nil {
		return r.engineErr(err)
	}
	plan, err := sess.ShowPlan(runCtx, planPath)
	if err != nil {
		return r.engineErr(err)
	}
	r.res.Summary = engine.Summarize(plan)
	if o.Command == Plan {
		r.res.Status = receipt.StatusUnchanged
		if changed {
			r.res.Status = "changes"
		}
		return nil
	}

	rec := r.newReceipt(prev, plan)
	r.res.Receipt = rec
	// The checkpoint: before the engine writes anything, the store knows a
	// run is under way and what it is about to change.
	if err := r.writeReceipt(bg, rec); err != nil {
		return err
	}

	var applyErr error
	if changed {
		applyErr = sess.Apply(runCtx, planPath)
	}
	if lostErr := r.held.Err(); lostErr != nil {
		// Nothing more may be written: the run that took over is
		// authoritative. The lost run's receipt stays as its checkpoint.
		r.res.Status = receipt.StatusFailed
		return lostErr
	}
	state, showErr := sess.Show(bg)
	if showErr == nil {
		rec.Ledger = Ledger(state, prev)
	}
	rec.FinishedAt = time.Now().UTC()
	switch {
	case applyErr != nil:
		rec.Status = receipt.StatusFailed
		e := errcode.As(r.engineErr(applyErr))
		rec.Error = &receipt.Failure{Code: string(e.Code), Message: e.Message}
	case showErr != nil:
		rec.Status = receipt.StatusFailed
		rec.Error = &receipt.Failure{Code: string(errcode.EngineFailed), Message: showErr.Error()}
	case o.Command == Destroy:
		rec.Status = receipt.StatusDestroyed
	case changed:
		rec.Status = receipt.StatusApplied
	default:
		rec.Status = receipt.StatusUnchanged
	}
	r.res.Status = rec.Status
	if err := r.writeReceipt(bg, rec); err != nil {
		return err
	}
	if applyErr != nil {
		return r.engineErr(applyErr)
	}
	return showErr
}

// engineErr turns an engine failure caused by an interrupt or a lost lease
// into that cause.
func (r *runner) engineErr(err error) error {
	if r.held != nil {
		if lost := r.held.Err(); lost != nil {
			return lost
		}
	}
	return err
}

func (r *runner) writeReceipt(ctx context.Context, rec *receipt.Receipt) error {
	err := r.o.Store.WriteReceipt(ctx, r.held.Lease(), rec)
	if errors.Is(err, store.ErrLeaseLost) {
		r.held.MarkLost(err)
		return r.held.Err()
	}
	return err
}

func (r *runner) newReceipt(prev *receipt.Receipt, plan *tfjson.Plan) *receipt.Receipt {
	c := r.o.Context
	rec := &receipt.Receipt{
		Version:     receipt.Version,
		RunID:       r.o.RunID,
		Command:     string(r.o.Command),
		Environment: c.Environment,
		Scope:       c.Scope,
		Status:      receipt.StatusRunning,
		StartedAt:   time.Now().UTC(),
		Branch:      c.Branch,
		PullRequest: c.PullRequest,
		Commit:      c.Commit,
		ApprovedBy:  r.o.ApprovedBy,
		Engine:      r.res.Engine,
		Changes:     Changes(plan),
		Ledger:      []receipt.Entry{},
	}
	if prev != nil {
		// Carried forward: a run that fails before it can read the state
		// forgets nothing the scope owned.
		rec.Ledger = append(rec.Ledger, prev.Ledger...)
	}
	if p := r.held.Preempted; p != nil {
		rec.LockPreempted = &receipt.Preempted{Holder: p.Holder, Since: p.AcquiredAt, Until: p.ExpiresAt}
	}
	return rec
}

// DataDir is the engine's data directory for one scope: each (environment,
// scope) keeps its own backend and provider set-up, so switching scopes in
// one configuration directory never needs a re-init.
func DataDir(dir string, key store.Key) string {
	return filepath.Join(dir, ".terraform", "sponson", key.Environment, key.Scope)
}
