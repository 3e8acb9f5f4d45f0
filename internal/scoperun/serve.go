package scoperun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/reaper"
	"github.com/sponson/terraform-provider-sponson/internal/statesrv"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/statecrypt"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// engineRun is what serve produced: the engine session, the context it runs
// under and the function that cancels that context with a cause.
type engineRun struct {
	sess Engine
	ctx  context.Context
	stop context.CancelCauseFunc
	// ownBackend is set when the configuration declares its own backend:
	// the state is then the engine's to read, not the store's
	// (currentState).
	ownBackend bool
	// states is the state server the engine uses, nil with ownBackend.
	states *statesrv.Server
}

// serve is the fourth phase: it serves the scope's state to the engine
// through the fenced state server (unless the configuration keeps its own
// backend), starts the engine with the environment that points it there,
// and initialises it. stateKey is the scope whose state the engine plans
// against (a predecessor's, when a plan previews a succession).
func (r *runner) serve(ctx context.Context, work workdir, stateKey store.Key) (*engineRun, error) {
	// The engine runs under runCtx: losing the lease cancels it, which makes
	// terraform-exec interrupt the engine (SIGINT: it flushes and exits).
	runCtx, cancel := context.WithCancelCause(ctx)
	r.onRelease(func() { cancel(nil) })
	if r.held != nil {
		go func() {
			select {
			case <-r.held.Lost():
				cancel(r.held.Err())
			case <-runCtx.Done():
			}
		}()
	}
	// No state key reaches the engine, its providers or provisioners: the
	// store read them when it opened; they come back when the run ends.
	r.onRelease(statecrypt.Scrub())
	r.watchEngine(work)
	env, userCLI, states, err := r.engineEnv(work, stateKey)
	if err != nil {
		return nil, err
	}
	env = append(env, reaper.Marker(r.o.RunID))
	open := r.o.OpenEngine
	if open == nil {
		open = func(ctx context.Context, eo engine.Options) (Engine, error) { return engine.Open(ctx, eo) }
	}
	sess, err := open(runCtx, engine.Options{Dir: r.o.Dir, Binary: r.o.Engine, Env: env, Stdout: r.o.Report.EngineOut, Stderr: r.o.Report.EngineOut, Flags: r.o.EngineFlags, Heartbeat: r.o.Report.Heartbeat, OnEvent: r.onEngineEvent, OnReadEnd: r.onEngineReadEnd})
	if err != nil {
		return nil, err
	}
	r.res.Engine = sess.Describe()
	if err := r.initIfNeeded(runCtx, sess, work, userCLI); err != nil {
		return nil, r.engineErr(ctx, err)
	}
	if work.backend != "" {
		if err := sess.SelectWorkspace(runCtx, Workspace(r.key)); err != nil {
			return nil, r.engineErr(ctx, err)
		}
	}
	return &engineRun{sess: sess, ctx: runCtx, stop: cancel, ownBackend: work.ownBackend(), states: states}, nil
}

// watchEngine makes sure the engine's children end with the run: on every
// exit the run controls, release kills what still carries the run's marker;
// if the run dies, the watcher process does it, and removes the backend
// override the run placed (package reaper).
func (r *runner) watchEngine(work workdir) {
	var files []string
	if work.backend == "" {
		files = append(files, filepath.Join(r.o.Dir, engine.OverrideFileName))
	}
	w, err := reaper.Start(r.o.ProviderBinary, r.o.RunID, files...)
	if err != nil {
		r.warn(fmt.Sprintf("could not start the watcher that ends the engine's processes if sponson is killed (%v); if it is, end them by hand", err))
	}
	r.onRelease(func() {
		reaper.KillMarked(r.o.RunID)
		if w != nil {
			w.Stop()
		}
	})
}

// engineEnv is the engine's environment: its own data directory, the state
// server, the provider this process serves (TF_REATTACH_PROVIDERS),
// the store and run context for the provider, and the lease hand-over;
// and the user's CLI configuration files the engine reads, which the init
// stamp covers (read before the engine's environment names the run's own).
func (r *runner) engineEnv(work workdir, stateKey store.Key) (env, userCLI []string, states *statesrv.Server, err error) {
	dataDir := DataDir(r.o.Dir, r.key)
	if r.o.Command == Plan {
		// A plan may run while an apply of the same scope holds the engine's
		// lock on the scope's data directory; it gets a directory of its own.
		dataDir = filepath.Join(work.tmp, "data")
	}
	env = []string{"TF_DATA_DIR=" + dataDir}
	if work.backend == "" {
		if states, err = r.serveState(stateKey); err != nil {
			return nil, nil, nil, err
		}
		env = append(env, states.Environ()...)
	}
	// The engine reads the user's CLI configuration by its own rules; the
	// init stamp covers the files it would read.
	files, json := engine.UserCLIConfig(r.o.Engine, os.Getenv)
	userCLI = append(files, json...)
	var serve func() ([]string, func(), error)
	if r.o.ServeProvider != nil {
		serve = func() ([]string, func(), error) {
			return r.o.ServeProvider(context.Background(), r.o.ProviderVersion, r.o.Dir, countingReader{states: r.o.Store, self: r.key, n: &r.stackReads})
		}
	}
	provEnv, stop, err := engine.WithProvider(work.tmp, serve, r.warn)
	if err != nil {
		return nil, nil, nil, err
	}
	r.onRelease(stop)
	env = append(env, provEnv...)
	if r.o.StoreURL != "" {
		// The provider's own lease-taking (sponson_lease during a plan, or
		// anything without a hand-over) uses the run's store too.
		env = append(env, storeurl.EnvVar+"="+r.o.StoreURL)
	}
	env = append(env, r.o.Context.Environ()...)
	if r.held != nil {
		env = append(env, lease.HandoverEnv(r.o.StoreURL, r.held.Lease())...)
	} else {
		// A plan hands over no lease: the provider must not write.
		env = append(env, lease.EnvStore+"=", lease.EnvHolder+"=", lease.EnvToken+"=")
	}
	return env, userCLI, states, nil
}

// serveState starts the state server and places the backend override that
// points the engine at it; both stay until release. The server writes
// through the run's held lease, which notices itself when a write is
// refused; a plan hands it none.
func (r *runner) serveState(stateKey store.Key) (*statesrv.Server, error) {
	var w statesrv.Writer
	if r.held != nil {
		w = r.held
	}
	// A plan that previews a succession plans against the predecessor's
	// state, read-only (it hands the server no lease, so no write).
	srv, err := statesrv.Start(r.o.Store, stateKey, w)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "starting the state server")
	}
	r.onRelease(func() { srv.Close() })
	ov, err := engine.PlaceOverride(r.o.Dir)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "placing the backend override in %s", r.o.Dir)
	}
	r.onRelease(func() {
		if err := ov.Release(); err != nil {
			r.warn(fmt.Sprintf("could not release the backend override %s: %v; it is safe to delete once no sponson run uses %s", filepath.Join(r.o.Dir, engine.OverrideFileName), err, r.o.Dir))
		}
	})
	return srv, nil
}

// initIfNeeded runs the engine's init unless the scope's data directory is
// already initialised for this configuration (docs/design.md §8: the engine
// starts only when needed): the stamp init leaves there (engine.InitStamp)
// still matches. A plan's data directory is new each run: it borrows the
// scope's when that is current, and initialises otherwise. A configuration
// with its own backend may take its backend configuration from the
// environment, so it always initialises. userCLI are the user's CLI
// configuration files the engine reads (engineEnv).
func (r *runner) initIfNeeded(ctx context.Context, sess Engine, work workdir, userCLI []string) error {
	if work.backend != "" {
		return r.init(ctx, sess)
	}
	dataDir := DataDir(r.o.Dir, r.key)
	extra := []string{engine.FileIdentity(r.o.Engine), sess.Describe().Name, sess.Describe().Version, r.o.ProviderVersion}
	for _, f := range userCLI {
		b, _ := os.ReadFile(f)
		extra = append(extra, f, string(b))
	}
	stamp, err := engine.InitStamp(r.o.Dir, dataDir, extra...)
	current := err == nil && engine.InitCurrent(dataDir, stamp)
	if r.o.Command == Plan {
		// The plan's own data directory borrows what the scope's current
		// one installed (or a sibling scope's), rather than initialising
		// it again.
		src := dataDir
		if !current {
			src = r.initialisedSibling(dataDir, extra)
		}
		if src != "" && engine.BorrowInit(src, filepath.Join(work.tmp, "data")) == nil {
			return nil
		}
		return r.init(ctx, sess)
	}
	if current {
		return nil
	}
	if err := engine.ForgetInit(dataDir); err != nil {
		return errcode.Wrap(errcode.Internal, err, "clearing the init stamp in %s", dataDir)
	}
	if r.copySiblingInit(dataDir, extra) {
		return nil
	}
	if err := r.init(ctx, sess); err != nil {
		return err
	}
	if stamp, err = engine.InitStamp(r.o.Dir, dataDir, extra...); err != nil {
		r.warn(fmt.Sprintf("could not stamp the initialisation of %s (%v); the next run initialises again", dataDir, err))
		return nil
	}
	if err := engine.RecordInit(dataDir, stamp); err != nil {
		r.warn(fmt.Sprintf("could not record the initialisation of %s (%v); the next run initialises again", dataDir, err))
	}
	return nil
}

// maxSiblings bounds the sibling data directories a run looks at for one
// whose initialisation it can take over: each costs an init stamp.
const maxSiblings = 4

// initialisedSibling returns the data directory of another scope of this
// configuration that is initialised for it as it is now (its stamp
// current), the most recently initialised first; "" when there is none
// among the few looked at.
func (r *runner) initialisedSibling(dataDir string, extra []string) string {
	stamps, _ := filepath.Glob(filepath.Join(r.o.Dir, ".terraform", "sponson", "*", "*", engine.InitStampFile))
	type cand struct {
		dir string
		mod int64
	}
	var cands []cand
	for _, st := range stamps {
		d := filepath.Dir(st)
		if d == dataDir {
			continue
		}
		if fi, err := os.Stat(st); err == nil {
			cands = append(cands, cand{d, fi.ModTime().UnixNano()})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].mod > cands[j].mod })
	for i, c := range cands {
		if i == maxSiblings {
			break
		}
		if stamp, err := engine.InitStamp(r.o.Dir, c.dir, extra...); err == nil && engine.InitCurrent(c.dir, stamp) {
			return c.dir
		}
	}
	return ""
}

// copySiblingInit initialises a new scope's data directory by taking over a
// sibling scope's current initialisation (engine.CopyInit) instead of
// starting the engine's init: the backend configuration never names a
// scope (engine.OverrideContent), and the stamp, computed again on the
// copy, proves it initialised for this configuration. It reports whether it
// did; on any doubt the directory is cleared for init.
func (r *runner) copySiblingInit(dataDir string, extra []string) bool {
	if _, err := os.Stat(dataDir); err == nil {
		return false // not new: init brings it up to date in place
	}
	src := r.initialisedSibling(dataDir, extra)
	if src == "" {
		return false
	}
	want, err := engine.InitStamp(r.o.Dir, src, extra...)
	if err != nil {
		return false
	}
	if err := engine.CopyInit(r.o.Dir, src, dataDir); err == nil {
		got, err := engine.InitStamp(r.o.Dir, dataDir, extra...)
		// Still current after the copy: the sibling was not initialised
		// again while it was copied.
		if err == nil && got == want && engine.InitCurrent(src, want) && engine.RecordInit(dataDir, got) == nil {
			return true
		}
	}
	_ = os.RemoveAll(dataDir)
	return false
}

// init runs the engine's init. A plan is read-only: the lock file init
// writes into the user's directory is put back as it was when the run ends
// (engine.LockGuard).
func (r *runner) init(ctx context.Context, sess Engine) error {
	if r.o.Command == Plan {
		guard, err := engine.GuardLockFile(r.o.Dir)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "reading the lock file in %s", r.o.Dir)
		}
		r.onRelease(func() {
			if err := guard.Restore(); err != nil {
				r.warn(fmt.Sprintf("could not restore %s as it was before the plan: %v", filepath.Join(r.o.Dir, engine.LockFileName), err))
			}
		})
	}
	defer r.section("init", "engine init")()
	r.progress(Progress{Step: StepInit})
	return sess.Init(ctx)
}
