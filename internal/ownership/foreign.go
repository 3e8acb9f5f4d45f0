package ownership

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The three checks a run makes against the environment's ownership index
// (docs/design.md §2.5 "Ownership"), in the order it makes them: the foreign check
// before the engine writes, the intent race rule once the run's intents are
// in the index, and the late-identity check after the apply. All three
// report OWNED_BY_OTHER_SCOPE with the same text.

// CheckForeign is the foreign check: it refuses a run of key when a planned
// change touches an object another scope of the environment owns or intends
// to create. The entries of scope except do not count ("" for none): a
// predecessor whose resources are promised to key's scope, whose index
// drops them when the handover finishes. It returns the owners it read of
// the identities the plan touches, except left in.
func CheckForeign(ctx context.Context, idx store.Index, key store.Key, planned []Planned, except string) ([]store.Owner, error) {
	ids := Identities(planned)
	if len(ids) == 0 {
		return nil, nil
	}
	owners, err := idx.Owners(ctx, key.Environment, ids)
	if err != nil {
		return nil, err
	}
	others := owners
	if except != "" {
		// The predecessor is a scope of key's own stack (succession never
		// crosses stacks).
		others = slices.DeleteFunc(slices.Clone(owners), func(o store.Owner) bool { return o.Scope == except && o.Stack == key.Stack })
	}
	return owners, foreignError(key, Check(planned, others, key))
}

// CheckLate is the late-identity check: it looks up the identities that
// became known during the apply (creates planned with an unknown
// identifying attribute, now in ledger) in the ownership index, except the
// entries of scope except (as CheckForeign). Only the new object's own
// identities count: what the change replaced was checked before the apply.
// The objects exist already and the ledger records them, so a hit is
// reported (the run fails) naming both owners, not refused. lookupErr is
// set when the index could not be read: the run says so and goes on.
func CheckLate(ctx context.Context, idx store.Index, key store.Key, planned []Planned, ledger []receipt.Entry, except string) (hit, lookupErr error) {
	late := map[string]Planned{}
	for _, p := range planned {
		if p.Creates() && p.Identity == "" {
			late[p.Address] = p
		}
	}
	if len(late) == 0 {
		return nil, nil
	}
	var known []Planned
	for _, e := range ledger {
		if p, ok := late[e.Address]; ok {
			p.Identity, p.Keys = e.Identity, e.Keys
			known = append(known, p)
		}
	}
	ids := Identities(known)
	if len(ids) == 0 {
		return nil, nil
	}
	owners, err := idx.Owners(ctx, key.Environment, ids)
	if err != nil {
		return nil, err
	}
	if except != "" {
		owners = slices.DeleteFunc(owners, func(o store.Owner) bool { return o.Scope == except && o.Stack == key.Stack })
	}
	return lateError(key, Check(known, owners, key)), nil
}

// lateError is the OWNED_BY_OTHER_SCOPE error of a late-identity hit: the
// objects were created and this scope's ledger records them, so both
// scopes are named and the way to keep one owner is said.
func lateError(self store.Key, conflicts []Conflict) error {
	if len(conflicts) == 0 {
		return nil
	}
	var lines []string
	var details []map[string]string
	for _, c := range conflicts {
		lines = append(lines, fmt.Sprintf("%s created %s, whose identity scope %s owns as %s (run %s)",
			self.Scope, c.Change.Address, ownerName(self, c.Owner), c.Owner.Address, c.Owner.RunID))
		details = append(details, map[string]string{
			"address": c.Change.Address, "identity": c.Change.Identity, "owner": c.Owner.Scope, "ownerStack": c.Owner.Stack,
			"ownerRun": c.Owner.RunID, "ownerAddress": c.Owner.Address, "ownedAs": c.Owner.CreatedBy,
		})
	}
	first := conflicts[0]
	return errcode.New(errcode.OwnedByOtherScope, "the apply created %d object(s) whose identity (unknown at plan time) another scope already owns; scope %s records them, so both scopes list them:\n  %s",
		len(conflicts), self.Scope, strings.Join(lines, "\n  ")).
		WithHint(fmt.Sprintf("Keep one owner: run `sponson state rm %s` in this scope (the object stays, owned by %s), or `sponson state rm %s` in %s, then apply again.",
			first.Change.Address, ownerName(self, first.Owner), first.Owner.Address, ownerName(self, first.Owner))).
		With("conflicts", details)
}

// ownerName names the owner of a conflict for self: its scope, and its
// stack when that is another one (two root modules managing one object).
func ownerName(self store.Key, o store.Owner) string {
	if o.Stack == self.Stack {
		return o.Scope
	}
	return o.Scope + " of stack " + o.Stack
}

// foreignError is the OWNED_BY_OTHER_SCOPE error of conflicts of self's
// run, nil when there are none. It names each owner's scope, and its stack
// when that is not self's.
func foreignError(self store.Key, conflicts []Conflict) error {
	if len(conflicts) == 0 {
		return nil
	}
	scope := self.Scope
	var lines []string
	var details []map[string]string
	owners := map[string]bool{}
	for _, c := range conflicts {
		how := "owns"
		if c.Owner.CreatedBy == receipt.CreatedByIntent {
			how = "is creating"
		}
		lines = append(lines, fmt.Sprintf("%s (%s) would %s %s, which scope %s %s (run %s)",
			scope, strings.Join(c.Change.Actions, "+"), "change", c.Change.Address, ownerName(self, c.Owner), how, c.Owner.RunID))
		details = append(details, map[string]string{
			"address": c.Change.Address, "identity": c.Change.Identity, "owner": c.Owner.Scope, "ownerStack": c.Owner.Stack,
			"ownerRun": c.Owner.RunID, "ownerAddress": c.Owner.Address, "ownedAs": c.Owner.CreatedBy,
		})
		owners[ownerName(self, c.Owner)] = true
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
