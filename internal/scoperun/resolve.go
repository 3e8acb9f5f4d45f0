package scoperun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// ResolveOptions describe `sponson resolve`: a person's word on what became
// of objects whose create a crashed run may have started.
type ResolveOptions struct {
	Store     store.Store
	Key       store.Key
	RunID     string
	Lease     lease.Config
	Addresses []string
	// ID is the id of the object that exists (it is adopted by the next
	// apply); empty with Gone.
	ID   string
	Gone bool
	// Declared is what the environment declares about identity
	// (Options.Declared), for the check of an id against other scopes.
	Declared ownership.Declaration
}

// Resolve records, under the scope's lease, what a person found about the
// unresolved (or still open) intents at o.Addresses: gone, the entry leaves
// the ledger and the next apply may create the object; an id, the entry
// keeps the id and the next apply adopts the object by it (an import, with
// the foreign check). It writes a receipt of its own and starts no engine.
func Resolve(ctx context.Context, o ResolveOptions) (*receipt.Receipt, error) {
	if o.Gone == (o.ID != "") {
		return nil, errcode.New(errcode.Usage, "say what became of the object: --gone, or --id ID")
	}
	if o.ID != "" && len(o.Addresses) != 1 {
		return nil, errcode.New(errcode.Usage, "--id names one object: give one address")
	}
	h, err := lease.Acquire(ctx, o.Store, o.Key, o.RunID, o.Lease)
	if err != nil {
		return nil, err
	}
	defer h.Release(context.WithoutCancel(ctx))
	prev, err := o.Store.LatestReceipt(ctx, o.Key)
	if err != nil {
		return nil, err
	}
	rec, err := resolved(prev, o, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	if err := refuseForeignID(ctx, o, prev); err != nil {
		return nil, err
	}
	if err := h.WriteReceipt(context.WithoutCancel(ctx), rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// refuseForeignID refuses an id another scope owns an object by: the next
// apply would import that object, and two scopes would own it. The object
// is checked again, under every identity it has, when it is imported
// (settlement.adopt).
func refuseForeignID(ctx context.Context, o ResolveOptions, prev *receipt.Receipt) error {
	if o.ID == "" {
		return nil
	}
	var objects []ownership.Object
	for _, e := range prev.Ledger {
		if isOpen(e) && slices.Contains(o.Addresses, e.Address) {
			objects = append(objects, ownership.Object{Address: e.Address, Provider: e.Provider, Type: e.Type, ID: o.ID})
		}
	}
	foreign, err := ownership.ForeignOwners(ctx, o.Store, o.Key, o.Declared.Policy(), objects)
	if err != nil {
		return err
	}
	return ownership.ForeignObjectsError(o.Key, fmt.Sprintf("resolving %s as id %s", strings.Join(o.Addresses, ", "), o.ID), foreign)
}

// resolved is prev with the person's word applied to the open entries at
// o.Addresses.
func resolved(prev *receipt.Receipt, o ResolveOptions, now time.Time) (*receipt.Receipt, error) {
	if prev == nil {
		return nil, errcode.New(errcode.Usage, "%s has no receipt: there is nothing to resolve", o.Key)
	}
	rec := *prev
	rec.RunID, rec.Command, rec.Status, rec.Error = o.RunID, "resolve", receipt.StatusUnchanged, nil
	rec.StartedAt, rec.FinishedAt = now, now
	rec.Changes, rec.Settled = []receipt.Change{}, nil
	rec.Ledger = nil
	open := map[string]bool{}
	for _, e := range prev.Ledger {
		if !isOpen(e) || !slices.Contains(o.Addresses, e.Address) {
			rec.Ledger = append(rec.Ledger, e)
			continue
		}
		open[e.Address] = true
		s := receipt.Settlement{Address: e.Address, FromRun: prev.RunID, Outcome: receipt.SettledGone}
		if !o.Gone {
			e.ID, e.CreatedBy = o.ID, receipt.CreatedByUnresolved
			s.Outcome, s.ID = receipt.SettledGiven, o.ID
			rec.Ledger = append(rec.Ledger, e)
			// A person's word is the whole truth about the address: the
			// object is this one, and whatever the state holds there was
			// replaced by it.
			rec.Completed = append(rec.Completed, receipt.Completion{Address: e.Address, Action: "delete"},
				receipt.Completion{Address: e.Address, ID: o.ID, Action: "create"})
		}
		rec.Settled = append(rec.Settled, s)
	}
	var missing []string
	for _, a := range o.Addresses {
		if !open[a] {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return nil, errcode.New(errcode.Usage, "%s has no unresolved intent at %s", o.Key, strings.Join(missing, ", ")).
			WithHint(fmt.Sprintf("`sponson receipt --scope %s` lists the scope's ledger; unresolved entries say createdBy unresolved.", o.Key.Scope))
	}
	if rec.Ledger == nil {
		rec.Ledger = []receipt.Entry{}
	}
	return &rec, nil
}

// isOpen reports whether no run has vouched for e yet.
func isOpen(e receipt.Entry) bool {
	return isIntent(e) || e.CreatedBy == receipt.CreatedByUnresolved
}
