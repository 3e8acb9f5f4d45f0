package ownership

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// A scheme declared in sponson.hcl decides the identity of a type in every
// scope of the environment (Policy.Declared). When the declaration changes,
// the objects the scopes own are indexed under the old scheme: a type owned
// by address becomes checked by its attributes only once each owner is
// indexed again. So the index records the declaration it was built under
// (SchemesRecord), and a run that finds another one re-indexes the owners
// of the changed types, each under its own lease, before its foreign check
// (docs/design.md §2.3 "Ledger and identity").

// SchemesRecord is the record, in the intent lease's scope, of the declared
// schemes the environment's index is built under.
const SchemesRecord = "identity-schemes"

// EncodeSchemes renders declared schemes for SchemesRecord.
func EncodeSchemes(declared map[string][]string) []byte {
	if declared == nil {
		declared = map[string][]string{}
	}
	b, _ := json.Marshal(declared) // a map of string slices always encodes
	return b
}

// ParseSchemes reads a SchemesRecord; nil data is no declaration.
func ParseSchemes(data []byte) (map[string][]string, error) {
	out := map[string][]string{}
	if len(data) == 0 {
		return out, nil
	}
	err := json.Unmarshal(data, &out)
	return out, err
}

// ChangedSchemes returns the types whose declared scheme differs between
// was and now, sorted.
func ChangedSchemes(was, now map[string][]string) []string {
	var out []string
	for typ, attrs := range now {
		if !slices.Equal(was[typ], attrs) {
			out = append(out, typ)
		}
	}
	for typ := range was {
		if _, ok := now[typ]; !ok {
			out = append(out, typ)
		}
	}
	sort.Strings(out)
	return out
}

// OwnsTypes reports whether ledger holds an entry a run vouched for of one
// of types: entries to re-index.
func OwnsTypes(ledger []receipt.Entry, types []string) bool {
	for _, e := range ledger {
		if e.CreatedBy != receipt.CreatedByIntent && e.CreatedBy != receipt.CreatedByUnresolved && slices.Contains(types, e.Type) {
			return true
		}
	}
	return false
}

// ScopePolicy is a scope's own identity policy as its state records it:
// the identity attribute of its sponson_scope resource.
func ScopePolicy(objects []Object) map[string][]string {
	out := map[string][]string{}
	for _, o := range objects {
		if o.Type != ScopeResourceType {
			continue
		}
		ids, _ := Normalize(o.Attributes["identity"]).(map[string]any)
		for typ, attrs := range ids {
			list, _ := attrs.([]any)
			for _, a := range list {
				if s, ok := a.(string); ok {
					out[typ] = append(out[typ], s)
				}
			}
		}
	}
	return out
}

// Reidentified returns ledger with the identity, keys and scheme of each
// entry of types computed again under pol from the object at its address
// in objects, and how many entries changed. Entries no run vouched for,
// and entries whose object the state lacks, are kept as they are.
func Reidentified(ledger []receipt.Entry, objects []Object, pol Policy, types []string) ([]receipt.Entry, int) {
	at := map[string]Object{}
	for _, o := range objects {
		at[o.Address] = o
	}
	out := make([]receipt.Entry, 0, len(ledger))
	changed := 0
	for _, e := range ledger {
		o, ok := at[e.Address]
		if ok && slices.Contains(types, e.Type) && e.CreatedBy != receipt.CreatedByIntent && e.CreatedBy != receipt.CreatedByUnresolved {
			fresh, _ := Ledger(nil, []Object{o}, pol, nil)
			if f := fresh[0]; f.Identity != e.Identity || !slices.Equal(f.Keys, e.Keys) || !slices.Equal(f.Scheme, e.Scheme) {
				e.Identity, e.Keys, e.Scheme = f.Identity, f.Keys, f.Scheme
				changed++
			}
		}
		out = append(out, e)
	}
	return out, changed
}

// addressMark stands for "owned by address" in a SchemesRecord.
const addressMark = "@address"

// Record is the declaration as a SchemesRecord holds it: each type's
// scheme, and the types owned by address marked so, so that a change of
// either is a change of scheme.
func (d Declaration) Record() map[string][]string {
	out := map[string][]string{}
	for typ, attrs := range d.Schemes {
		out[typ] = attrs
	}
	for _, typ := range d.AddressOwned {
		if _, ok := out[typ]; !ok {
			out[typ] = []string{addressMark}
		}
	}
	return out
}
