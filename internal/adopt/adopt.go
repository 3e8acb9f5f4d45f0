// Package adopt moves the state a configuration's own backend holds (S3,
// GCS, local, any backend the engine reads) into a scope of a Sponson store,
// so a team starts using Sponson without recreating anything. The state is
// read through the engine (`state pull` with the configuration's own
// backend, in a data directory of its own), then written under the scope's
// lease with the ledger built from it and a receipt saying where it came
// from. A scope that has state already, or owns resources, is refused; a
// state whose resources another scope of the environment owns is refused
// too. The old backend is never changed: retiring it is the user's step
// (docs/guides/adopt.md).
package adopt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// Command is the receipt's command of an adoption.
const Command = "adopt"

// Options are what an adoption needs.
type Options struct {
	Dir     string // the configuration directory
	Context runctx.Context
	Store   scopeedit.Store
	Engine  string // the engine binary
	// ProviderVersion is the version of the provider this process serves
	// to the engine, as in a run, so a configuration using it initialises.
	ProviderVersion string
	Lease           lease.Config
	RunID           string
	// Workspace is the backend's workspace to adopt ("default" when empty).
	Workspace string
	// EngineOut receives the engine's init output.
	EngineOut io.Writer
	Warn      func(string)
	// Declared is what the environment declares about identity, as a run's
	// (scoperun.Options.Declared).
	Declared ownership.Declaration
	// Approval is the adoption's approval (scopeedit.Approve).
	Approval scopeedit.Approval
	// ServeProvider serves the sponson provider from this process to the
	// engine (provider.EngineEnv, handed over by the wrapper as to a run:
	// scoperun.Options.ServeProvider); nil serves none.
	ServeProvider func(ctx context.Context, version, dir string, states store.StateReader) (env []string, stop func(), err error)
}

// Result is what an adoption did.
type Result struct {
	Key     store.Key
	Receipt *receipt.Receipt
	Engine  receipt.Engine
}

// Run adopts the state of the configuration's own backend into the scope.
func Run(ctx context.Context, o Options) (Result, error) {
	key := store.Key{Stack: o.Context.Stack, Environment: o.Context.Environment, Scope: o.Context.Scope}
	res := Result{Key: key}
	if o.Workspace == "" {
		o.Workspace = "default"
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	backend, err := engine.DeclaredBackend(o.Dir)
	if err != nil {
		return res, errcode.Wrap(errcode.Usage, err, "reading the configuration in %s", o.Dir)
	}
	if backend == "" {
		backend = "local" // the engine's default: terraform.tfstate in the directory
	}
	if backend == "cloud" || backend == "remote" {
		o.Warn("the configuration's backend runs plans remotely; only its state is adopted")
	}
	started := time.Now().UTC()
	state, eng, err := pull(ctx, o)
	res.Engine = eng
	if err != nil {
		return res, err
	}
	if len(bytes.TrimSpace(state)) == 0 {
		return res, errcode.New(errcode.Usage, "the configuration's %s backend holds no state in workspace %q: there is nothing to adopt", backend, o.Workspace).
			WithHint("Check the backend settings and --from-workspace; a configuration without state needs no adoption: just run `sponson apply`.")
	}
	meta, err := tfstate.ReadMeta(state)
	if err != nil {
		return res, errcode.Wrap(errcode.EngineFailed, err, "the state the engine pulled is not JSON")
	}
	objects, err := ownership.StateObjects(state)
	if err != nil {
		return res, errcode.Wrap(errcode.EngineFailed, err, "the state the engine pulled does not read")
	}
	c, err := scopeedit.Edit(ctx, scopeedit.Options{Store: o.Store, Key: key, RunID: o.RunID, Approval: o.Approval, Lease: o.Lease, Warn: o.Warn},
		func(ctx context.Context, s *scopeedit.Scope) (scopeedit.Change, error) {
			if err := refuseOccupied(s); err != nil {
				return scopeedit.Change{}, err
			}
			pol := o.Declared.Policy()
			ledger, _ := ownership.Ledger(nil, objects, pol, nil)
			for i := range ledger {
				ledger[i].CreatedBy = receipt.CreatedByAdopted // Sponson did not create them
			}
			if err := s.RefuseForeign(ctx, pol, objects, "adopting the state"); err != nil {
				return scopeedit.Change{}, err
			}
			// A scope adopted starts afresh: nothing of an earlier receipt
			// (one with an empty ledger) carries over.
			run := s.Run(Command, receipt.StatusApplied)
			run.StartedAt, run.FinishedAt = started, time.Now().UTC()
			rec := receipt.Next(receipt.First(key.Stack, key.Environment, key.Scope), run)
			rec.Branch, rec.PullRequest, rec.Commit = o.Context.Branch, o.Context.PullRequest, o.Context.Commit
			rec.Engine, rec.Ledger, rec.LockPreempted = eng, ledger, s.LockPreempted()
			sum := sha256.Sum256(state)
			rec.AdoptedFrom = &receipt.Adoption{Backend: backend, Workspace: o.Workspace, Lineage: meta.Lineage, Serial: meta.Serial, SHA256: hex.EncodeToString(sum[:])}
			return scopeedit.Change{State: state, Receipt: rec}, nil
		})
	res.Receipt = c.Receipt
	return res, err
}

// pull reads the state of the configuration's own backend through the
// engine, in a data directory of its own, so the
// configuration's .terraform is left alone.
func pull(ctx context.Context, o Options) ([]byte, receipt.Engine, error) {
	tmp, err := os.MkdirTemp("", "sponson-adopt-")
	if err != nil {
		return nil, receipt.Engine{}, errcode.Wrap(errcode.Internal, err, "creating a temporary directory")
	}
	defer os.RemoveAll(tmp)
	var serve func() ([]string, func(), error)
	if o.ServeProvider != nil {
		serve = func() ([]string, func(), error) { return o.ServeProvider(ctx, o.ProviderVersion, o.Dir, o.Store) }
	}
	provEnv, stop, err := engine.WithProvider(tmp, serve, o.Warn)
	if err != nil {
		return nil, receipt.Engine{}, err
	}
	defer stop()
	env := []string{"TF_DATA_DIR=" + filepath.Join(tmp, "data"), "TF_WORKSPACE=" + o.Workspace,
		// The provider must not write: no lease is handed over.
		lease.EnvStore + "=", lease.EnvHolder + "=", lease.EnvToken + "="}
	env = append(env, o.Context.Environ()...)
	env = append(env, provEnv...)
	out := o.EngineOut
	if out == nil {
		out = io.Discard
	}
	sess, err := engine.Open(ctx, engine.Options{Dir: o.Dir, Binary: o.Engine, Env: env, Stdout: out, Stderr: out})
	if err != nil {
		return nil, receipt.Engine{}, err
	}
	if err := sess.Init(ctx); err != nil {
		return nil, sess.Describe(), err
	}
	state, err := sess.StatePull(ctx)
	return state, sess.Describe(), err
}

// refuseOccupied refuses a scope that has state with resources or a ledger.
func refuseOccupied(s *scopeedit.Scope) error {
	key := s.Key
	if prev := s.Latest; prev != nil && len(prev.Ledger) > 0 {
		return errcode.New(errcode.ScopeHasState, "scope %s owns %d resources (run %s): adopting would replace its state", key, len(prev.Ledger), prev.RunID).
			With("scope", key.Scope).With("runId", prev.RunID)
	}
	if objs, err := ownership.StateObjects(s.State); err != nil || len(objs) > 0 {
		return errcode.New(errcode.ScopeHasState, "scope %s has a state already: adopting would replace it", key).With("scope", key.Scope)
	}
	return nil
}
