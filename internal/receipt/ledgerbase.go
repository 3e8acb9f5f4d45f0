package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// A large ledger is written once as a base, a document named by the hash
// of its content, and the receipts after it carry only how their ledger
// differs from it (docs/design.md §2.17 "Ledger base"): a run that changes
// 100 of 10,000 resources then writes receipts in proportion to what
// changed since the base, not the 3 MB of the whole ledger twice.

// CompactVersion is the format of a receipt whose ledger is written
// against a base (LedgerBase, LedgerDelta). A reader of version 1 refuses
// it (RECEIPT_VERSION) rather than read its empty ledger as a scope that
// owns nothing.
const CompactVersion = 2

// BasePrefix starts the name of every base; the rest is the hex SHA-256
// of its document, so a base read back is checked against its name.
const BasePrefix = "ledger-"

// baseVersion is the base document's format.
const baseVersion = 1

// Base is a ledger stored on its own, by its content's hash.
type Base struct {
	Name    string
	Entries []Entry
}

// baseDoc is a base as stored.
type baseDoc struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Segment is one piece of a ledger written against a base: Count entries of
// the base from index From, or, when Entries is set, those entries.
type Segment struct {
	From    int     `json:"from,omitempty"`
	Count   int     `json:"count,omitempty"`
	Entries []Entry `json:"entries,omitempty"`
}

// NewBase returns entries as a base and its document.
func NewBase(entries []Entry) (*Base, []byte, error) {
	data, err := json.Marshal(baseDoc{Version: baseVersion, Entries: entries})
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "encode a ledger base")
	}
	return &Base{Name: baseName(data), Entries: entries}, data, nil
}

// ParseBase reads the base called name. A document whose hash is not its
// name is RECEIPT_CORRUPT: a base is never changed once written.
func ParseBase(name string, data []byte) (*Base, error) {
	if baseName(data) != name {
		return nil, errcode.New(errcode.ReceiptCorrupt, "the ledger base %s does not match its hash", name)
	}
	var doc baseDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "the ledger base %s is not valid", name)
	}
	if doc.Version != baseVersion {
		return nil, errcode.New(errcode.ReceiptVersion, "ledger base version %d is not supported (this sponson reads %d)", doc.Version, baseVersion)
	}
	return &Base{Name: name, Entries: doc.Entries}, nil
}

// IsBase reports whether a record name is a base's.
func IsBase(name string) bool { return strings.HasPrefix(name, BasePrefix) }

func baseName(data []byte) string {
	sum := sha256.Sum256(data)
	return BasePrefix + hex.EncodeToString(sum[:])
}

// Against returns r to be stored against b: Marshal then writes its ledger
// as b and the difference from it. The copy shares r's slices.
func (r *Receipt) Against(b *Base) *Receipt {
	c := *r
	c.WriteAgainst = b
	return &c
}

// Compact reports whether r, as stored, names a base its ledger is written
// against: it must be expanded (Expand) before its Ledger means anything.
func (r *Receipt) Compact() bool { return r.LedgerBase != "" }

// Literal counts the entries of a delta written out rather than taken
// from the base: the part of a compact receipt's ledger that grows with
// the changes since the base.
func Literal(delta []Segment) int {
	n := 0
	for _, s := range delta {
		n += len(s.Entries)
	}
	return n
}

// Expand returns the compact r with its ledger rebuilt from b, as a
// receipt of the whole ledger reads; r itself when it is not compact. A
// delta that does not fit b is RECEIPT_CORRUPT.
func (r *Receipt) Expand(b *Base) (*Receipt, error) {
	if !r.Compact() {
		return r, nil
	}
	if b == nil || b.Name != r.LedgerBase {
		return nil, errcode.New(errcode.Internal, "receipt of run %s expanded without its ledger base %s", r.RunID, r.LedgerBase)
	}
	ledger, err := applyDelta(b.Entries, r.LedgerDelta)
	if err != nil {
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "the ledger of run %s against base %s", r.RunID, r.LedgerBase)
	}
	c := *r
	c.Version, c.LedgerBase, c.LedgerDelta, c.Ledger = Version, "", nil, ledger
	return &c, nil
}

// compacted is r as Marshal stores it against its base: the ledger left
// out, the base named and the difference written.
func (r *Receipt) compacted() *Receipt {
	c := *r
	c.WriteAgainst = nil
	c.Version, c.LedgerBase = CompactVersion, r.WriteAgainst.Name
	c.LedgerDelta, c.Ledger = Delta(r.WriteAgainst.Entries, r.Ledger), []Entry{}
	return &c
}

// Delta returns ledger as segments of base: runs of base entries it keeps
// in order, and the entries it does not share with base written out.
// applyDelta(base, Delta(base, ledger)) is ledger, whatever the order or
// repetition of either.
func Delta(base, ledger []Entry) []Segment {
	at := make(map[entryKey]int, len(base))
	for i := len(base) - 1; i >= 0; i-- {
		at[keyOf(base[i])] = i
	}
	var out []Segment
	for i := 0; i < len(ledger); {
		j, ok := at[keyOf(ledger[i])]
		if !ok || !SameEntry(base[j], ledger[i]) {
			out = appendLiteral(out, ledger[i])
			i++
			continue
		}
		n := 1
		for i+n < len(ledger) && j+n < len(base) && SameEntry(base[j+n], ledger[i+n]) {
			n++
		}
		out = append(out, Segment{From: j, Count: n})
		i += n
	}
	return out
}

func appendLiteral(out []Segment, e Entry) []Segment {
	if k := len(out) - 1; k >= 0 && out[k].Entries != nil {
		out[k].Entries = append(out[k].Entries, e)
		return out
	}
	return append(out, Segment{Entries: []Entry{e}})
}

// applyDelta rebuilds a ledger from its base and its delta.
func applyDelta(base []Entry, delta []Segment) ([]Entry, error) {
	out := []Entry{}
	for _, s := range delta {
		switch {
		case s.Entries != nil && s.Count == 0 && s.From == 0:
			out = append(out, s.Entries...)
		case s.Entries == nil && s.Count > 0 && s.From >= 0 && s.From+s.Count <= len(base):
			out = append(out, base[s.From:s.From+s.Count]...)
		default:
			return nil, errcode.New(errcode.ReceiptCorrupt, "a segment (from %d, count %d, %d entries) does not fit a base of %d entries", s.From, s.Count, len(s.Entries), len(base))
		}
	}
	return out, nil
}

type entryKey struct{ identity, address string }

func keyOf(e Entry) entryKey { return entryKey{e.Identity, e.Address} }

// SameEntry reports whether two entries are equal in every field.
func SameEntry(a, b Entry) bool {
	return a.Identity == b.Identity && a.Address == b.Address && a.Provider == b.Provider &&
		a.Type == b.Type && a.ID == b.ID && a.CreatedBy == b.CreatedBy && a.StateOnly == b.StateOnly &&
		slices.Equal(a.Keys, b.Keys) && slices.Equal(a.Scheme, b.Scheme) && slices.Equal(a.After, b.After) &&
		maps.Equal(a.Planned, b.Planned) && a.Provisioned == b.Provisioned &&
		maps.EqualFunc(a.Restore, b.Restore, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}
