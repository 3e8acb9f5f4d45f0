// Package stackmove moves one scope of a stack to the same scope of another
// stack, the stack its directory was renamed to: state, ledger and records
// go to the new stack's keys, nothing is destroyed or created, and the old
// stack's scope is retired (docs/design.md §4.7 "Many stacks", removed
// stacks).
//
// The invariant, crashes included, is the one of a succession
// (docs/design.md §2.9): at every instant each resource has exactly one
// stack whose scope owns it. The move is ordered around one commit point,
// the promise written on the old stack's receipt:
//
//  1. promise (commit point): the old scope's latest receipt gets movedTo,
//     its ledger and state untouched. Before it the resources are the old
//     stack's; from it on they are the new stack's, wherever they are
//     still written.
//  2. copy: the old scope's records and its state (the sponson_scope's
//     stack renamed) are written under the new stack's keys;
//  3. claim: the new scope's receipt gets the old one's ledger and
//     movedFrom;
//  4. retire: the old scope's state is emptied and its receipt rewritten
//     with no ledger, movedTo kept.
//
// Every step is a fenced write under the lease of the scope it writes, and
// the move holds both leases throughout (docs/design.md §2.8 "Fenced
// write"). A move that dies between two steps is finished by the next move
// of the same scope: before the promise it starts again, after it it
// copies again from the old scope (whose state is emptied last) and
// completes. Between steps 3 and 4 both ledgers list the resources; the
// promise says whose they are, and the foreign check of a run of the new
// stack refuses rather than creates them again.
package stackmove

import (
	"context"
	"fmt"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/failpoint"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// The named steps, for failpoints in tests.
const (
	StepPromised = "stackmove-promised"
	StepCopied   = "stackmove-copied"
	StepClaimed  = "stackmove-claimed"
	StepRetired  = "stackmove-retired"
)

// Command is the command the move's receipts record.
const Command = "stack move"

// Records are the records of a scope that move with it: the
// sponson_scope's own (which its Read needs) and the identity schemes its
// ledger was computed under. The ledger base is written again by the
// claim's receipt, and a run's completions journal belongs to that run.
var Records = []string{"scope", ownership.SchemesRecord, ownership.SchemesFromRecord}

// Options say which scope to move, from which stack to which, as whom.
type Options struct {
	Store lease.Store
	// Environment and Scope name the scope; From and To the stacks.
	Environment, Scope, From, To string
	// RunID holds both leases and names the move's receipts; Actor is
	// who asked for it (runctx.DetectJob).
	RunID, Actor string
	// Approval is the move's approval for Environment
	// (scopeedit.Approve): a move changes which stack owns the resources
	// of the environment, and is approved as a destroy there would be.
	Approval scopeedit.Approval
	Lease    lease.Config
	// Warn hears what the user should know; nil discards it.
	Warn func(string)
}

// Result says what a move did.
type Result struct {
	Action Action
	// Resources is the number of ledger entries the new stack's scope
	// owns from the old one.
	Resources int
}

// Move moves the scope of o. It is safe to run again after it stopped at
// any step, and after it finished (Done).
func Move(ctx context.Context, o Options) (Result, error) {
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.From == o.To || o.From == "" || o.To == "" {
		return Result{}, errcode.New(errcode.Internal, "a stack move needs two different stacks, not %q and %q", o.From, o.To)
	}
	if err := o.Approval.Check(o.Environment); err != nil {
		return Result{}, err
	}
	from := store.Key{Stack: o.From, Environment: o.Environment, Scope: o.Scope}
	to := store.Key{Stack: o.To, Environment: o.Environment, Scope: o.Scope}
	// Both leases, always in the order of the stacks' names: two moves
	// in opposite directions wait for each other, never deadlock.
	first, second := from, to
	if second.Stack < first.Stack {
		first, second = second, first
	}
	bg := context.WithoutCancel(ctx)
	held := map[store.Key]*lease.Held{}
	defer func() {
		for _, k := range []store.Key{second, first} {
			if h := held[k]; h != nil {
				if w := h.Release(bg); w != "" {
					o.Warn(w)
				}
			}
		}
	}()
	for _, k := range []store.Key{first, second} {
		h, err := lease.Acquire(ctx, o.Store, k, o.RunID, o.Lease)
		if err != nil {
			return Result{}, err
		}
		held[k] = h
	}
	m := &move{o: o, from: from, to: to, oldHeld: held[from], newHeld: held[to], now: time.Now().UTC()}
	return m.run(ctx, bg)
}

type move struct {
	o                Options
	from, to         store.Key
	oldHeld, newHeld *lease.Held
	now              time.Time
}

// run reads both scopes under their leases, decides, and does the steps
// the decision leaves to do; once decided, the writes run on bg, so that an
// interrupt never stops them halfway.
func (m *move) run(ctx, bg context.Context) (Result, error) {
	old, err := m.read(ctx, m.from)
	if err != nil {
		return Result{}, err
	}
	cur, err := m.read(ctx, m.to)
	if err != nil {
		return Result{}, err
	}
	action, err := Decide(m.to.Stack, old, cur)
	if err != nil {
		return Result{}, err
	}
	res := Result{Action: action}
	if old.Latest != nil {
		res.Resources = len(old.Latest.Ledger)
	}
	switch action {
	case Nothing:
		return res, nil
	case Done:
		if cur.Latest != nil {
			res.Resources = len(cur.Latest.Ledger)
		}
		return res, nil
	case Start:
		// Step 1: the promise, the commit point.
		promised := receipt.Next(old.Latest, m.run0(old.Latest.Status))
		promised.MovedTo = m.to.Stack
		if err := m.oldHeld.WriteReceipt(bg, promised); err != nil {
			return Result{}, err
		}
		old.Latest = promised
		failpoint.Hit(StepPromised)
	}
	if err := m.copy(ctx, bg, old, cur); err != nil {
		return Result{}, err
	}
	failpoint.Hit(StepCopied)
	if err := m.claim(bg, old, cur); err != nil {
		return Result{}, err
	}
	failpoint.Hit(StepClaimed)
	if err := m.retire(bg, old); err != nil {
		return Result{}, err
	}
	failpoint.Hit(StepRetired)
	return res, nil
}

// copy is step 2: the old scope's records and state under the new
// stack's keys.
func (m *move) copy(ctx, bg context.Context, old, cur Side) error {
	for _, name := range Records {
		data, err := m.o.Store.ReadRecord(ctx, m.from, name)
		if err != nil {
			return err
		}
		if data == nil {
			continue
		}
		if err := m.newHeld.WriteRecord(bg, name, data); err != nil {
			return err
		}
	}
	if old.State == nil {
		return nil
	}
	state, err := Renamed(old.State, m.from.Stack, m.to.Stack, cur.State)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "moving the state of %s to stack %s", m.from, m.to.Stack)
	}
	return m.newHeld.WriteState(bg, state)
}

// claim is step 3: the new scope's receipt owns the old one's ledger.
func (m *move) claim(bg context.Context, old, cur Side) error {
	prev := cur.Latest
	if prev == nil {
		prev = receipt.First(m.to.Stack, m.to.Environment, m.to.Scope)
	}
	rec := receipt.Next(prev, m.run0(receipt.StatusApplied))
	rec.Ledger = append([]receipt.Entry{}, old.Latest.Ledger...)
	rec.Branch, rec.PullRequest, rec.Commit = old.Latest.Branch, old.Latest.PullRequest, old.Latest.Commit
	rec.MovedFrom, rec.MovedTo = m.from.Stack, ""
	rec.ApprovedBy = m.o.Approval.By()
	for _, e := range rec.Ledger {
		rec.Changes = append(rec.Changes, receipt.Change{Address: e.Address, Type: e.Type, Actions: []string{"move"}})
	}
	return m.newHeld.WriteReceipt(bg, rec)
}

// retire is step 4: the old scope keeps no state and no ledger, and its
// receipt says where they went.
func (m *move) retire(bg context.Context, old Side) error {
	if old.State != nil {
		empty, err := tfstate.Emptied(old.State)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "emptying the state of %s", m.from)
		}
		if err := m.oldHeld.WriteState(bg, empty); err != nil {
			return err
		}
	}
	rec := receipt.Next(old.Latest, m.run0(receipt.StatusApplied))
	rec.Ledger = []receipt.Entry{}
	rec.MovedTo = m.to.Stack
	rec.ApprovedBy = m.o.Approval.By()
	return m.oldHeld.WriteReceipt(bg, rec)
}

// run0 names the move for receipt.Next.
func (m *move) run0(status string) receipt.Run {
	return receipt.Run{RunID: m.o.RunID, Command: Command, Status: status, Actor: m.o.Actor, StartedAt: m.now, FinishedAt: time.Now().UTC()}
}

// Side is one scope of the move, as read under its lease.
type Side struct {
	Latest    *receipt.Receipt // nil when it has none
	State     []byte           // nil when it has none
	Resources int              // resource instances in State
}

func (m *move) read(ctx context.Context, k store.Key) (Side, error) {
	var s Side
	var err error
	if s.Latest, err = store.Latest(ctx, m.o.Store, k); err != nil {
		return s, err
	}
	if s.State, err = m.o.Store.ReadState(ctx, k); err != nil {
		return s, err
	}
	if s.Resources, err = Resources(s.State); err != nil {
		return s, errcode.Wrap(errcode.Internal, err, "reading the state of %s", k)
	}
	return s, nil
}

// Resources counts the resource instances of a state; 0 for none.
func Resources(state []byte) (int, error) {
	if len(state) == 0 {
		return 0, nil
	}
	objs, err := ownership.StateObjects(state)
	if err != nil {
		return 0, fmt.Errorf("counting its resources: %w", err)
	}
	return len(objs), nil
}
