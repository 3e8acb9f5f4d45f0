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
	"slices"
	"sort"
	"strings"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/statesrv"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
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
	// StoreURL names Store for the provider the engine starts; it may carry
	// credentials and is never printed.
	StoreURL string
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
	// OpenEngine starts the engine session; engine.Open when nil. Tests
	// replace it with a stand-in that speaks to the same state server.
	OpenEngine func(context.Context, engine.Options) (Engine, error)
}

// Engine is what a run needs of the engine: *engine.Session, or a test's
// stand-in.
type Engine interface {
	Init(ctx context.Context) error
	SelectWorkspace(ctx context.Context, name string) error
	Plan(ctx context.Context, out string, destroy, lock bool, vars []engine.VarArg) (bool, error)
	ShowPlan(ctx context.Context, path string) (*tfjson.Plan, error)
	Apply(ctx context.Context, plan string) error
	StatePull(ctx context.Context) ([]byte, error)
	Describe() receipt.Engine
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
	// Quarantined is set when the engine's errored.tfstate was moved into
	// the store.
	Quarantined bool
	// NeedsApproval is set on a plan whose apply will need --approved-by.
	NeedsApproval bool
}

// NewRunID returns a fresh run id: "run-" and 8 hex digits.
func NewRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "run-" + hex.EncodeToString(b)
}

type runner struct {
	handover   *handover
	o          Options
	res        *Result
	key        store.Key
	held       *lease.Held
	sess       Engine
	ownBackend bool
	started    time.Time
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

func (r *runner) run(ctx context.Context) error {
	o := r.o
	writes := o.Command != Plan
	tmp, err := os.MkdirTemp("", "sponson-run-")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "creating a temporary directory")
	}
	defer os.RemoveAll(tmp)
	r.started = time.Now()

	// Writes after an interrupt (the failed receipt, the release) must
	// still happen: they use a context that the interrupt does not cancel.
	bg := context.WithoutCancel(ctx)

	backend, err := engine.DeclaredBackend(o.Dir)
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "reading the configuration in %s", o.Dir)
	}
	r.ownBackend = backend != ""
	if backend != "" {
		r.warn(fmt.Sprintf("the configuration declares its own %q backend: each scope gets its own workspace %s in it; state writes are guarded by the scope lease and the backend's own lock but are NOT fenced. Remove the backend block to let sponson serve a fenced state.", backend, Workspace(r.key)))
	}

	if o.Command == Destroy {
		if nothing, err := r.nothingToDestroy(ctx); err != nil {
			return err
		} else if nothing {
			return nil
		}
	}
	if writes {
		if err := r.acquire(ctx); err != nil {
			return err
		}
		defer func() {
			if w := r.held.Release(bg); w != "" {
				r.warn(w)
			}
		}()
	} else if l, err := o.Store.ReadLease(ctx, r.key); err == nil && l.Live(time.Now()) {
		r.res.Running = &l
		r.warn(fmt.Sprintf("apply running in this scope since %s (run %s); this plan may be outdated when it finishes", l.AcquiredAt.Local().Format("15:04"), l.Holder))
	}

	prev, err := o.Store.LatestReceipt(ctx, r.key)
	if err != nil {
		return err
	}
	if writes {
		// Succession (package succession): a predecessor finishes a
		// handover it promised, a successor takes over or resumes one.
		defer r.releaseHandover(bg)
		if prev, err = r.finishPending(bg, prev); err != nil {
			return err
		}
		if o.Command == Destroy {
			if copyOnly, err := r.unpromisedCopy(ctx, prev); err != nil {
				return err
			} else if copyOnly {
				return r.dropCopy(bg, prev)
			}
		}
		if prev, err = r.beginSuccession(bg, prev); err != nil {
			return err
		}
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

	dataDir := DataDir(o.Dir, r.key)
	if !writes {
		// A plan may run while an apply of the same scope holds the engine's
		// lock on the scope's data directory; it gets a directory of its own.
		dataDir = filepath.Join(tmp, "data")
	}
	env := []string{"TF_DATA_DIR=" + dataDir}
	if backend == "" {
		srv, err := statesrv.Start(o.Store, r.key, r.leaseFn, statesrv.OnLeaseLost(func(e error) {
			if r.held != nil {
				r.held.MarkLost(e)
			}
		}))
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "starting the state server")
		}
		defer srv.Close()
		env = append(env, srv.Environ()...)
		ov, err := engine.PlaceOverride(o.Dir)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "placing the backend override in %s", o.Dir)
		}
		defer func() {
			if err := ov.Release(); err != nil {
				r.warn(fmt.Sprintf("could not release the backend override %s: %v; it is safe to delete once no sponson run uses %s", filepath.Join(o.Dir, engine.OverrideFileName), err, o.Dir))
			}
		}()
	}
	cli, err := engine.WriteCLIConfig(filepath.Join(tmp, "cli"), o.ProviderBinary, o.ProviderVersion, os.Getenv("TF_CLI_CONFIG_FILE"))
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "writing the engine's CLI configuration")
	}
	if cli.Warning != "" {
		r.warn(cli.Warning)
	}
	env = append(env, "TF_CLI_CONFIG_FILE="+cli.File)
	if o.StoreURL != "" {
		// The provider's own lease-taking (sponson_lease during a plan, or
		// anything without a hand-over) uses the run's store too.
		env = append(env, storeurl.EnvVar+"="+o.StoreURL)
	}
	env = append(env, o.Context.Environ()...)
	if r.held != nil {
		env = append(env, lease.HandoverEnv(o.StoreURL, r.held.Lease())...)
	} else {
		// A plan hands over no lease: the provider must not write.
		env = append(env, lease.EnvStore+"=", lease.EnvHolder+"=", lease.EnvToken+"=")
	}

	open := o.OpenEngine
	if open == nil {
		open = func(ctx context.Context, eo engine.Options) (Engine, error) { return engine.Open(ctx, eo) }
	}
	sess, err := open(runCtx, engine.Options{Dir: o.Dir, Binary: o.Engine, Env: env, Stdout: o.EngineOut, Stderr: o.EngineOut})
	if err != nil {
		return err
	}
	r.sess = sess
	r.res.Engine = sess.Describe()
	if err := sess.Init(runCtx); err != nil {
		return r.engineErr(ctx, err)
	}
	if backend != "" {
		if err := sess.SelectWorkspace(runCtx, Workspace(r.key)); err != nil {
			return r.engineErr(ctx, err)
		}
	}

	var settled []receipt.Settlement
	if writes {
		if settled, err = r.settle(ctx, prev); err != nil {
			return err
		}
		r.reviewQuarantine(ctx)
	}

	planPath := filepath.Join(tmp, "plan.bin")
	changed, err := sess.Plan(runCtx, planPath, o.Command == Destroy, writes, o.Vars)
	if err != nil {
		return r.engineErr(ctx, err)
	}
	plan, err := sess.ShowPlan(runCtx, planPath)
	if err != nil {
		return r.engineErr(ctx, err)
	}
	r.res.Summary = engine.Summarize(plan)
	pol := ownership.PolicyFromPlan(plan)
	planned := ownership.Identify(plan, pol)
	for _, p := range planned {
		if p.Identity == "" && len(p.Unknown) > 0 && p.Creates() {
			r.info(fmt.Sprintf("identity of %s is unknown until apply (%s); it is recorded under its address until then", p.Address, strings.Join(p.Unknown, ", ")))
		}
	}
	// The foreign check: before the engine writes anything, no planned
	// change may touch an object another scope of the environment owns.
	if err := r.checkForeign(ctx, planned); err != nil {
		return err
	}
	rules := ownership.RulesFromPlan(plan)
	if err := r.checkApproval(rules, plan); err != nil {
		return err
	}
	if o.Command == Plan {
		r.res.Status = receipt.StatusUnchanged
		if changed {
			r.res.Status = "changes"
		}
		return nil
	}

	releaseParents, err := r.acquireParents(runCtx, rules, plan, cancel)
	if err != nil {
		return err
	}
	defer releaseParents()

	rec := r.newReceipt(prev, plan, planned)
	rec.Settled = settled
	r.res.Receipt = rec
	// The checkpoint: before the engine writes anything, the store knows a
	// run is under way and holds an intent for every create, so a crash
	// mid-apply never leaves a resource nobody knows may exist.
	if err := r.writeReceipt(bg, rec); err != nil {
		return err
	}
	// Another scope may have written an intent for the same object since
	// the check: with both intents in the index, one deterministic rule
	// says who goes on.
	if err := r.settleRaces(ctx, planned); err != nil {
		rec.Status = receipt.StatusFailed
		rec.FinishedAt = time.Now().UTC()
		rec.Ledger = carried(prev)
		e := errcode.As(err)
		rec.Error = &receipt.Failure{Code: string(e.Code), Message: e.Message}
		r.res.Status = rec.Status
		if werr := r.writeReceipt(bg, rec); werr != nil {
			return werr
		}
		return err
	}

	var applyErr error
	if changed {
		applyErr = sess.Apply(runCtx, planPath)
	}
	if applyErr != nil {
		r.quarantineErrored(bg)
	}
	if lostErr := r.held.Err(); lostErr != nil {
		// Nothing more may be written: the run that took over is
		// authoritative. The lost run's receipt stays as its checkpoint.
		r.res.Status = receipt.StatusFailed
		return lostErr
	}
	// Without the state the checkpoint's ledger stays, intents included,
	// for the next run to settle.
	resources, readErr := r.currentState(bg)
	if readErr == nil {
		var notes []string
		rec.Ledger, notes = ownership.Ledger(prev, resources, pol, planned)
		for _, n := range notes {
			r.warn(n)
		}
	}
	rec.FinishedAt = time.Now().UTC()
	switch {
	case applyErr != nil:
		rec.Status = receipt.StatusFailed
		e := errcode.As(r.engineErr(ctx, applyErr))
		rec.Error = &receipt.Failure{Code: string(e.Code), Message: e.Message}
	case readErr != nil:
		rec.Status = receipt.StatusFailed
		rec.Error = &receipt.Failure{Code: string(errcode.Internal), Message: readErr.Error()}
	case o.Command == Destroy:
		rec.Status = receipt.StatusDestroyed
	case changed:
		rec.Status = receipt.StatusApplied
	default:
		rec.Status = receipt.StatusUnchanged
	}
	// Creates whose identity was unknown at plan time are checked now that
	// it is known: the object exists already, so a hit is reported loudly
	// (the run fails) instead of being refused.
	lateErr := r.checkLateIdentities(bg, planned, rec.Ledger)
	if lateErr != nil && rec.Error == nil {
		rec.Status = receipt.StatusFailed
		e := errcode.As(lateErr)
		rec.Error = &receipt.Failure{Code: string(e.Code), Message: e.Message}
	}
	r.res.Status = rec.Status
	if err := r.writeReceipt(bg, rec); err != nil {
		return err
	}
	if applyErr != nil {
		return r.engineErr(ctx, applyErr)
	}
	if lateErr != nil {
		return lateErr
	}
	if readErr == nil && o.Command == Apply {
		if err := r.completeSuccession(bg, rec); err != nil {
			return err
		}
	}
	if readErr != nil {
		return errcode.Wrap(errcode.Internal, readErr, "reading the state after the apply")
	}
	return nil
}

func (r *runner) acquire(ctx context.Context) error {
	cfg := r.o.Lease
	cfg.OnWait = func(l store.LeaseInfo) {
		r.info(fmt.Sprintf("waiting for the lease of %s: held by %s until %s", r.key, l.Holder, l.ExpiresAt.Local().Format("15:04:05")))
	}
	held, err := lease.Acquire(ctx, r.o.Store, r.key, r.o.RunID, cfg)
	if err != nil {
		return err
	}
	r.held = held
	if p := held.Preempted; p != nil {
		r.warn(fmt.Sprintf("took over an expired lease held by %s since %s", p.Holder, p.AcquiredAt.Local().Format(time.RFC3339)))
	}
	return nil
}

func (r *runner) leaseFn() (store.Lease, bool) {
	if r.held == nil {
		return store.Lease{}, false
	}
	return r.held.Lease(), true
}

// currentState reads the scope's state: from the store, where the state
// server put it, or from the user's backend.
func (r *runner) currentState(ctx context.Context) ([]stateResource, error) {
	var data []byte
	var err error
	if r.ownBackend {
		data, err = r.sess.StatePull(ctx)
	} else {
		data, err = r.o.Store.ReadState(ctx, r.key)
	}
	if err != nil {
		return nil, err
	}
	return readState(data)
}

// settle resolves the intents a previous run left behind (it crashed or was
// killed between its checkpoint and its receipt): an intent whose address
// is in the state is claimed, the others are dropped. The new ledger is
// built from the state anyway; the settlement is recorded and reported so
// that nothing created is silently forgotten.
func (r *runner) settle(ctx context.Context, prev *receipt.Receipt) ([]receipt.Settlement, error) {
	if prev == nil {
		return nil, nil
	}
	var intents []receipt.Entry
	for _, e := range prev.Ledger {
		if isIntent(e) {
			intents = append(intents, e)
		}
	}
	if len(intents) == 0 {
		return nil, nil
	}
	resources, err := r.currentState(ctx)
	if err != nil {
		return nil, errcode.Wrap(errcode.IntentUnresolved, err, "run %s left %d intents that cannot be settled", prev.RunID, len(intents))
	}
	present := map[string]bool{}
	for _, res := range resources {
		present[res.Address] = true
	}
	var out []receipt.Settlement
	var claimed, dropped []string
	for _, e := range intents {
		s := receipt.Settlement{Address: e.Address, FromRun: prev.RunID, Outcome: receipt.SettledDropped}
		if present[e.Address] {
			s.Outcome = receipt.SettledClaimed
			claimed = append(claimed, e.Address)
		} else {
			dropped = append(dropped, e.Address)
		}
		out = append(out, s)
	}
	r.warn(fmt.Sprintf("run %s stopped before its receipt (status %s); settled its %d intents against the state: claimed %s; dropped %s",
		prev.RunID, prev.Status, len(intents), listOrNone(claimed), listOrNone(dropped)))
	return out, nil
}

func listOrNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

// quarantineErrored moves the errored.tfstate an engine leaves in the
// configuration directory when a state write was refused (measured with
// OpenTofu 1.12: it writes the whole new state there, sensitive values
// included) into the store, so it never stays among the user's files.
func (r *runner) quarantineErrored(ctx context.Context) {
	p := filepath.Join(r.o.Dir, "errored.tfstate")
	fi, err := os.Stat(p)
	if err != nil || fi.ModTime().Before(r.started.Add(-time.Second)) {
		return
	}
	data, err := os.ReadFile(p)
	if err != nil {
		r.warn(fmt.Sprintf("the engine left %s and it could not be read: %v; remove it by hand, it may hold sensitive values", p, err))
		return
	}
	if err := r.o.Store.Quarantine(ctx, r.key, r.o.RunID, data); err != nil {
		r.warn(fmt.Sprintf("the engine left %s and it could not be quarantined in the store (%v); it stays there", p, err))
		return
	}
	os.Remove(p)
	r.res.Quarantined = true
	r.warn(fmt.Sprintf("the engine could not persist its state; the state it had is quarantined in the store as %s of %s, not left in %s", r.o.RunID, r.key, r.o.Dir))
}

// reviewQuarantine reports quarantined states that hold resources the
// current state lacks: objects that may exist without being managed.
func (r *runner) reviewQuarantine(ctx context.Context) {
	qs, err := r.o.Store.ListQuarantine(ctx, r.key)
	if err != nil || len(qs) == 0 {
		return
	}
	current, err := r.currentState(ctx)
	if err != nil {
		return
	}
	have := map[string]bool{}
	for _, c := range current {
		have[c.Address+"|"+c.ID] = true
	}
	for _, q := range qs {
		res, err := readState(q.State)
		if err != nil {
			continue
		}
		var missing []string
		for _, x := range res {
			if !have[x.Address+"|"+x.ID] {
				missing = append(missing, x.Address)
			}
		}
		if len(missing) > 0 {
			r.warn(fmt.Sprintf("the quarantined state of run %s holds %d resources the current state lacks (%s): they may exist unmanaged; import them or delete them by hand, then remove the quarantined state", q.RunID, len(missing), strings.Join(missing, ", ")))
		}
	}
}

// engineErr turns an engine failure caused by a lost lease or an interrupt
// into that cause.
func (r *runner) engineErr(ctx context.Context, err error) error {
	if r.held != nil {
		// The engine may have failed because a write of the provider was
		// refused before the renewal noticed the loss: look at the lease
		// record once, so such a run ends LOCK_LOST, not ENGINE_FAILED.
		cur := r.held.Lease()
		if l, rerr := r.o.Store.ReadLease(context.WithoutCancel(ctx), r.key); rerr == nil &&
			(l.Holder != cur.Holder || l.Token != cur.Token || !time.Now().Before(l.ExpiresAt)) {
			r.held.MarkLost(fmt.Errorf("the lease record now names %q with token %d, expiring %s", l.Holder, l.Token, l.ExpiresAt.Format(time.RFC3339)))
		}
		if lost := r.held.Err(); lost != nil {
			return lost
		}
	}
	if ctx.Err() != nil {
		return errcode.Wrap(errcode.Interrupted, err, "interrupted")
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

func (r *runner) newReceipt(prev *receipt.Receipt, plan *tfjson.Plan, planned []ownership.Planned) *receipt.Receipt {
	c := r.o.Context
	rec := &receipt.Receipt{
		Version:     receipt.Version,
		RunID:       r.o.RunID,
		Command:     string(r.o.Command),
		Environment: c.Environment,
		Scope:       c.Scope,
		Status:      receipt.StatusRunning,
		StartedAt:   r.started.UTC(),
		Branch:      c.Branch,
		PullRequest: c.PullRequest,
		Commit:      c.Commit,
		ApprovedBy:  r.o.ApprovedBy,
		Engine:      r.res.Engine,
		Changes:     Changes(plan),
		// Carried forward: a run that fails before it can read the state
		// forgets nothing the scope owned, intents of an earlier crash
		// included.
		Ledger: append(carried(prev), ownership.Intents(planned)...),
	}
	if p := r.held.Preempted; p != nil {
		rec.LockPreempted = &receipt.Preempted{Holder: p.Holder, Since: p.AcquiredAt, Until: p.ExpiresAt}
	}
	if prev != nil {
		// The succession chain stays visible on every later receipt.
		rec.InheritedFrom, rec.Inheriting, rec.SupersededBy = prev.InheritedFrom, prev.Inheriting, prev.SupersededBy
	}
	if r.o.Command == Destroy {
		// A destroy that gets this far owns what it destroys: an open
		// handover was finished (finishForDestroy) or there was none.
		rec.Inheriting = ""
	}
	return rec
}

// carried returns a copy of the previous ledger, empty when there is none.
func carried(prev *receipt.Receipt) []receipt.Entry {
	out := []receipt.Entry{}
	if prev != nil {
		out = append(out, prev.Ledger...)
	}
	return out
}

// checkForeign refuses the run when a planned change touches an object that
// another scope of the environment owns or intends to create.
func (r *runner) checkForeign(ctx context.Context, planned []ownership.Planned) error {
	ids := ownership.Identities(planned)
	if len(ids) == 0 {
		return nil
	}
	owners, err := r.o.Store.Owners(ctx, r.key.Environment, ids)
	if err != nil {
		return err
	}
	if r.handover != nil {
		// The predecessor's entries are promised to this scope; its index
		// drops them when the handover finishes.
		owners = slices.DeleteFunc(owners, func(o store.Owner) bool { return o.Scope == r.handover.pred.Scope })
	}
	return foreignError(r.key.Scope, ownership.Check(planned, owners, r.key.Scope))
}

func foreignError(scope string, conflicts []ownership.Conflict) error {
	if len(conflicts) == 0 {
		return nil
	}
	var lines []string
	var details []map[string]string
	owners := map[string]bool{}
	for _, c := range conflicts {
		how := "owns"
		if c.Owner.CreatedBy == receipt.CreatedByIntent {
			how = "is creating"
		}
		lines = append(lines, fmt.Sprintf("%s (%s) would %s %s, which scope %s %s (run %s)",
			scope, strings.Join(c.Change.Actions, "+"), "change", c.Change.Address, c.Owner.Scope, how, c.Owner.RunID))
		details = append(details, map[string]string{
			"address": c.Change.Address, "identity": c.Change.Identity, "owner": c.Owner.Scope,
			"ownerRun": c.Owner.RunID, "ownerAddress": c.Owner.Address, "ownedAs": c.Owner.CreatedBy,
		})
		owners[c.Owner.Scope] = true
	}
	var names []string
	for o := range owners {
		names = append(names, o)
	}
	sort.Strings(names)
	return errcode.New(errcode.OwnedByOtherScope, "%d planned change(s) touch resources another scope owns; nothing was written:\n  %s", len(conflicts), strings.Join(lines, "\n  ")).
		WithHint(fmt.Sprintf("Apply these changes from the owning scope (%s), or read the resources with a data source instead of managing them here.", strings.Join(names, ", "))).
		With("conflicts", details)
}

// nothingToDestroy reports (and says) when a destroy has nothing to do: the
// scope is unknown, or destroyed already and its state is empty. Such a
// destroy takes no lease and writes nothing.
func (r *runner) nothingToDestroy(ctx context.Context) (bool, error) {
	if r.ownBackend {
		return false, nil
	}
	prev, err := r.o.Store.LatestReceipt(ctx, r.key)
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
	case prev.Status == receipt.StatusDestroyed || prev.SupersededBy != "":
		r.info(fmt.Sprintf("scope %s owns nothing (last run %s: %s %s): nothing to destroy", r.key, prev.RunID, prev.Command, prev.Status))
		r.res.Status = "nothing"
	default:
		return false, nil
	}
	return true, nil
}

// stateEmpty reports whether a scope's state holds no managed resources. A
// state that cannot be read is not known to be empty: the destroy goes
// ahead, and the engine reads the state and reports what is wrong with it.
func stateEmpty(state []byte) bool {
	res, err := readState(state)
	return err == nil && len(res) == 0
}

// checkLateIdentities looks up the identities that became known during the
// apply (creates planned with an unknown identifying attribute) in the
// environment's ownership index.
func (r *runner) checkLateIdentities(ctx context.Context, planned []ownership.Planned, ledger []receipt.Entry) error {
	late := map[string]ownership.Planned{}
	for _, p := range planned {
		if p.Creates() && p.Identity == "" {
			late[p.Address] = p
		}
	}
	if len(late) == 0 {
		return nil
	}
	var known []ownership.Planned
	for _, e := range ledger {
		if p, ok := late[e.Address]; ok {
			p.Identity = e.Identity
			known = append(known, p)
		}
	}
	owners, err := r.o.Store.Owners(ctx, r.key.Environment, ownership.Identities(known))
	if err != nil {
		r.warn(fmt.Sprintf("could not check the identities learned during the apply: %v", err))
		return nil
	}
	conflicts := ownership.Check(known, owners, r.key.Scope)
	if len(conflicts) == 0 {
		return nil
	}
	return errcode.As(foreignError(r.key.Scope, conflicts)).WithHint("The apply created objects whose identity another scope already owns (their identity was unknown at plan time). Remove them from this configuration or from the other scope, then run again.")
}

// settleRaces re-reads the environment after this run's intents were
// written. Where another scope holds the same identity, the holder the store
// recorded first keeps it (ownership.Winner); if that is not this run, the
// run is refused before the engine writes.
func (r *runner) settleRaces(ctx context.Context, planned []ownership.Planned) error {
	var ids []string
	for _, p := range planned {
		if p.Creates() && p.Identity != "" {
			ids = append(ids, p.Identity)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	owners, err := r.o.Store.Owners(ctx, r.key.Environment, ids)
	if err != nil {
		return err
	}
	holders := map[string][]store.Owner{}
	for _, o := range owners {
		holders[o.Identity] = append(holders[o.Identity], o)
	}
	var lost []ownership.Conflict
	for _, p := range planned {
		hs := holders[p.Identity]
		if !p.Creates() || p.Identity == "" || len(hs) < 2 {
			continue
		}
		if w := ownership.Winner(hs); w.Scope != r.key.Scope {
			lost = append(lost, ownership.Conflict{Change: p, Owner: w})
		}
	}
	return foreignError(r.key.Scope, lost)
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
