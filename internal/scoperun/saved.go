package scoperun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/succession"
	"github.com/sponson/terraform-provider-sponson/internal/version"
)

// planSeen is what a plan saw of the store before the engine ran, for its
// saved plan (the owners the foreign check saw are checked.owners).
type planSeen struct {
	// pred is the predecessor whose state a plan previewing a succession
	// is made against (nil: the scope's own state).
	pred *receipt.Receipt
	// own is the scope's latest receipt.
	own *receipt.Receipt
	// state marks the state the plan is made against.
	state savedplan.StateMark
}

// stateKey is the scope whose state the engine plans against: the
// predecessor's when a plan previews a succession.
func (r *runner) stateKey(seen planSeen) store.Key {
	if seen.pred != nil {
		return store.Key{Stack: r.key.Stack, Environment: r.key.Environment, Scope: seen.pred.Scope}
	}
	return r.key
}

// previewSuccession makes a plan show what the apply will do when the apply
// takes over a predecessor (succession): the apply inherits its state and
// ledger before the engine plans, so the plan is made against that state
// too, and the predecessor's resources are not foreign to it. It writes
// nothing (h only records the preview). It returns what the plan saw, the
// state it is made against marked, for a saved plan.
func (r *runner) previewSuccession(ctx context.Context, prev *receipt.Receipt, h *succession.Handover, ownBackend bool) (planSeen, error) {
	seen := planSeen{own: prev}
	p := r.o.Context.Predecessor
	if prev != nil && prev.Inheriting != "" {
		p = prev.Inheriting
	}
	if p != "" && !ownBackend {
		predKey := store.Key{Stack: r.key.Stack, Environment: r.key.Environment, Scope: p}
		pred, err := store.Latest(ctx, r.o.Store, predKey)
		if err != nil {
			return seen, err
		}
		act, err := succession.Decide(r.key.Scope, prev, pred)
		if err != nil {
			return seen, err
		}
		switch {
		case act == succession.Start || (act == succession.Resume && !succession.Promised(r.key.Scope, pred)):
			seen.pred = pred
			h.Preview(predKey, false)
			r.res.InheritedFrom = p
			r.warn(fmt.Sprintf("this plan includes the takeover of %d resources from %s (succession): the apply inherits them, and the plan is made against %s's state", len(succession.Inherited(pred)), p, p))
		case act == succession.Resume || act == succession.Finish:
			// Promised already: the scope's own state holds the copy,
			// and the predecessor's index entries are this scope's.
			h.Preview(predKey, act == succession.Finish)
		}
	}
	if ownBackend {
		return seen, nil
	}
	key := r.stateKey(seen)
	state, err := r.o.Store.ReadState(ctx, key)
	if err != nil {
		return seen, err
	}
	seen.state = savedplan.Mark(key.Scope, state)
	return seen, nil
}

// savePlan writes the saved plan of `plan -out`: the engine's plan and
// what this run decided: what it saw before the engine ran, and c.
func (r *runner) savePlan(work workdir, seen planSeen, c *checked) error {
	if r.o.JSONPlan != "" {
		// The plan's values, sensitive ones included: mode 0600, as the
		// saved plan.
		if err := writePrivate(r.o.JSONPlan, c.planJSON); err != nil {
			return err
		}
		r.info(fmt.Sprintf("wrote the engine's plan JSON to %s (mode 0600: it holds the plan's values, sensitive ones included)", r.o.JSONPlan))
	}
	if r.o.SavePlan == "" {
		return nil
	}
	if work.ownBackend() {
		return errcode.New(errcode.Usage, "-out needs the state sponson serves; this configuration declares its own backend").
			WithHint("Remove the backend block, or plan and apply in one `sponson apply`.")
	}
	data, err := os.ReadFile(c.path)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "reading the engine's saved plan")
	}
	ctxt := r.o.Context
	m := savedplan.Meta{
		Sponson: version.Version, RunID: r.o.RunID, CreatedAt: time.Now().UTC(),
		Stack: r.key.Stack, Environment: r.key.Environment, Scope: r.key.Scope,
		Commit: ctxt.Commit, Branch: ctxt.Branch, PullRequest: ctxt.PullRequest,
		Engine: r.res.Engine, State: seen.state, ApprovalNeeded: r.res.NeedsApproval,
		Touches: []savedplan.Touch{}, Owners: c.owners, Reads: StackReads(c.plan),
	}
	if m.Owners == nil {
		m.Owners = []store.Owner{}
	}
	if seen.own != nil {
		m.Receipt = seen.own.RunID
	}
	if p := seen.pred; p != nil {
		m.Succession = &savedplan.Succession{From: p.Scope, FromRun: p.RunID}
	}
	for _, p := range c.planned {
		m.Touches = append(m.Touches, savedplan.Touch{Address: p.Address, Identity: p.Identity, Actions: p.Actions, Keys: p.AllKeys()})
	}
	if err := savedplan.Write(r.o.SavePlan, &savedplan.File{Meta: m, Plan: data, PlanJSON: c.planJSON, PlanText: c.planText}, r.o.PlanKey); err != nil {
		return err
	}
	r.info(fmt.Sprintf("saved the plan to %s (mode 0600: it holds the engine's plan, sensitive values included); `sponson apply %s` applies exactly this plan, or refuses it if it goes stale", r.o.SavePlan, r.o.SavePlan))
	r.warnUnauthenticated()
	return nil
}

// warnUnauthenticated says, in a protected environment, that a saved plan
// without SPONSON_PLAN_KEY is sealed by a checksum only: whoever can write
// the file can change it and seal it again, so the apply cannot tell that
// it applies the plan its approver saw (its ownership and approval checks
// still run on what it applies).
func (r *runner) warnUnauthenticated() {
	if !r.o.Protected || r.o.PlanKey != nil {
		return
	}
	r.warn(fmt.Sprintf("the saved plan of protected environment %s is not authenticated: without %s its seal is a checksum anyone who can write the file can recompute; set %s (hex, the same in the plan and apply jobs) so the apply proves it is the plan that was reviewed",
		r.key.Environment, savedplan.KeyEnv, savedplan.KeyEnv))
}

// writePrivate writes data to path with mode 0600, atomically.
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "cannot write %s", path)
	}
	defer os.Remove(tmp.Name())
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Close()
	}
	if err != nil {
		tmp.Close()
		return errcode.Wrap(errcode.Usage, err, "cannot write %s", path)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return errcode.Wrap(errcode.Usage, err, "cannot write %s", path)
	}
	return nil
}

// stale is PLAN_STALE with what changed.
func stale(format string, args ...any) *errcode.Error {
	return errcode.New(errcode.PlanStale, "the saved plan is stale: "+format, args...)
}

// checkSaved refuses, before anything is written, a saved plan made for
// another scope or commit, or one whose scope state, succession or owners
// changed since it was made. It names what changed, the run and scope that
// changed it, and when.
func (r *runner) checkSaved(ctx context.Context, prev *receipt.Receipt, ownBackend bool) error {
	sp := r.o.Saved
	if sp == nil {
		return nil
	}
	m := sp.Meta
	if ownBackend {
		return errcode.New(errcode.Usage, "a saved plan needs the state sponson serves; this configuration declares its own backend")
	}
	if err := r.checkSavedFor(m); err != nil {
		return err
	}
	pred, err := r.checkSavedSuccession(ctx, m, prev)
	if err != nil {
		return err
	}
	if err := r.checkSavedState(ctx, m, prev, pred); err != nil {
		return err
	}
	if err := r.checkSavedReads(ctx, m); err != nil {
		return err
	}
	return r.checkSavedOwners(ctx, m)
}

// checkSavedReads refuses a saved plan when another stack's outputs that
// its sponson_outputs read changed since (docs/design.md §6.4): that
// stack's state in the scope read has another serial, or a read that fell
// back to main would now read the run's own scope. It names the run that
// changed them.
func (r *runner) checkSavedReads(ctx context.Context, m savedplan.Meta) error {
	for _, read := range m.Reads {
		key := store.Key{Stack: read.Stack, Environment: r.key.Environment, Scope: read.Scope}
		if !read.Named && read.Scope != r.key.Scope {
			own := store.Key{Stack: read.Stack, Environment: r.key.Environment, Scope: r.key.Scope}
			state, err := r.o.Store.ReadState(ctx, own)
			if err != nil {
				return err
			}
			if StateHolds(state) {
				rec, err := store.Latest(ctx, r.o.Store, own)
				if err != nil {
					return err
				}
				return stale("%s read the outputs of stack %s in %s, and that stack now has state in %s: %s", read.Address, read.Stack, read.Scope, r.key.Scope, ranAt(rec)).
					With("changed", "reads").With("stack", read.Stack).With("run", runOf(rec))
			}
		}
		state, err := r.o.Store.ReadState(ctx, key)
		if err != nil {
			return err
		}
		if now := savedplan.Mark(key.Scope, state); now.Serial != read.Serial {
			rec, err := store.Latest(ctx, r.o.Store, key)
			if err != nil {
				return err
			}
			if appliedAsRead(read, rec) {
				continue
			}
			return stale("the outputs %s read from stack %s (scope %s, serial %d) changed since the plan was made at %s (now serial %d): %s",
				read.Address, read.Stack, read.Scope, read.Serial, m.CreatedAt.Format(time.RFC3339), now.Serial, ranAt(rec)).
				With("changed", "reads").With("stack", read.Stack).With("run", runOf(rec))
		}
	}
	return nil
}

// appliedAsRead reports whether the upstream's state changed only by the
// apply of the very plan whose outputs read took, in a saved plan of many
// stacks (docs/design.md §4.2): rec, the upstream's latest receipt, is that
// apply, it succeeded, and the read had no provisional output, so every
// value read is one the engine's plan knew and its apply gave.
func appliedAsRead(read receipt.StackRead, rec *receipt.Receipt) bool {
	return read.Planned && read.PlanRun != "" && len(read.Provisional) == 0 &&
		rec != nil && rec.SavedPlan == read.PlanRun && rec.Status == receipt.StatusApplied
}

// checkSavedFor refuses a saved plan made for another stack, environment,
// scope or commit.
func (r *runner) checkSavedFor(m savedplan.Meta) error {
	c := r.o.Context
	for _, d := range []struct{ what, plan, now string }{
		{"stack", m.Stack, r.key.Stack}, {"environment", m.Environment, r.key.Environment},
		{"scope", m.Scope, r.key.Scope}, {"commit", m.Commit, c.Commit},
	} {
		if d.plan != d.now {
			return stale("it was made for %s %q and this run's %s is %q", d.what, d.plan, d.what, d.now).
				WithHint(fmt.Sprintf("Apply it in the run it was made for (%s/%s at commit %s), or plan again here.", m.Environment, m.Scope, shortCommit(m.Commit))).
				With("changed", d.what)
		}
	}
	return nil
}

// checkSavedSuccession refuses a saved plan when the succession the apply
// would do now is not the one the plan saw. It returns the predecessor's
// latest receipt, nil without a predecessor.
func (r *runner) checkSavedSuccession(ctx context.Context, m savedplan.Meta, prev *receipt.Receipt) (*receipt.Receipt, error) {
	p := predecessorOf(r.o.Context.Predecessor, prev)
	if p == "" {
		if m.Succession != nil {
			return nil, stale("the plan includes taking over %s and this run has no predecessor", m.Succession.From).With("changed", "succession")
		}
		return nil, nil
	}
	pred, err := store.Latest(ctx, r.o.Store, store.Key{Stack: r.key.Stack, Environment: r.key.Environment, Scope: p})
	if err != nil {
		return nil, err
	}
	act, err := succession.Decide(r.key.Scope, prev, pred)
	if err != nil {
		return nil, err
	}
	takes := act == succession.Start || (act == succession.Resume && !succession.Promised(r.key.Scope, pred))
	switch {
	case takes && m.Succession == nil:
		return nil, stale("the apply would now take over %s's resources (succession), which the plan did not include; %s", p, ranAt(pred)).With("changed", "succession")
	case !takes && m.Succession != nil:
		return nil, stale("the plan includes taking over %s, which no longer applies (%s)", m.Succession.From, ranAt(pred)).With("changed", "succession")
	case takes && pred.RunID != m.Succession.FromRun:
		return nil, stale("%s changed since the plan took it over: %s", p, ranAt(pred)).With("changed", "succession").With("run", pred.RunID)
	}
	return pred, nil
}

// checkSavedState refuses a saved plan when the state the engine will apply
// to is not the one the plan was made against (the predecessor's, which
// the handover copies as is), or the scope ran since.
func (r *runner) checkSavedState(ctx context.Context, m savedplan.Meta, prev, pred *receipt.Receipt) error {
	key := r.key
	if m.Succession != nil {
		key = store.Key{Stack: r.key.Stack, Environment: r.key.Environment, Scope: m.Succession.From}
	}
	state, err := r.o.Store.ReadState(ctx, key)
	if err != nil {
		return err
	}
	now := savedplan.Mark(key.Scope, state)
	if now.Digest != m.State.Digest {
		who := "no receipt records the change"
		latest := prev
		if m.Succession != nil {
			latest = pred
		}
		if latest != nil && latest.RunID != m.Receipt && (m.Succession == nil || latest.RunID != m.Succession.FromRun) {
			who = ranAt(latest)
		}
		return stale("the state of %s changed since the plan was made at %s (%s, now %s): %s", key.Scope, m.CreatedAt.Format(time.RFC3339), m.State, now, who).
			With("changed", "state").With("run", runOf(latest))
	}
	if m.Succession == nil && runOf(prev) != m.Receipt {
		return stale("scope %s ran since the plan was made at %s: %s", r.key.Scope, m.CreatedAt.Format(time.RFC3339), ranAt(prev)).
			With("changed", "receipt").With("run", runOf(prev))
	}
	return nil
}

// checkSavedOwners refuses a saved plan when another scope has come to own
// (or intend to create) an identity the plan touches since it was made.
func (r *runner) checkSavedOwners(ctx context.Context, m savedplan.Meta) error {
	var ids []string
	address := map[string]string{}
	for _, t := range m.Touches {
		for _, k := range append([]string{t.Identity}, t.Keys...) {
			if k != "" && address[k] == "" {
				ids = append(ids, k)
				address[k] = t.Address
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	owners, err := r.o.Store.Owners(ctx, r.key.Environment, ids)
	if err != nil {
		return err
	}
	before := map[string]bool{}
	for _, o := range m.Owners {
		before[o.Stack+"\x00"+o.Scope+"\x00"+o.Identity] = true
	}
	var lines []string
	var runs []string
	for _, o := range owners {
		if (o.Scope == r.key.Scope && o.Stack == r.key.Stack) || before[o.Stack+"\x00"+o.Scope+"\x00"+o.Identity] {
			continue
		}
		how := "came to own"
		if o.CreatedBy == receipt.CreatedByIntent {
			how = "is creating"
		}
		who := o.Scope
		if o.Stack != r.key.Stack {
			who += " of stack " + o.Stack
		}
		lines = append(lines, fmt.Sprintf("scope %s (run %s) %s %s (%s) at %s", who, o.RunID, how, address[o.Identity], o.Identity, o.Since.UTC().Format(time.RFC3339)))
		runs = append(runs, o.RunID)
	}
	if len(lines) == 0 {
		return nil
	}
	sort.Strings(lines)
	return stale("since the plan was made at %s, %s", m.CreatedAt.Format(time.RFC3339), strings.Join(lines, "; ")).
		With("changed", "ownership").With("runs", runs).
		WithHint("Another scope manages what this plan would change now: plan again to see the refusal (OWNED_BY_OTHER_SCOPE) or the new plan.")
}

// checkSavedPlan compares the record with the engine's own plan: a record
// altered to hide a change (with its seal recomputed) is refused.
func checkSavedPlan(m savedplan.Meta, planned []ownership.Planned) error {
	// Identities are left out: they depend on the identity schemes in use
	// in the environment, which may change between plan and apply.
	key := func(address string, actions []string) string {
		return address + "\x00" + strings.Join(actions, "+")
	}
	var want, got []string
	for _, t := range m.Touches {
		want = append(want, key(t.Address, t.Actions))
	}
	for _, p := range planned {
		got = append(got, key(p.Address, p.Actions))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		return errcode.New(errcode.PlanCorrupt, "the saved plan's record does not match the engine's plan in it: the file was altered")
	}
	return nil
}

func predecessorOf(detected string, prev *receipt.Receipt) string {
	if prev != nil && prev.Inheriting != "" {
		return prev.Inheriting
	}
	return detected
}

func runOf(rec *receipt.Receipt) string {
	if rec == nil {
		return ""
	}
	return rec.RunID
}

// ranAt says which run of which scope did what, and when.
func ranAt(rec *receipt.Receipt) string {
	if rec == nil {
		return "the scope has no receipt"
	}
	at := rec.FinishedAt
	if at.IsZero() {
		at = rec.StartedAt
	}
	return fmt.Sprintf("run %s (%s, %s) of scope %s at %s", rec.RunID, rec.Command, rec.Status, rec.Scope, at.UTC().Format(time.RFC3339))
}

func shortCommit(c string) string {
	if c == "" {
		return "none"
	}
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
