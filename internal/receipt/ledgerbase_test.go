package receipt_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// entryGen draws entries from a small pool of identities and addresses, so
// that ledgers repeat, reorder and change each other's entries.
func entryGen() *rapid.Generator[receipt.Entry] {
	return rapid.Custom(func(t *rapid.T) receipt.Entry {
		e := receipt.Entry{
			Identity:  fmt.Sprintf("id-%d", rapid.IntRange(0, 12).Draw(t, "identity")),
			Address:   fmt.Sprintf("null_resource.r[%d]", rapid.IntRange(0, 12).Draw(t, "address")),
			Provider:  "registry.terraform.io/hashicorp/null",
			Type:      "null_resource",
			ID:        rapid.SampledFrom([]string{"", "1", "2"}).Draw(t, "id"),
			CreatedBy: rapid.SampledFrom([]string{receipt.CreatedBySponson, receipt.CreatedByIntent}).Draw(t, "createdBy"),
			StateOnly: rapid.Bool().Draw(t, "stateOnly"),
		}
		if rapid.Bool().Draw(t, "keys") {
			e.Keys = []string{"k-" + e.ID}
		}
		if rapid.Bool().Draw(t, "planned") {
			e.Planned = map[string]string{"name": e.ID}
		}
		return e
	})
}

// A ledger written against any base reads back as itself, whatever the
// two share, in whatever order and repetition.
func TestDeltaReadsBackAsTheLedger(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		base := rapid.SliceOf(entryGen()).Draw(t, "base")
		ledger := rapid.SliceOf(entryGen()).Draw(t, "ledger")
		if rapid.Bool().Draw(t, "edit the base") {
			ledger = append(append([]receipt.Entry{}, base...), ledger...)
		}
		b, _, err := receipt.NewBase(base)
		if err != nil {
			t.Fatal(err)
		}
		r := receipt.First("s", "preview", "pr-1")
		r.RunID, r.Ledger = "run-1", ledger
		got := roundTrip(t, r.Against(b), b)
		if d := cmp.Diff(ledger, got.Ledger, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("the ledger read back (-want +got):\n%s", d)
		}
	})
}

func roundTrip(t interface{ Fatal(...any) }, r *receipt.Receipt, b *receipt.Base) *receipt.Receipt {
	data, err := receipt.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := receipt.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stored.Expand(b)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A receipt of 1,000 entries that differs from its base in one is stored in
// proportion to that one change, and reads back as a receipt of its whole
// ledger (version 1, no base).
func TestCompactReceiptIsTheSizeOfItsChanges(t *testing.T) {
	t.Parallel()
	base := make([]receipt.Entry, 1000)
	for i := range base {
		base[i] = receipt.Entry{Identity: fmt.Sprintf("i-%04d", i), Address: fmt.Sprintf("terraform_data.d[%d]", i), Type: "terraform_data", CreatedBy: receipt.CreatedBySponson}
	}
	b, baseDoc, err := receipt.NewBase(base)
	if err != nil {
		t.Fatal(err)
	}
	r := receipt.First("s", "preview", "pr-1")
	r.RunID = "run-2"
	r.Ledger = append([]receipt.Entry{}, base...)
	r.Ledger[500].ID = "changed"
	whole, err := receipt.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	compact, err := receipt.Marshal(r.Against(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(compact)*50 > len(whole) || len(baseDoc) > len(whole) {
		t.Errorf("compact receipt %d bytes, whole %d, base %d: want the compact one under 2%% of the whole, the base no larger", len(compact), len(whole), len(baseDoc))
	}
	stored, err := receipt.Parse(compact)
	if err != nil {
		t.Fatal(err)
	}
	if !stored.Compact() || stored.Version != receipt.CompactVersion || len(stored.Ledger) != 0 || receipt.Literal(stored.LedgerDelta) != 1 {
		t.Fatalf("stored: version %d, base %q, %d entries, %d literal", stored.Version, stored.LedgerBase, len(stored.Ledger), receipt.Literal(stored.LedgerDelta))
	}
	got, err := stored.Expand(b)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := receipt.Parse(whole)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the compact receipt expanded (-whole +got):\n%s", d)
	}
	if _, err := stored.Expand(&receipt.Base{Name: "ledger-other"}); !errcode.Is(err, errcode.Internal) {
		t.Errorf("expanded against another base: %v", err)
	}
}

func TestCompactReceiptErrors(t *testing.T) {
	t.Parallel()
	b, data, err := receipt.NewBase([]receipt.Entry{{Identity: "a", Address: "x.a"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := receipt.ParseBase(b.Name, data); err != nil || len(got.Entries) != 1 {
		t.Fatalf("ParseBase: %v %v", got, err)
	}
	for name, c := range map[string]struct {
		parse func() error
		code  errcode.Code
	}{
		"a base changed after it was written": {func() error {
			_, err := receipt.ParseBase(b.Name, []byte(strings.Replace(string(data), "x.a", "x.b", 1)))
			return err
		}, errcode.ReceiptCorrupt},
		"version 2 without a base": {func() error {
			_, err := receipt.Parse([]byte(`{"version": 2, "runId": "r", "environment": "e", "scope": "s", "ledger": []}`))
			return err
		}, errcode.ReceiptCorrupt},
		"version 1 naming a base": {func() error {
			_, err := receipt.Parse([]byte(`{"version": 1, "runId": "r", "environment": "e", "scope": "s", "ledgerBase": "ledger-x"}`))
			return err
		}, errcode.ReceiptCorrupt},
		"a base with a ledger of its own": {func() error {
			_, err := receipt.Parse([]byte(`{"version": 2, "runId": "r", "environment": "e", "scope": "s", "ledgerBase": "ledger-x", "ledger": [{"identity": "a"}]}`))
			return err
		}, errcode.ReceiptCorrupt},
		"a segment past the base": {func() error {
			r, err := receipt.Parse([]byte(`{"version": 2, "runId": "r", "environment": "e", "scope": "s", "ledgerBase": "` + b.Name + `", "ledgerDelta": [{"from": 0, "count": 2}]}`))
			if err != nil {
				return err
			}
			_, err = r.Expand(b)
			return err
		}, errcode.ReceiptCorrupt},
	} {
		if err := c.parse(); !errcode.Is(err, c.code) {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
}

// SameEntry decides what a delta leaves out: a field it does not compare
// would be lost from every compact receipt. A field added to Entry fails
// this test until SameEntry compares it.
func TestSameEntryComparesEveryField(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[receipt.Entry]()
	for i := range typ.NumField() {
		var a, b receipt.Entry
		f := reflect.ValueOf(&b).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"x"}))
		case reflect.Map:
			// A map of the field's own type with one entry.
			m := reflect.MakeMap(f.Type())
			v := reflect.New(f.Type().Elem()).Elem()
			switch v.Kind() {
			case reflect.String:
				v.SetString("y")
			case reflect.Slice:
				v.SetBytes([]byte("1"))
			}
			m.SetMapIndex(reflect.ValueOf("x"), v)
			f.Set(m)
		default:
			t.Fatalf("field %s of kind %s: teach this test and SameEntry", typ.Field(i).Name, f.Kind())
		}
		if receipt.SameEntry(a, b) {
			t.Errorf("SameEntry does not compare %s", typ.Field(i).Name)
		}
	}
}
