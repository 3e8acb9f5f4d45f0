package store

import (
	"slices"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// The ownership index every backend keeps (docs/design.md §2.5
// "Ownership"): which rows a receipt puts in it, and the entries of a scope
// with the time each identity was first recorded.

// SchemeCreatedBy marks the rows of the ownership index that name an
// identity scheme in use instead of an object (SchemeIdentity).
const SchemeCreatedBy = "scheme"

// SchemeIdentity is the identity under which the ownership index lists the
// identity schemes the scopes of an environment use for a provider's
// resource type: one row per scope and scheme, whose Address holds the
// scheme's attributes joined by ",". A run reads them to compute its
// planned changes under every scheme in use (issue 12 item 1).
func SchemeIdentity(provider, typ string) string { return "scheme|" + provider + "|" + typ }

// IndexRow is one row of the ownership index of a receipt.
type IndexRow struct{ Identity, Address, CreatedBy string }

// IndexRows returns the rows of the ownership index for a receipt's ledger:
// every entry under its identity and each of its keys, then one row per
// identity scheme the entries were computed with. Address identities are
// left out: they name an object only within its scope. Every backend
// indexes exactly these rows.
func IndexRows(r *receipt.Receipt) []IndexRow {
	var rows []IndexRow
	seen := map[IndexRow]bool{}
	add := func(row IndexRow) {
		if row.Identity != "" && !IsAddressIdentity(row.Identity) && !seen[row] {
			seen[row] = true
			rows = append(rows, row)
		}
	}
	for _, e := range r.Ledger {
		add(IndexRow{e.Identity, e.Address, e.CreatedBy})
		for _, k := range e.Keys {
			add(IndexRow{k, e.Address, e.CreatedBy})
		}
	}
	for _, e := range r.Ledger {
		if len(e.Scheme) > 0 {
			add(IndexRow{SchemeIdentity(e.Provider, e.Type), strings.Join(e.Scheme, ","), SchemeCreatedBy})
		}
	}
	return rows
}

// OwnersOf returns the ownership-index entries of a scope's receipt r. An
// identity the scope's previous entries (prev) already held keeps the time
// it was first recorded; a new one gets now, the store's clock. Since is for
// people: the intent race rule does not read it (ownership.UnderIntentLease).
// An entry prev held with the same address and origin keeps its run too
// (Owner.RunID), so that a receipt whose ledger did not change leaves the
// part as it was (SameOwners), and a backend need not write it again.
func OwnersOf(k Key, r *receipt.Receipt, prev []Owner, now time.Time) []Owner {
	before := make(map[string]Owner, len(prev))
	for _, o := range prev {
		before[o.Identity] = o
	}
	rows := IndexRows(r)
	out := make([]Owner, 0, len(rows))
	for _, e := range rows {
		o := Owner{Stack: k.Stack, Scope: k.Scope, Identity: e.Identity, Address: e.Address, CreatedBy: e.CreatedBy, RunID: r.RunID, Since: now}
		if old, ok := before[e.Identity]; ok {
			o.Since = old.Since
			if old.Address == e.Address && old.CreatedBy == e.CreatedBy && old.RunID != "" {
				o.RunID = old.RunID
			}
		}
		out = append(out, o)
	}
	return out
}

// SameOwners reports whether a scope's part of the index is unchanged: the
// same entries, in the same order, with the same runs and times. A backend
// then leaves the part it holds as it is, so that a run that changed no
// ownership (a no-change or an update-only apply) does not rewrite an
// index part that grows with the scope.
func SameOwners(prev, next []Owner) bool {
	return slices.EqualFunc(prev, next, func(a, b Owner) bool {
		return a.Identity == b.Identity && a.Address == b.Address && a.CreatedBy == b.CreatedBy &&
			a.RunID == b.RunID && a.Since.Equal(b.Since)
	})
}

// AddressIdentity is the identity of an object whose type has no global
// identity (ownership.AddressOwned): it is owned by its address within its
// scope. Such identities are never rows of the ownership index, so no other
// scope ever matches them (docs/design.md §2.3 "Ledger and identity").
func AddressIdentity(provider, typ, address string) string {
	return provider + "|" + typ + "|" + addressMark + address
}

const addressMark = "address:"

// IsAddressIdentity reports whether identity is an AddressIdentity. The
// provider source and the type hold no "|", so the mark is found right
// after the second one, never inside an identifying value.
func IsAddressIdentity(identity string) bool {
	parts := strings.SplitN(identity, "|", 3)
	return len(parts) == 3 && strings.HasPrefix(parts[2], addressMark)
}
