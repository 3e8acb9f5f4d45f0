// Package scopeedit is the one way to change a scope outside a run: a
// command that repairs or records something in a scope (state rm, mv and
// push, unlock's record, resolve, adopt) takes the scope's lease through
// lease.Held, reads the scope's latest receipt and state under it, applies
// its edit, and writes what the edit made, fenced by that lease
// (docs/design.md §2.8 "Fenced write"): the state first, then the receipt,
// built with receipt.Next so that the scope's standing carries over as it
// does after every run. No engine is started. In a protected environment
// every edit carries its approver (Approve), checked before the lease is
// taken and recorded in the receipt it writes (docs/design.md §2.11
// Approval).
//
// Approve decides an edit's approval from the environment's declaration
// (environments.Environment.Approve), and an Approval value can only be made
// there; Edit refuses an edit whose approval was not decided for its scope's
// environment, so a new command that forgets to ask fails closed. `import`
// is a run and is checked as one.
package scopeedit

import (
	"context"
	"fmt"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Store is what an edit works through: the scope's lease and the documents
// it fences, and the ownership index for the foreign check.
type Store interface {
	lease.Store
	store.Index
}

// Options say which scope to edit, as whom, and how to wait for its lease.
type Options struct {
	Store Store
	Key   store.Key
	// RunID is the holder of the edit's lease and the run id of its
	// receipt.
	RunID string
	// Actor is who asked for the edit (runctx.DetectJob), for the receipt.
	Actor string
	// Approval is the edit's approval (Approve) for the environment of
	// Key: Edit refuses one not decided for it, and its approver is the
	// one the receipt records.
	Approval Approval
	Lease    lease.Config
	// Warn hears what the user should know (a lease that could not be
	// released); nil discards it.
	Warn func(string)
}

// Scope is the scope as the edit finds it, under its lease.
type Scope struct {
	Key store.Key
	// Latest is the scope's latest receipt, nil when it has none.
	Latest *receipt.Receipt
	// State is the scope's Terraform state, nil when it has none.
	State []byte
	// Preempted is the expired lease the edit's lease took over, if any.
	Preempted *store.LeaseInfo

	o   Options
	now time.Time
}

// Change is what an edit writes: State, when it is not nil, then Receipt.
type Change struct {
	State   []byte
	Receipt *receipt.Receipt
}

// Edit takes the lease of o.Key, reads the scope, runs edit and writes
// the change it returns, fenced by the lease, which it then releases. An
// error of edit writes nothing. An edit without an approval decided for
// its environment (o.Approval) is refused before the lease is taken; the
// receipt it writes records the approver, whatever edit put there.
func Edit(ctx context.Context, o Options, edit func(ctx context.Context, s *Scope) (Change, error)) (Change, error) {
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if err := o.Approval.decidedFor(o.Key.Environment); err != nil {
		return Change{}, err
	}
	held, err := lease.Acquire(ctx, o.Store, o.Key, o.RunID, o.Lease)
	if err != nil {
		return Change{}, err
	}
	bg := context.WithoutCancel(ctx)
	defer func() {
		if w := held.Release(bg); w != "" {
			o.Warn(w)
		}
	}()
	s := &Scope{Key: o.Key, Preempted: held.Preempted, o: o, now: time.Now().UTC()}
	// Read under the lease: what was read before may be stale.
	if s.Latest, err = store.Latest(ctx, o.Store, o.Key); err != nil {
		return Change{}, err
	}
	if s.State, err = o.Store.ReadState(ctx, o.Key); err != nil {
		return Change{}, err
	}
	c, err := edit(ctx, s)
	if err != nil {
		return Change{}, err
	}
	// Once the edit is decided it is written whole: an interrupt between
	// the state and the receipt would leave a ledger that does not match.
	if c.State != nil {
		if err := held.WriteState(bg, c.State); err != nil {
			return Change{}, err
		}
	}
	if c.Receipt != nil {
		// An approver approves one edit: receipt.Next carries none over.
		c.Receipt.ApprovedBy = o.Approval.By()
		if err := held.WriteReceipt(bg, c.Receipt); err != nil {
			return Change{}, err
		}
	}
	return c, nil
}

// Next is the edit's receipt: receipt.Next of the scope's latest (or of
// its first, when it has none), as command with status, started and
// finished now.
func (s *Scope) Next(command, status string) *receipt.Receipt {
	prev := s.Latest
	if prev == nil {
		prev = receipt.First(s.Key.Stack, s.Key.Environment, s.Key.Scope)
	}
	return receipt.Next(prev, s.Run(command, status))
}

// Run names the edit for receipt.Next.
func (s *Scope) Run(command, status string) receipt.Run {
	return receipt.Run{RunID: s.o.RunID, Command: command, Status: status, Actor: s.o.Actor, StartedAt: s.now, FinishedAt: s.now}
}

// LockPreempted is the receipt's record of the lease the edit took over;
// nil when it took none.
func (s *Scope) LockPreempted() *receipt.Preempted {
	if p := s.Preempted; p != nil {
		return &receipt.Preempted{Holder: p.Holder, Since: p.AcquiredAt, Until: p.ExpiresAt}
	}
	return nil
}

// RefuseForeign refuses, with OWNED_BY_OTHER_SCOPE, objects another scope
// of the environment owns or intends to create: the edit (doing, for the
// message) would make two scopes own one object.
func (s *Scope) RefuseForeign(ctx context.Context, pol ownership.Policy, objects []ownership.Object, doing string) error {
	if len(objects) == 0 {
		return nil
	}
	foreign, err := ownership.ForeignOwners(ctx, s.o.Store, s.Key, pol, objects)
	if err != nil {
		return err
	}
	return ownership.ForeignObjectsError(s.Key, doing, foreign)
}

// IsOpen reports whether no run has vouched for e yet: an intent, or an
// entry a stopped run left unresolved. It stands for an object no state
// holds, so an edit of the state leaves it as it is.
func IsOpen(e receipt.Entry) bool {
	return e.CreatedBy == receipt.CreatedByIntent || e.CreatedBy == receipt.CreatedByUnresolved
}

// Released warns that e left the scope without being destroyed.
func Released(e receipt.Entry, by string) string {
	return fmt.Sprintf("%s (id %s) is released: %s took it out of the state without destroying it, so no scope owns it any more and no scope's destroy will delete it", e.Address, e.ID, by)
}
