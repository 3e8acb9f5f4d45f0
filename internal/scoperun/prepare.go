package scoperun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/rootmodule"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// workdir is what prepare produced: the run's temporary directory (the
// plan file, the engine's CLI configuration, a plan's data directory) and
// the backend the configuration declares itself, "" when sponson serves
// the state.
type workdir struct {
	tmp     string
	backend string
}

// ownBackend reports whether the configuration declares its own backend:
// the state is then the engine's to read, not the store's, and the scope
// takes no part in a succession.
func (w workdir) ownBackend() bool { return w.backend != "" }

// prepare is the first phase: the run's temporary directory, the
// configuration's own backend, and, for a destroy, whether there is
// anything to destroy at all. done is set when the run ends here.
func (r *runner) prepare(ctx context.Context) (work workdir, done bool, err error) {
	tmp, err := os.MkdirTemp("", "sponson-run-")
	if err != nil {
		return workdir{}, false, errcode.Wrap(errcode.Internal, err, "creating a temporary directory")
	}
	r.onRelease(func() { os.RemoveAll(tmp) })
	if err := refuseNoConfig(r.o.Dir); err != nil {
		return workdir{}, false, err
	}

	backend, err := engine.DeclaredBackend(r.o.Dir)
	if err != nil {
		return workdir{}, false, errcode.Wrap(errcode.Usage, err, "reading the configuration in %s", r.o.Dir)
	}
	if err := refuseEngineEncryption(r.o.Dir); err != nil {
		return workdir{}, false, err
	}
	if backend != "" {
		r.warn(fmt.Sprintf("the configuration declares its own %q backend: each scope gets its own workspace %s in it; state writes are guarded by the scope lease and the backend's own lock but are NOT fenced. Remove the backend block to let sponson serve a fenced state.", backend, Workspace(r.key)))
	}
	work = workdir{tmp: tmp, backend: backend}
	if err := r.checkStateWritable(work.ownBackend()); err != nil {
		return workdir{}, false, err
	}
	if err := r.checkStateKey(ctx, work.ownBackend()); err != nil {
		return workdir{}, false, err
	}
	if r.o.Command == Destroy {
		done, err = r.nothingToDestroy(ctx, work.ownBackend())
	}
	return work, done, err
}

// refuseNoConfig refuses a configuration directory that is missing or
// holds no configuration file, as both engines do; without the refusal a
// plan there is "no changes" and an apply would destroy all the scope owns.
func refuseNoConfig(dir string) error {
	ok, err := rootmodule.HasConfig(dir, engine.OverrideFileName)
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "cannot read the configuration directory %s", dir).
			WithHint("Give the root module's directory with --chdir DIR (or -chdir=DIR, or SPONSON_CHDIR).")
	}
	if !ok {
		return errcode.New(errcode.Usage, "%s holds no configuration files (.tf, .tf.json, .tofu): the engine refuses to run there", dir).
			WithHint("Run sponson in the root module's directory, or give it with --chdir DIR (or -chdir=DIR, or SPONSON_CHDIR).").
			With("directory", dir)
	}
	return nil
}

// nothingToDestroy reports (and says) when a destroy has nothing to do: the
// scope is unknown, or destroyed already and its state is empty. Such a
// destroy takes no lease and writes nothing.
func (r *runner) nothingToDestroy(ctx context.Context, ownBackend bool) (bool, error) {
	if ownBackend {
		return false, nil
	}
	prev, err := store.Latest(ctx, r.o.Store, r.key)
	if err != nil {
		return false, err
	}
	if prev != nil && len(prev.Ledger) > 0 {
		return false, nil
	}
	state, err := r.o.Store.ReadState(ctx, r.key)
	if err != nil {
		return false, err
	}
	if !stateEmpty(state) {
		return false, nil
	}
	switch {
	case prev == nil:
		r.info(fmt.Sprintf("scope %s has never been applied: nothing to destroy", r.key))
		r.res.Status = "nothing"
	case prev.Status == receipt.StatusDestroyed || prev.SupersededBy != "" || prev.MovedTo != "":
		r.info(fmt.Sprintf("scope %s owns nothing (last run %s: %s %s): nothing to destroy", r.key, prev.RunID, prev.Command, prev.Status))
		r.res.Status = "nothing"
	default:
		return false, nil
	}
	return true, nil
}

// Workspace is the engine workspace of a scope when the configuration keeps
// its own backend.
func Workspace(key store.Key) string { return key.Environment + "--" + key.Scope }

// DataDir is the engine's data directory for one scope: each (environment,
// scope) keeps its own backend and provider set-up, so switching scopes in
// one configuration directory never needs a re-init.
func DataDir(dir string, key store.Key) string {
	return filepath.Join(dir, ".terraform", "sponson", key.Environment, key.Scope)
}

// checkStateWritable refuses a run that writes when the store would refuse
// its state (an encrypting store without its key): found by the engine's
// state write, the objects it created would have no state.
func (r *runner) checkStateWritable(ownBackend bool) error {
	c, ok := r.o.Store.(store.StateChecker)
	if r.o.Command == Plan || ownBackend || !ok {
		return nil
	}
	if err := c.CheckState(r.key); err != nil {
		e := errcode.As(err)
		e.Message = fmt.Sprintf("%s %s: %s; nothing was run", r.o.Command, r.key, e.Message)
		return e
	}
	return nil
}

// checkStateKey reads the scope's state before the lease, in a store that
// seals state, so that a state the given key cannot open (another key, or
// none) is refused naming the key it was sealed with, before the lease and
// the engine (where it failed as ENGINE_FAILED).
func (r *runner) checkStateKey(ctx context.Context, ownBackend bool) error {
	if _, ok := r.o.Store.(store.StateChecker); !ok || ownBackend {
		return nil
	}
	if _, err := r.o.Store.ReadState(ctx, r.key); errcode.Is(err, errcode.Usage) {
		e := errcode.As(err)
		e.Message = fmt.Sprintf("%s %s: %s; nothing was run", r.o.Command, r.key, e.Message)
		return e
	}
	return nil
}

// refuseEngineEncryption refuses a configuration that has the engine
// encrypt its state (OpenTofu's `encryption` block, or its TF_ENCRYPTION
// variable), before the lease: sponson reads the state the engine writes
// for the ledger, the outputs, drift, succession and the ownership check,
// and an encrypted state would silently leave the scope owning nothing
// (docs/design.md §7.3 "The state server"). The store encrypts state at
// rest itself.
func refuseEngineEncryption(dir string) error {
	declared, err := engine.DeclaresEncryption(dir)
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "reading the configuration in %s", dir)
	}
	how := ""
	switch {
	case declared:
		how = "the configuration declares the engine's own state encryption (a terraform { encryption { ... } } block)"
	case os.Getenv("TF_ENCRYPTION") != "":
		how = "TF_ENCRYPTION is set, which has OpenTofu encrypt its state and plans"
	default:
		return nil
	}
	return errcode.New(errcode.Usage, "%s: sponson reads the state the engine writes (ledger, outputs, drift, the ownership check) and cannot read an encrypted one, so the run is refused before anything is written", how).
		WithHint("Remove the encryption block (or unset TF_ENCRYPTION) and let the store encrypt state at rest: set SPONSON_STATE_KEY with the git or S3 store (README, \"State keys\"), or rely on the encryption of your bucket or database server.")
}
