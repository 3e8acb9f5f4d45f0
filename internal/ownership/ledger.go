package ownership

import (
	"fmt"
	"sort"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// Object is one managed resource instance of a scope's state.
type Object struct {
	Address, Provider, Type, ID string
	Attributes                  map[string]any
	// ProviderIdentity is the provider's resource identity where the
	// state records one.
	ProviderIdentity any
	// Sensitive names the attributes the state marks sensitive.
	Sensitive map[string]bool
}

// IdentityOf returns the identity of a state object: by the policy, by the
// provider's identity, or by its id; by its address when it has none.
func (pol Policy) IdentityOf(o Object) string {
	if id := pol.identityOf(o); id != "" {
		return id
	}
	return IntentIdentity(o.Provider, o.Type, o.Address)
}

// identityOf is IdentityOf without the fallback to the address: "" when
// the identity cannot be computed.
func (pol Policy) identityOf(o Object) string {
	attrs := o.Attributes
	if _, ok := attrs["id"]; !ok && o.ID != "" {
		attrs = map[string]any{"id": o.ID}
		for k, v := range o.Attributes {
			attrs[k] = v
		}
	}
	sensitive := o.Sensitive
	if marked := pol.Sensitive[o.Address]; len(marked) > 0 {
		sensitive = make(map[string]bool, len(marked)+len(o.Sensitive))
		for k := range o.Sensitive {
			sensitive[k] = true
		}
		for k := range marked {
			sensitive[k] = true
		}
	}
	id, _ := pol.Of(o.Provider, o.Type, o.Address, pol.seal(o.Type, attrs, sensitive, false), nil, o.ProviderIdentity)
	return id
}

// Ledger builds the ledger a run leaves from the scope's state after the
// run. Entries keep how they came to be owned from the previous ledger,
// matched by identity, so a `moved` block or a rename keeps ownership. An
// object whose identity the previous ledger knew under another id, and that
// this run did not create, was replaced outside Sponson: it is reported and
// recorded as adopted, no longer as Sponson's own. notes says what happened,
// for the run's output.
func Ledger(prev *receipt.Receipt, objects []Object, pol Policy, planned []Planned) (entries []receipt.Entry, notes []string) {
	known := knownEntries(prev)
	run := plannedOf(planned)
	entries = []receipt.Entry{}
	for _, o := range objects {
		e := ledgerEntry(o, pol, run.imported[o.Address])
		if old, ok := run.previous(known, o, e, pol); ok {
			notes = carryOver(&e, old, run.created[e.Address], notes)
		}
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Address < entries[j].Address })
	return entries, notes
}

// knownEntries are the previous ledger's entries by each of their keys, so
// that a change of the scope's policy keeps how an object came to be owned.
// Intents are not ownership.
func knownEntries(prev *receipt.Receipt) map[string]receipt.Entry {
	known := map[string]receipt.Entry{}
	if prev == nil {
		return known
	}
	for _, e := range prev.Ledger {
		if e.CreatedBy != receipt.CreatedByIntent {
			for _, k := range append([]string{e.Identity}, e.Keys...) {
				known[k] = e
			}
		}
	}
	return known
}

// runPlan is what Ledger needs of a run's plan, by address.
type runPlan struct {
	created, imported map[string]bool
	movedFrom         map[string]string
}

func plannedOf(planned []Planned) runPlan {
	run := runPlan{created: map[string]bool{}, imported: map[string]bool{}, movedFrom: map[string]string{}}
	for _, p := range planned {
		if p.PreviousAddress != "" && p.PreviousAddress != p.Address {
			run.movedFrom[p.Address] = p.PreviousAddress
		}
		if p.Creates() {
			run.created[p.Address] = true
		}
		if p.Imports {
			run.imported[p.Address] = true
		}
	}
	return run
}

// ledgerEntry is o's entry as created by Sponson, or adopted when the run
// imported it (Sponson did not create an object it imported).
func ledgerEntry(o Object, pol Policy, imported bool) receipt.Entry {
	identity := pol.IdentityOf(o)
	e := receipt.Entry{
		Identity:  identity,
		Address:   o.Address,
		Provider:  o.Provider,
		Type:      o.Type,
		ID:        o.ID,
		CreatedBy: receipt.CreatedBySponson,
		Keys:      otherKeys(identity, []string{pol.baseIdentity(o)}),
	}
	if names := pol.SchemeOf(o.Type); len(names) > 0 {
		e.Scheme = append([]string(nil), names...)
	}
	if imported {
		e.CreatedBy = receipt.CreatedByAdopted
	}
	return e
}

// previous is the previous ledger's entry of o (entry e), by any of its
// keys, or by the identity it had at its old address when the run moved
// it (an object owned by its address was owned at the old one).
func (run runPlan) previous(known map[string]receipt.Entry, o Object, e receipt.Entry, pol Policy) (receipt.Entry, bool) {
	keys := append([]string{e.Identity}, e.Keys...)
	if from, moved := run.movedFrom[o.Address]; moved {
		was := o
		was.Address = from
		keys = append(keys, pol.IdentityOf(was))
	}
	for _, k := range keys {
		if old, ok := known[k]; ok {
			return old, true
		}
	}
	return receipt.Entry{}, false
}

// carryOver gives e how its previous entry old came to be owned, unless
// its id changed without this run creating it (replaced outside Sponson:
// adopted), and notes what happened.
func carryOver(e *receipt.Entry, old receipt.Entry, created bool, notes []string) []string {
	e.CreatedBy = old.CreatedBy
	if old.Address != e.Address {
		notes = append(notes, fmt.Sprintf("%s moved to %s; the scope still owns it", old.Address, e.Address))
	}
	if old.ID != "" && e.ID != "" && old.ID != e.ID && !created {
		e.CreatedBy = receipt.CreatedByAdopted
		notes = append(notes, fmt.Sprintf("%s was replaced outside Sponson (id %s, now %s); it is no longer counted as created by Sponson", e.Address, old.ID, e.ID))
	}
	return notes
}

// Intents returns the ledger entries a checkpoint records for the creates
// of a plan: under their identity where it is known at plan time, so that
// another scope planning the same object collides with them, else under
// their address.
func Intents(planned []Planned) []receipt.Entry {
	var out []receipt.Entry
	for _, p := range planned {
		if !p.Creates() {
			continue
		}
		id := p.Identity
		if id == "" {
			id = IntentIdentity(p.Provider, p.Type, p.Address)
		}
		out = append(out, receipt.Entry{Identity: id, Address: p.Address, Provider: p.Provider, Type: p.Type, CreatedBy: receipt.CreatedByIntent,
			Keys: otherKeys(id, p.Keys), Scheme: p.Scheme})
	}
	return out
}

// Moves returns the changes of a plan that only move an object (a `moved`
// block with nothing else to do), which Identify leaves out, as Planned
// entries without actions: Ledger needs them to find an object owned by
// its address at the address it was moved from.
func Moves(p *tfjson.Plan) []Planned {
	var out []Planned
	if p == nil {
		return nil
	}
	for _, rc := range p.ResourceChanges {
		if rc.Mode == tfjson.ManagedResourceMode && rc.Change != nil && rc.Change.Actions.NoOp() &&
			rc.PreviousAddress != "" && rc.PreviousAddress != rc.Address {
			out = append(out, Planned{Address: rc.Address, PreviousAddress: rc.PreviousAddress, Type: rc.Type, Provider: rc.ProviderName})
		}
	}
	return out
}

// StateObjects lists the managed resource instances of a state as objects
// a ledger is computed from, sorted by address (tfstate.Objects).
func StateObjects(state []byte) ([]Object, error) {
	objs, err := tfstate.Objects(state)
	if err != nil || objs == nil {
		return nil, err
	}
	out := make([]Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, Object{Address: o.Address, Provider: o.Provider, Type: o.Type, ID: o.ID, Attributes: o.Attributes, ProviderIdentity: o.Identity, Sensitive: o.Sensitive})
	}
	return out, nil
}
