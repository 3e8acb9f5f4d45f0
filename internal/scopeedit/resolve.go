package scopeedit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// Resolution is `sponson resolve`: a person's word on what became of
// objects whose create a crashed run may have started.
type Resolution struct {
	Addresses []string
	// ID is the id of the object that exists (it is adopted by the next
	// apply); empty with Gone.
	ID   string
	Gone bool
	// Declared is what the environment declares about identity, for the
	// check of an id against other scopes.
	Declared ownership.Declaration
}

// Resolve records, under the scope's lease, what a person found about the
// unresolved (or still open) intents at r.Addresses: gone, the entry leaves
// the ledger and the next apply may create the object; an id, the entry
// keeps the id and the next apply adopts the object by it (an import, with
// the foreign check). It writes a receipt of its own and starts no engine.
func Resolve(ctx context.Context, o Options, r Resolution) (*receipt.Receipt, error) {
	if r.Gone == (r.ID != "") {
		return nil, errcode.New(errcode.Usage, "say what became of the object: --gone, or --id ID")
	}
	if r.ID != "" && len(r.Addresses) != 1 {
		return nil, errcode.New(errcode.Usage, "--id names one object: give one address")
	}
	c, err := Edit(ctx, o, func(ctx context.Context, s *Scope) (Change, error) {
		rec, err := resolved(s, r)
		if err != nil {
			return Change{}, err
		}
		// An id another scope owns an object by would have the next apply
		// import that object, and two scopes would own it. The object is
		// checked again, under every identity it has, when it is imported.
		if r.ID != "" {
			var objects []ownership.Object
			for _, e := range s.Latest.Ledger {
				if IsOpen(e) && slices.Contains(r.Addresses, e.Address) {
					objects = append(objects, ownership.Object{Address: e.Address, Provider: e.Provider, Type: e.Type, ID: r.ID})
				}
			}
			doing := fmt.Sprintf("resolving %s as id %s", strings.Join(r.Addresses, ", "), r.ID)
			if err := s.RefuseForeign(ctx, r.Declared.Policy(), objects, doing); err != nil {
				return Change{}, err
			}
		}
		return Change{Receipt: rec}, nil
	})
	return c.Receipt, err
}

// resolved is the scope's latest receipt with the person's word applied to
// the open entries at r.Addresses.
func resolved(s *Scope, r Resolution) (*receipt.Receipt, error) {
	prev := s.Latest
	if prev == nil {
		return nil, errcode.New(errcode.Usage, "%s has no receipt: there is nothing to resolve", s.Key)
	}
	rec := s.Next("resolve", receipt.StatusUnchanged)
	rec.Ledger = []receipt.Entry{}
	open := map[string]bool{}
	for _, e := range prev.Ledger {
		if !IsOpen(e) || !slices.Contains(r.Addresses, e.Address) {
			rec.Ledger = append(rec.Ledger, e)
			continue
		}
		open[e.Address] = true
		settled := receipt.Settlement{Address: e.Address, FromRun: prev.RunID, Outcome: receipt.SettledGone}
		if !r.Gone {
			e.ID, e.CreatedBy = r.ID, receipt.CreatedByUnresolved
			settled.Outcome, settled.ID = receipt.SettledGiven, r.ID
			rec.Ledger = append(rec.Ledger, e)
			// A person's word is the whole truth about the address: the
			// object is this one, and whatever the state holds there was
			// replaced by it.
			rec.Completed = append(rec.Completed, receipt.Completion{Address: e.Address, Action: "delete"},
				receipt.Completion{Address: e.Address, ID: r.ID, Action: "create"})
		}
		rec.Settled = append(rec.Settled, settled)
	}
	var missing []string
	for _, a := range r.Addresses {
		if !open[a] {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return nil, errcode.New(errcode.Usage, "%s has no unresolved intent at %s", s.Key, strings.Join(missing, ", ")).
			WithHint(fmt.Sprintf("`sponson receipt --scope %s` lists the scope's ledger; unresolved entries say createdBy unresolved.", s.Key.Scope))
	}
	return rec, nil
}
