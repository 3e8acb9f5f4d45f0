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

// CheckKey checks the names of a key. Only a parent lease has no stack.
func CheckKey(k Key) error {
	if err := CheckName("environment", k.Environment); err != nil {
		return err
	}
	if err := CheckName("scope", k.Scope); err != nil {
		return err
	}
	if k.Stack == "" {
		if !strings.HasPrefix(k.Scope, ParentScopePrefix) {
			return errcode.New(errcode.Internal, "scope %s/%s has no stack", k.Environment, k.Scope)
		}
		return nil
	}
	return CheckStack(k.Stack)
}

// stackChars is what a stack name is made of: plain names joined by "/", as
// a repository path is ("github.com/acme/infra//stacks/app": the "//"
// separates the repository from the directory in it).
var stackChars = regexp.MustCompile(`^[a-zA-Z0-9._/-]{1,200}$`)

// maxStackSegment bounds the encoded stack: it is one file name (255 bytes)
// or ref component in the stores, with room for a ".lock" or temporary
// suffix.
const maxStackSegment = 240

// CheckStack refuses a stack name that is not 1 to 200 of a-z A-Z 0-9 . _ /
// -, that starts or ends with "/" or ".", contains "..", has a "." path
// element or ends in ".lock". Every accepted name has one encoding
// (StackSegment) that is a plain file name, ref component and row value.
func CheckStack(name string) error {
	bad := !stackChars.MatchString(name) || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") ||
		strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") ||
		strings.Contains(name, "/./") || strings.HasSuffix(name, ".lock")
	if bad {
		return errcode.New(errcode.Usage, "invalid stack name %q: use 1 to 200 of a-z A-Z 0-9 . _ / -, not starting or ending with \"/\" or \".\", without \"..\"", name).With("stack", name)
	}
	if n := len(StackSegment(name)); n > maxStackSegment {
		return errcode.New(errcode.Usage, "stack name %q is too long once encoded for the store (%d bytes, at most %d); pass a shorter --stack", name, n, maxStackSegment).With("stack", name)
	}
	return nil
}

// sharedSegment is the segment of the keys without a stack (parent leases).
// StackSegment never returns it for a stack: "_" is always followed by two
// hexadecimal digits there.
const sharedSegment = "_"

// StackSegment encodes a stack name as one path segment and ref component,
// one to one: a-z A-Z 0-9 . - stay, every other byte ("/", "_") becomes "_"
// and two lower-case hexadecimal digits. "github.com/acme/infra//app"
// becomes "github.com_2facme_2finfra_2f_2fapp". The empty stack (parent
// leases) is "_". CheckStack has refused every name whose encoding could
// start with a dot, contain "..", or end in "." or ".lock".
func StackSegment(stack string) string {
	if stack == "" {
		return sharedSegment
	}
	var b strings.Builder
	for i := 0; i < len(stack); i++ {
		c := stack[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	return b.String()
}

// StackOf decodes a segment written by StackSegment; ok is false for
// anything StackSegment cannot have written (a file a human left behind).
func StackOf(seg string) (stack string, ok bool) {
	if seg == sharedSegment {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", false
		}
		var v byte
		if _, err := fmt.Sscanf(seg[i+1:i+3], "%02x", &v); err != nil {
			return "", false
		}
		b.WriteByte(v)
		i += 2
	}
	stack = b.String()
	if CheckStack(stack) != nil || StackSegment(stack) != seg {
		return "", false
	}
	return stack, true
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
	if r.Stack == "" && k.Stack != "" {
		// A receipt carried over from before stacks (a predecessor being
		// rewritten after a migration) takes the stack it is stored under.
		c := *r
		c.Stack = k.Stack
		r = &c
	}
	if r.Environment != k.Environment || r.Scope != k.Scope || r.Stack != k.Stack {
		return nil, nil, errcode.New(errcode.Internal, "receipt of %s/%s (stack %q) written under the lease of %s", r.Environment, r.Scope, r.Stack, k)
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
func OwnersOf(k Key, r *receipt.Receipt, prev []Owner, now time.Time) []Owner {
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
		out = append(out, Owner{Stack: k.Stack, Scope: k.Scope, Identity: e.Identity, Address: e.Address, CreatedBy: e.CreatedBy, RunID: r.RunID, Since: at})
	}
	return out
}
