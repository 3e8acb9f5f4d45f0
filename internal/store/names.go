package store

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// segment is what an environment, scope, run id or record name may be in
// every store: one plain path segment or ref component, so a name that one
// backend accepts every backend accepts, and none can climb out of its
// directory or reach another ref (docs/design.md §9).
var segment = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,128}$`)

// CheckName refuses anything that is not one plain name, before a backend
// touches its storage: ".", ".." and hidden names included.
func CheckName(what, name string) error {
	if !segment.MatchString(name) || strings.HasPrefix(name, ".") {
		return errcode.New(errcode.Usage, "invalid %s name %q: use 1 to 128 of a-z A-Z 0-9 . _ -, not starting with a dot", what, name).With("name", name)
	}
	return nil
}

// CheckKey checks both names of a key.
func CheckKey(k Key) error {
	if err := CheckName("environment", k.Environment); err != nil {
		return err
	}
	return CheckName("scope", k.Scope)
}

// Lost returns ErrLeaseLost for k with the reason, as every backend reports a
// refused fenced write.
func Lost(k Key, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrLeaseLost, k, why)
}

// EncodeReceipt checks r for a write under the lease of k and renders it as
// stored; it returns the copy that reads back. A backend never stores a
// receipt it would later report as corrupt.
func EncodeReceipt(k Key, r *receipt.Receipt) ([]byte, *receipt.Receipt, error) {
	if r == nil {
		return nil, nil, errcode.New(errcode.Internal, "no receipt to write for %s", k)
	}
	if err := CheckName("run id", r.RunID); err != nil {
		return nil, nil, err
	}
	if r.Environment != k.Environment || r.Scope != k.Scope {
		return nil, nil, errcode.New(errcode.Internal, "receipt of %s/%s written under the lease of %s", r.Environment, r.Scope, k)
	}
	data, err := receipt.Marshal(r)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "encode the receipt of run %s", r.RunID)
	}
	parsed, err := receipt.Parse(data)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "refusing to store a receipt that would not read back")
	}
	return data, parsed, nil
}

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
// identity scheme the entries were computed with. Every backend indexes
// exactly these rows.
func IndexRows(r *receipt.Receipt) []IndexRow {
	var rows []IndexRow
	seen := map[IndexRow]bool{}
	add := func(row IndexRow) {
		if row.Identity != "" && !seen[row] {
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
func OwnersOf(scope string, r *receipt.Receipt, prev []Owner, now time.Time) []Owner {
	since := make(map[string]time.Time, len(prev))
	for _, o := range prev {
		since[o.Identity] = o.Since
	}
	rows := IndexRows(r)
	out := make([]Owner, 0, len(rows))
	for _, e := range rows {
		at, ok := since[e.Identity]
		if !ok {
			at = now
		}
		out = append(out, Owner{Scope: scope, Identity: e.Identity, Address: e.Address, CreatedBy: e.CreatedBy, RunID: r.RunID, Since: at})
	}
	return out
}
