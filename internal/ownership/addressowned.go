package ownership

import "github.com/sponson/terraform-provider-sponson/internal/store"

// An object's id is its identity only where the id names one object in the
// world: two scopes holding the same id hold the same object. Real
// providers break that for many types (docs/design.md §2.3 "Ledger and
// identity"): local_file's id is the SHA-1 of its content, so two previews
// writing the same README to their own paths have one id; time_static's id
// is the second it was created, so two runs in the same second have one
// id. Matching such ids made scopes own each other's objects. The types
// below are owned by their address within their scope instead: their
// identity is an AddressIdentity, which the ownership index never holds, so
// they are never foreign elsewhere. A scheme declared for such a type (in
// sponson.hcl or a sponson_scope policy) identifies it by that scheme
// instead, which is how a type with an external object (local_file's
// filename) is checked across scopes.
//
// The table lists the five HashiCorp utility providers' types (read from
// their state: local 2.9.0, null 3.3.1, random 3.9.0, time 0.14.2, tls
// 4.2.1) whose id is not a global identity, with what their id is.
var addressOwned = map[string]string{
	// Content hashes: equal contents, one id.
	"local_file":           "SHA-1 of the content",
	"local_sensitive_file": "SHA-1 of the content",
	// Timestamps, to the second: runs in the same second, one id.
	"time_static":   "RFC 3339 time of creation",
	"time_offset":   "RFC 3339 base time",
	"time_rotating": "RFC 3339 time of creation",
	"time_sleep":    "RFC 3339 time of creation",
	// Constant ids, or none.
	"random_password": `the constant "none"`,
	"random_bytes":    "no id at all",
	"random_shuffle":  `the constant "-"`,
	// Generated values from small spaces, or chosen by the configuration:
	// two scopes can draw, or be told, the same one. None names an object
	// outside the state.
	"random_integer": "the generated integer",
	"random_string":  "the generated string",
	"random_pet":     "the generated name (with the configured prefix)",
}

// IsAddressOwned reports whether objects of typ are owned by address within
// their scope (the table above) when no scheme is declared for the type.
func IsAddressOwned(typ string) bool {
	_, ok := addressOwned[typ]
	return ok
}

// IsAddressIdentity reports whether identity is an address identity, which
// names an object only within its scope: it is never matched against the
// ownership index.
func IsAddressIdentity(identity string) bool { return store.IsAddressIdentity(identity) }

// global returns identities without the address identities among them:
// those an object can be matched by in other scopes.
func global(identities []string) []string {
	var out []string
	for _, id := range identities {
		if id != "" && !IsAddressIdentity(id) {
			out = append(out, id)
		}
	}
	return out
}

// Declaration is what an environment declares about identity in
// sponson.hcl, the same for every scope of it: identity schemes by type,
// and types owned by address beyond the table above (a provider of the
// team's own whose ids name no single object).
type Declaration struct {
	Schemes      map[string][]string
	AddressOwned []string
}

// Policy is the policy of the declaration alone, which a scope's own
// sponson_scope policy completes.
func (d Declaration) Policy() Policy {
	pol := Policy{Declared: d.Schemes}
	if len(d.AddressOwned) > 0 {
		pol.AddressOwned = map[string]bool{}
		for _, typ := range d.AddressOwned {
			pol.AddressOwned[typ] = true
		}
	}
	return pol
}

// addressOwned reports whether pol owns objects of typ by address when no
// scheme is declared for it: the table, or the declaration.
func (pol Policy) addressOwned(typ string) bool {
	return IsAddressOwned(typ) || pol.AddressOwned[typ]
}
