package scopeedit

import (
	"context"
	"slices"
	"sort"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// The edits of the state document (`sponson state rm`, `mv`, `push`): each
// writes the new state and a receipt whose ledger matches it.

// EditState is the edit of a state command: change rewrites the scope's
// state document and says which instance addresses went where ("" for
// removed). The ledger follows: an entry removed is released (the scope
// no longer owns it, warn hears of it), an entry moved is owned under its
// new address. Open entries (IsOpen) stay as they are: what is at their
// address in the state is another object.
func EditState(command string, warn func(string), change func(tfstate.Doc) (map[string]string, error)) func(context.Context, *Scope) (Change, error) {
	return func(_ context.Context, s *Scope) (Change, error) {
		doc, err := tfstate.Parse(s.State)
		if err != nil {
			return Change{}, errcode.Wrap(errcode.Internal, err, "reading the state of %s", s.Key)
		}
		moved, err := change(doc)
		if err != nil {
			return Change{}, err
		}
		state, err := doc.Marshal()
		if err != nil {
			return Change{}, errcode.Wrap(errcode.Internal, err, "encoding the state")
		}
		rec := s.Next(command, receipt.StatusApplied)
		rec.Ledger = []receipt.Entry{}
		for _, e := range s.ledger() {
			to, touched := moved[e.Address]
			switch {
			case !touched || IsOpen(e):
			case to == "":
				rec.Released = append(rec.Released, e)
				warn(Released(e, command))
				continue
			default:
				e.Address = to
				if ownership.IsAddressIdentity(e.Identity) {
					// Owned by its address: the address it has now.
					e.Identity = store.AddressIdentity(e.Provider, e.Type, to)
				}
			}
			rec.Ledger = append(rec.Ledger, e)
		}
		rec.Changes = changesOf(moved)
		return Change{State: state, Receipt: rec}, nil
	}
}

// changesOf lists the moves and removals of a state edit, by address.
func changesOf(moved map[string]string) []receipt.Change {
	from := make([]string, 0, len(moved))
	for a := range moved {
		from = append(from, a)
	}
	sort.Strings(from)
	out := []receipt.Change{}
	for _, a := range from {
		action := "forget"
		if moved[a] != "" {
			action = "move"
		}
		out = append(out, receipt.Change{Address: a, Actions: []string{action}})
	}
	return out
}

func (s *Scope) ledger() []receipt.Entry {
	if s.Latest == nil {
		return nil
	}
	return s.Latest.Ledger
}

// Push is the edit of `sponson state push`: state replaces the scope's
// state, as the engine's state push does, and the ledger follows it. It
// is refused (USAGE) for a state of another lineage or an older serial
// than the scope's (the engine's own rule), and (OWNED_BY_OTHER_SCOPE)
// when another scope owns one of its objects. An object the scope owned
// keeps how it came to be owned; one it did not is adopted; one the new
// state lacks is released, as by state rm. Open entries stay.
func Push(command string, declared ownership.Declaration, state []byte, warn func(string)) func(context.Context, *Scope) (Change, error) {
	return func(ctx context.Context, s *Scope) (Change, error) {
		doc, err := tfstate.Parse(state)
		if err != nil {
			return Change{}, errcode.Wrap(errcode.Usage, err, "%s", command)
		}
		next, err := tfstate.ReadMeta(state)
		if err != nil {
			return Change{}, errcode.Wrap(errcode.Usage, err, "%s", command)
		}
		cur, err := tfstate.ReadMeta(s.State)
		if err != nil {
			return Change{}, errcode.Wrap(errcode.Internal, err, "reading the state of %s", s.Key)
		}
		if cur.Lineage != "" && next.Lineage != cur.Lineage {
			return Change{}, errcode.New(errcode.Usage, "the state has lineage %q, the state of %s %q: it is another state", next.Lineage, s.Key, cur.Lineage).
				WithHint("Push a state of this scope (`sponson state pull` gives it); bring a state of another into a new scope with `sponson adopt`.")
		}
		if next.Serial < cur.Serial {
			return Change{}, errcode.New(errcode.Usage, "the state has serial %d, older than the serial %d of %s", next.Serial, cur.Serial, s.Key).
				WithHint("Pull the scope's state again (`sponson state pull`) and make the change on it.")
		}
		// The document as given, its serial past both: the engine reads
		// the highest serial as the newest.
		doc["serial"] = float64(max(next.Serial, cur.Serial))
		data, err := doc.Marshal()
		if err != nil {
			return Change{}, errcode.Wrap(errcode.Internal, err, "encoding the state")
		}
		objects, err := ownership.StateObjects(data)
		if err != nil {
			return Change{}, errcode.Wrap(errcode.Usage, err, "%s", command)
		}
		pol, err := s.StatePolicy(ctx, declared, objects)
		if err != nil {
			return Change{}, err
		}
		if err := s.RefuseForeign(ctx, pol, objects, "pushing the state"); err != nil {
			return Change{}, err
		}
		// Every object the scope did not own comes in as an import does.
		planned := make([]ownership.Planned, 0, len(objects))
		for _, o := range objects {
			planned = append(planned, ownership.Planned{Address: o.Address, Type: o.Type, Provider: o.Provider, Imports: true})
		}
		ledger, _ := ownership.Ledger(s.Latest, objects, pol, planned)
		rec := s.Next(command, receipt.StatusApplied)
		// An entry is kept when the new ledger has it under any of its
		// identities, as Ledger matched it.
		kept := map[string]bool{}
		for _, e := range ledger {
			for _, k := range append([]string{e.Identity}, e.Keys...) {
				kept[k] = true
			}
		}
		isKept := func(e receipt.Entry) bool {
			return slices.ContainsFunc(append([]string{e.Identity}, e.Keys...), func(k string) bool { return kept[k] })
		}
		rec.Ledger = ledger
		for _, e := range s.ledger() {
			switch {
			case IsOpen(e):
				rec.Ledger = append(rec.Ledger, e)
			case !isKept(e):
				rec.Released = append(rec.Released, e)
				warn(Released(e, command))
				rec.Changes = append(rec.Changes, receipt.Change{Address: e.Address, Type: e.Type, Actions: []string{"forget"}})
			}
		}
		sort.Slice(rec.Ledger, func(i, j int) bool { return rec.Ledger[i].Address < rec.Ledger[j].Address })
		return Change{State: data, Receipt: rec}, nil
	}
}

// StatePolicy is the identity policy the ledger of a state is computed
// under, as a run's re-index computes it: what the environment declares,
// the scope's own policy as the state records it (its sponson_scope), and
// the environment's key for sensitive identifying values, when it has one.
func (s *Scope) StatePolicy(ctx context.Context, declared ownership.Declaration, objects []ownership.Object) (ownership.Policy, error) {
	pol := declared.Policy()
	hashKey, err := ownership.LoadHashKey(ctx, s.o.Store, s.Key.Environment, "", s.o.Lease, false, false)
	if err != nil {
		return pol, err
	}
	pol.Identity, pol.HashKey = ownership.ScopePolicy(objects), hashKey
	return pol, nil
}
