package ownership

// inPlace is the table of the resource types whose create writes their
// object at the place some of their arguments name, replacing whatever is
// there, by provider (namespace/type) and type, with those arguments: a
// create again with the same values of them makes the same object, not a
// second one. So a create of one that a stopped run may have made (its
// completion recorded or not) needs no person and no import (local_file
// has none): the next apply that creates it at the same place writes that
// object again and owns it (docs/design.md §2.4 "Intent", rewritten).
//
// Only types whose create overwrites belong here: local_file writes its
// file with os.WriteFile whether or not it exists (local 2.9.0). Not a
// type whose create fails on an existing object, nor one whose API makes a
// new object per call.
var inPlace = map[string]map[string][]string{
	"hashicorp/local": {
		"local_file":           {"filename"},
		"local_sensitive_file": {"filename"},
	},
}

// InPlace returns the arguments that name where a create of typ from
// provider writes its object, or nil when typ is not such a type (the
// table above).
func InPlace(provider, typ string) []string {
	return inPlace[providerName(provider)][typ]
}

// SamePlace reports whether the planned values a and b of two creates of
// typ name the same place: typ is in the table, and each of its place
// arguments is known in both and equal.
func SamePlace(provider, typ string, a, b map[string]string) bool {
	keys := InPlace(provider, typ)
	for _, k := range keys {
		va, oka := a[k]
		vb, okb := b[k]
		if !oka || !okb || va != vb {
			return false
		}
	}
	return len(keys) > 0
}
