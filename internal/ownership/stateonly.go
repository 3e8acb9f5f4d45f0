package ownership

import (
	"slices"
	"strings"
)

// stateOnly is the table of the resource types that keep nothing outside
// the state, by provider (its namespace/type, whatever the registry host):
// a create of one that the state lacks left no object anywhere, so a run
// that stopped while creating one needs no person, and the next apply
// creates it again (its provisioners run again, as for a tainted
// resource). docs/design.md §2.4 "Intent" lists it too.
//
// Only types whose whole object is values the provider computes and keeps
// in the state belong here: not local_file (a file), not archive_file,
// not time_sleep's cousins in other providers that call an API.
var stateOnly = map[string][]string{
	// The engine's own: terraform_data (and its provisioners).
	"builtin/terraform": {"terraform_data"},
	"hashicorp/null":    {"null_resource"},
	"hashicorp/random": {"random_bytes", "random_id", "random_integer", "random_password", "random_pet",
		"random_shuffle", "random_string", "random_uuid"},
	"hashicorp/time": {"time_offset", "time_rotating", "time_sleep", "time_static"},
	"hashicorp/tls": {"tls_cert_request", "tls_locally_signed_cert", "tls_private_key",
		"tls_self_signed_cert"},
	"hashicorp/cloudinit": {"cloudinit_config"},
	// Not state only, but a create again rewrites the one record of the
	// scope it writes: nothing is left that nothing owns.
	"sponson/sponson": {"sponson_scope"},
}

// StateOnly reports whether resources of type typ from provider (a source
// address such as registry.terraform.io/hashicorp/random) keep nothing
// outside the state: the table above, and the types in extra (the scope
// policy's state_only, Rules.StateOnly).
func StateOnly(provider, typ string, extra []string) bool {
	if slices.Contains(extra, typ) {
		return true
	}
	return slices.Contains(stateOnly[providerName(provider)], typ)
}

// providerName is the namespace/type of a provider source address.
func providerName(source string) string {
	parts := strings.Split(strings.Trim(source, "/"), "/")
	if len(parts) < 2 {
		return source
	}
	return strings.ToLower(strings.Join(parts[len(parts)-2:], "/"))
}

// ProviderName is the namespace/type of a provider source address
// ("hashicorp/random"), as the type tables are keyed.
func ProviderName(source string) string { return providerName(source) }
