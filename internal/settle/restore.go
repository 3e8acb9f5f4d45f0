// Package settle holds the settlement's decisions about what a stopped run
// left (docs/design.md §2.4, its settlement) as pure functions: how an object
// the engine reported complete, which the state lacks, is restored whole,
// and when a settlement that creates a resource again re-runs what its
// first create did. internal/scoperun carries them out.
//
// Ground.Settle settles one open entry against the state, what the scope
// owned before, and the stopped run's journal and quarantined states:
// claimed, adopted whole (the table restores, read by Of; Decide is the
// rule), dropped (state-only, or not-started and replace-not-started, which
// are decided only after a checkpoint that says heldCompletions: only then
// does a missing completion prove that what waited for it had not started),
// rewritten in place (ownership.InPlace, by filename), or unresolved. An
// intent carries what they need: after (internal/applyorder), planned (its
// known, non-sensitive top-level values) and restore (the plan's values of
// the arguments an import cannot read back). A rerun says which resource
// runs its provisioners again, and whether they had started (the journal's
// provision records).
//
// Dropped as not started: not-started when one of the intent's after has
// no completion and no new object; replace-not-started when its
// replacement's delete has no completion. A dependent the engine started
// before sponson read the completion it waited for (the engine is paused
// only once sponson reads it) settles as not-started if that completion's
// write never landed: a pipe smaller than a page, or a proxy before each
// plugin, could not close that gap. Rewritten in place stays unresolved
// (in-place) until the state holds the object, so a run that stops there
// loses nothing.
//
// How an object is adopted whole (restores, read by Of; every type was
// checked against its provider):
//
//   - terraform_data: imported, then the plan's input and triggers_replace
//     written over it (the import restores only the id; output is the
//     input);
//   - null_resource, random_pet: written from their arguments (no import;
//     the id and the arguments are the whole object);
//   - random_string, random_uuid, time_static: imported, then the plan's
//     keepers or triggers, and random_string's arguments (the import reads
//     the value from the id, not the arguments);
//   - random_integer, random_id: imported by an id built from the plan,
//     then the plan's keepers and arguments (the id is only the value);
//   - random_password, random_bytes, random_shuffle, time_offset,
//     time_rotating, time_sleep, tls_*, cloudinit_config, sponson_scope:
//     none, dropped (the value is only in the state the engine did not
//     write);
//   - local_file, local_sensitive_file: none, rewritten in place (no
//     import);
//   - any other type: imported and read by its provider (a cloud
//     resource's read returns its arguments); a type the scope's policy
//     declares state-only is dropped.
//
// When no way gives a whole object (the plan did not know an argument, or
// only as sensitive), a state-only object is dropped and any other left
// unresolved.
package settle

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/ownership"
)

// Way is how a settlement restores an object the engine reported complete
// (its id is known) that the state lacks.
type Way string

// The ways (docs/design.md §2.4; the list in the package documentation).
const (
	// ImportRead: an import by the id, whose read by the provider restores
	// the whole object, configuration included (a cloud resource whose
	// API returns every argument). The default for a type the table does
	// not name and that keeps something outside the state.
	ImportRead Way = "import"
	// ImportPlanned: an import by the id restores what the id names, and
	// the arguments the import cannot read back (Restore.Args) are written
	// over the imported object from the plan's values, as the engine's
	// create would have written them; a computed value that follows from
	// them is derived (terraform_data's output is its input).
	ImportPlanned Way = "import-planned"
	// Write: the type has no import, but the id and the plan's values are
	// the whole object (Restore.Args, at Restore.Schema): it is written
	// into the state as the engine's create would have written it.
	Write Way = "write"
	// InPlace: the object is written where its arguments say and has no
	// import (ownership.InPlace, local_file): the next create at the same
	// place rewrites it.
	InPlace Way = "in-place"
	// Nothing: no path gives a whole object (no import, or an id that does
	// not name the object, or a value only the create knew, such as a
	// private key or a password). A state-only type is settled as not
	// created; another is a person's decision.
	Nothing Way = "none"
)

// Restore is how one type is restored.
type Restore struct {
	Way Way
	// Args are the arguments an ImportPlanned import cannot read back:
	// the plan must have known each of them (and they must not be
	// sensitive) for the object to be whole.
	Args []string
	// Dynamic are the arguments of dynamic type (terraform_data's): the
	// state keeps them with their type ({"value": ..., "type": ...}),
	// which the plan's JSON does not give; it is read from the value as
	// a literal of it has it (a tuple for a list, an object for a map).
	Dynamic []string
	// Schema is the version of the type's schema a Write writes at.
	Schema int
	// importID builds the import id from the completion's id and the
	// plan's values (random_integer's "result,min,max"); nil: the id.
	importID func(id string, planned map[string]json.RawMessage) (string, bool)
	// derive sets the computed values that follow from the arguments.
	derive func(attrs map[string]any)
}

// restores is the table, by provider namespace/type and resource type.
// Every type here was checked against its provider: what its import
// restores, and what only the plan knew (docs/design.md §2.4).
var restores = map[string]map[string]Restore{
	"builtin/terraform": {
		// The import restores only the id; input and triggers_replace
		// come from the plan, and output is the input.
		"terraform_data": {Way: ImportPlanned, Args: []string{"input", "triggers_replace"}, Dynamic: []string{"input", "triggers_replace", "output"},
			derive: func(a map[string]any) { a["output"] = a["input"] }},
	},
	"hashicorp/null": {
		// No import: its id and triggers are the whole object.
		"null_resource": {Way: Write, Args: []string{"triggers"}},
	},
	"hashicorp/random": {
		// The import reads the result from the id and sets the
		// arguments' defaults: the plan's arguments go over them.
		"random_string": {Way: ImportPlanned, Args: []string{"keepers", "length", "lower", "min_lower", "min_numeric",
			"min_special", "min_upper", "number", "numeric", "override_special", "special", "upper"}},
		"random_uuid": {Way: ImportPlanned, Args: []string{"keepers"}},
		"random_integer": {Way: ImportPlanned, Args: []string{"keepers", "min", "max", "seed"},
			importID: func(id string, p map[string]json.RawMessage) (string, bool) {
				parts := []string{id, text(p["min"]), text(p["max"])}
				if s := text(p["seed"]); s != "" {
					parts = append(parts, s)
				}
				return strings.Join(parts, ","), parts[1] != "" && parts[2] != ""
			}},
		// random_pet has no import, but its id is the name and the rest
		// are its arguments.
		"random_pet": {Way: Write, Args: []string{"keepers", "length", "prefix", "separator"}},
		// random_password's and random_bytes' ids are "none" and
		// random_shuffle's "-": the value is only in the state the engine
		// did not write.
		"random_password": {Way: Nothing}, "random_bytes": {Way: Nothing},
		"random_shuffle": {Way: Nothing},
		// random_id's id is the value without the prefix, which its
		// import takes as "prefix,id".
		"random_id": {Way: ImportPlanned, Args: []string{"keepers", "byte_length", "prefix"},
			importID: func(id string, p map[string]json.RawMessage) (string, bool) {
				if _, known := p["prefix"]; !known {
					return "", false
				}
				if prefix := text(p["prefix"]); prefix != "" {
					return prefix + "," + id, true
				}
				return id, true
			}},
	},
	"hashicorp/time": {
		// The import reads the time and what follows from it from the
		// id (RFC 3339); triggers come from the plan.
		"time_static": {Way: ImportPlanned, Args: []string{"triggers"}},
		"time_offset": {Way: Nothing}, "time_rotating": {Way: Nothing}, "time_sleep": {Way: Nothing},
	},
	"hashicorp/tls": {
		// The key or certificate exists only in the state.
		"tls_private_key": {Way: Nothing}, "tls_cert_request": {Way: Nothing},
		"tls_locally_signed_cert": {Way: Nothing}, "tls_self_signed_cert": {Way: Nothing},
	},
	"hashicorp/cloudinit": {"cloudinit_config": {Way: Nothing}},
	"sponson/sponson":     {"sponson_scope": {Way: Nothing}},
	"hashicorp/local": {
		"local_file": {Way: InPlace}, "local_sensitive_file": {Way: InPlace},
	},
}

// Of is how an object of typ (of the provider source provider) is
// restored. A type the table does not name is imported and read
// (ImportRead), unless stateOnly says it keeps nothing outside the state
// (the scope's policy): then there is nothing to read it back from.
func Of(provider, typ string, stateOnly bool) Restore {
	if r, ok := restores[ownership.ProviderName(provider)][typ]; ok {
		return r
	}
	if stateOnly {
		return Restore{Way: Nothing}
	}
	return Restore{Way: ImportRead}
}

// Record is what an intent of typ records of its planned change for the
// settlement: the known, non-sensitive planned values of Restore.Args, as
// JSON (a null is recorded as null: the plan knew it). An argument left
// out was unknown or sensitive, and the object cannot be restored whole.
func Record(provider, typ string, ch *tfjson.Change) map[string]json.RawMessage {
	r := Of(provider, typ, false)
	if (r.Way != ImportPlanned && r.Way != Write) || ch == nil {
		return nil
	}
	if sens, ok := ch.AfterSensitive.(bool); ok && sens {
		return nil
	}
	after, _ := ch.After.(map[string]any)
	unknown, _ := ch.AfterUnknown.(map[string]any)
	sensitive, _ := ch.AfterSensitive.(map[string]any)
	out := map[string]json.RawMessage{}
	for _, k := range r.Args {
		if isTrue(unknown[k]) || isSet(sensitive[k]) {
			continue
		}
		b, err := json.Marshal(after[k])
		if err != nil {
			continue
		}
		out[k] = b
	}
	return out
}

// isTrue reports a plan's "after_unknown" mark: true, or a structure with
// an unknown part (a known list with an unknown element is not known).
func isTrue(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case []any:
		return slices.ContainsFunc(v, isTrue)
	case map[string]any:
		for _, x := range v {
			if isTrue(x) {
				return true
			}
		}
	}
	return false
}

// isSet reports an "after_sensitive" mark with something sensitive in it.
func isSet(v any) bool { return isTrue(v) }

// Missing lists the arguments of r that recorded lacks: what the plan did
// not know (or knew only as sensitive). None missing: the object is whole
// once restored.
func (r Restore) Missing(recorded map[string]json.RawMessage) []string {
	var out []string
	for _, k := range r.Args {
		if _, ok := recorded[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// ImportID is the id to import the object by, from the completion's id and
// the recorded values; false when the recorded values cannot make one.
func (r Restore) ImportID(id string, recorded map[string]json.RawMessage) (string, bool) {
	if r.importID == nil {
		return id, id != ""
	}
	return r.importID(id, recorded)
}

// Overlay returns the attributes of an imported object with the recorded
// arguments written over them and the computed values that follow from
// them derived: what the engine's create would have written.
func (r Restore) Overlay(imported map[string]any, recorded map[string]json.RawMessage) map[string]any {
	out := maps.Clone(imported)
	if out == nil {
		out = map[string]any{}
	}
	for _, k := range r.Args {
		raw, ok := recorded[k]
		if !ok {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			out[k] = v
		}
	}
	if r.derive != nil {
		r.derive(out)
	}
	for _, k := range r.Dynamic {
		if v, ok := out[k]; ok && v != nil && !isWrapped(v) {
			out[k] = map[string]any{"value": v, "type": TypeOf(v)}
		}
	}
	return out
}

// isWrapped reports a dynamic value as the state keeps it.
func isWrapped(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 2 {
		return false
	}
	_, hasV := m["value"]
	_, hasT := m["type"]
	return hasV && hasT
}

// TypeOf is the type, as the state's JSON spells it, of a value of
// dynamic type the plan's JSON gave: what a literal of that value has
// (a JSON array is a tuple, an object an object, a null in them dynamic).
func TypeOf(v any) any {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case float64, json.Number:
		return "number"
	case []any:
		elems := make([]any, len(v))
		for i, e := range v {
			elems[i] = TypeOf(e)
		}
		return []any{"tuple", elems}
	case map[string]any:
		attrs := make(map[string]any, len(v))
		for k, e := range v {
			attrs[k] = TypeOf(e)
		}
		return []any{"object", attrs}
	default:
		return "dynamic"
	}
}

// text is a recorded scalar as an import id spells it: a string as it is,
// a number as JSON; "" for null or nothing.
func text(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return string(raw)
}
