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
	"encoding/json"
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
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Command is the receipt's command of an adoption.
const Command = "adopt"

// Options are what an adoption needs.
type Options struct {
	Dir     string // the configuration directory
	Context runctx.Context
	Store   store.Store
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
	// Declared is what the environment declares about identity
	// (scoperun.Options.Declared).
	Declared ownership.Declaration
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
	var meta struct {
		Serial  int64  `json:"serial"`
		Lineage string `json:"lineage"`
	}
	if err := json.Unmarshal(state, &meta); err != nil {
		return res, errcode.Wrap(errcode.EngineFailed, err, "the state the engine pulled is not JSON")
	}
	objects, err := scoperun.StateObjects(state)
	if err != nil {
		return res, errcode.Wrap(errcode.EngineFailed, err, "the state the engine pulled does not read")
	}

	held, err := lease.Acquire(ctx, o.Store, key, o.RunID, o.Lease)
	if err != nil {
		return res, err
	}
	defer func() {
		if w := held.Release(context.WithoutCancel(ctx)); w != "" {
			o.Warn(w)
		}
	}()
	if err := refuseOccupied(ctx, o.Store, key); err != nil {
		return res, err
	}
	pol := o.Declared.Policy()
	ledger, _ := ownership.Ledger(nil, objects, pol, nil)
	for i := range ledger {
		ledger[i].CreatedBy = receipt.CreatedByAdopted // Sponson did not create them
	}
	if err := refuseForeign(ctx, o.Store, key, pol, objects); err != nil {
		return res, err
	}
	sum := sha256.Sum256(state)
	rec := &receipt.Receipt{
		Version: receipt.Version, RunID: o.RunID, Command: Command,
		Environment: key.Environment, Scope: key.Scope, Status: receipt.StatusApplied,
		StartedAt: started, Branch: o.Context.Branch, PullRequest: o.Context.PullRequest, Commit: o.Context.Commit,
		Engine: eng, Changes: []receipt.Change{}, Ledger: ledger,
		AdoptedFrom: &receipt.Adoption{Backend: backend, Workspace: o.Workspace, Lineage: meta.Lineage, Serial: meta.Serial, SHA256: hex.EncodeToString(sum[:])},
	}
	if p := held.Preempted; p != nil {
		rec.LockPreempted = &receipt.Preempted{Holder: p.Holder, Since: p.AcquiredAt, Until: p.ExpiresAt}
	}
	// The state first: a crash before the receipt leaves a scope with
	// state, which a second adoption refuses and the next apply records.
	if err := held.WriteState(ctx, state); err != nil {
		return res, err
	}
	rec.FinishedAt = time.Now().UTC()
	if err := held.WriteReceipt(ctx, rec); err != nil {
		return res, err
	}
	res.Receipt = rec
	return res, nil
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
	provEnv, stop, err := scoperun.ServeProvider(ctx, o.ProviderVersion, o.Dir, tmp, o.Store, o.Warn)
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
func refuseOccupied(ctx context.Context, st store.Store, key store.Key) error {
	prev, err := st.LatestReceipt(ctx, key)
	if err != nil {
		return err
	}
	if prev != nil && len(prev.Ledger) > 0 {
		return errcode.New(errcode.ScopeHasState, "scope %s owns %d resources (run %s): adopting would replace its state", key, len(prev.Ledger), prev.RunID).
			With("scope", key.Scope).With("runId", prev.RunID)
	}
	cur, err := st.ReadState(ctx, key)
	if err != nil {
		return err
	}
	if objs, err := scoperun.StateObjects(cur); err != nil || len(objs) > 0 {
		return errcode.New(errcode.ScopeHasState, "scope %s has a state already: adopting would replace it", key).With("scope", key.Scope)
	}
	return nil
}

// refuseForeign refuses a state whose resources another scope of the
// environment owns under any identity: adopting them would give them two
// owners.
func refuseForeign(ctx context.Context, st store.Store, key store.Key, pol ownership.Policy, objects []ownership.Object) error {
	foreign, err := ownership.ForeignOwners(ctx, st, key, pol, objects)
	if err != nil {
		return err
	}
	return ownership.ForeignObjectsError(key, "adopting the state", foreign)
}
