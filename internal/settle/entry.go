package settle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// Ground is what a settlement knows of what a stopped run left, against
// which each of its open entries is settled (docs/design.md §2.4): the
// state, what the scope owned before, and what the stopped run's journal
// and quarantined states say.
type Ground struct {
	// FromRun is the stopped run; held says it paused its engine for the
	// completions a create waits for (receipt.HeldCompletions).
	FromRun string
	held    bool
	// present: address -> id of the object the state holds there; old:
	// of the object the scope owned there before; created: of an object
	// known to exist (a completion, a quarantined state, a person's word).
	present, old, created map[string]string
	// deleted: the old object's delete completed; completed: a create,
	// update or read completed; deleteFirst: replaced by a delete, then a
	// create; provisioning: a create's provisioners started.
	deleted, completed, deleteFirst, provisioning map[string]bool
}

// NewGround is the ground of prev's open entries: present is the state
// (address -> id), quarantined the objects of quarantined states no run
// has reconciled.
func NewGround(prev *receipt.Receipt, quarantined []ownership.Object, present map[string]string) *Ground {
	g := &Ground{FromRun: prev.RunID, held: prev.HeldCompletions, present: present,
		old: map[string]string{}, created: map[string]string{}, deleted: map[string]bool{},
		completed: map[string]bool{}, deleteFirst: map[string]bool{}, provisioning: map[string]bool{}}
	if g.present == nil {
		g.present = map[string]string{}
	}
	for _, e := range prev.Ledger {
		if !Open(e) && e.ID != "" {
			g.old[e.Address] = e.ID
		}
	}
	for _, q := range quarantined {
		if q.ID != "" && q.ID != g.old[q.Address] {
			g.created[q.Address] = q.ID
		}
	}
	for _, c := range prev.Completed {
		switch c.Action {
		case "delete":
			// Only its half of a replacement: not a completion a create
			// waits for.
			g.deleted[c.Address] = true
		case "provision":
			// Started, not completed.
			g.provisioning[c.Address] = true
		case "", "create":
			g.completed[c.Address] = true
			if c.ID != "" {
				g.created[c.Address] = c.ID
			}
		default:
			g.completed[c.Address] = true
		}
	}
	for _, c := range prev.Changes {
		g.deleteFirst[c.Address] = slices.Equal(c.Actions, []string{"delete", "create"})
	}
	for _, e := range prev.Ledger {
		if e.CreatedBy == receipt.CreatedByUnresolved && e.ID != "" {
			g.created[e.Address] = e.ID
		}
	}
	return g
}

// Intent reports whether e is an intent of a run that stopped.
func Intent(e receipt.Entry) bool { return e.CreatedBy == receipt.CreatedByIntent }

// Open reports whether no run has vouched for e yet: an intent, or an
// entry an earlier settlement left unresolved.
func Open(e receipt.Entry) bool { return Intent(e) || e.CreatedBy == receipt.CreatedByUnresolved }

// Known returns the id of an object at addr known to exist that the state
// may lack: recorded complete, quarantined, or given by a person.
func (g *Ground) Known(addr string) (string, bool) {
	id, ok := g.created[addr]
	return id, ok
}

// KnownAddresses are the addresses of the objects known to exist, sorted.
func (g *Ground) KnownAddresses() []string {
	out := make([]string, 0, len(g.created))
	for a := range g.created {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// Verdict is what the settlement decided for one entry.
type Verdict struct {
	Settlement receipt.Settlement
	// Adopt asks the caller to adopt the object Settlement.ID the way
	// Restore says, then to hand the outcome to Adopted. Replacing says
	// the state holds the object it replaced, whose delete completed: it
	// leaves the state first.
	Adopt     bool
	Restore   Restore
	Replacing bool
	// Unresolved, when set, is the entry as it stays in the ledger:
	// unresolved, with its id where one is known.
	Unresolved *receipt.Entry
}

// Settle decides the open entry e. An object known to exist (its id) is
// claimed when the state holds it and adopted when not (Decide: only a
// way that restores it whole); without an id, the state vouches for the
// create only if it holds a new object at the address, not the one a
// replacement was to remove. What the state does not vouch for is dropped
// when the create left nothing behind (a type that keeps nothing outside
// the state, a create that cannot have started); a type written in place
// waits for the next create there (InPlace); anything else is unresolved.
func (g *Ground) Settle(e receipt.Entry) Verdict {
	v := Verdict{Settlement: receipt.Settlement{Address: e.Address, FromRun: g.FromRun, Outcome: receipt.SettledClaimed}}
	st := &v.Settlement
	inState, present := g.present[e.Address]
	id, known := g.created[e.Address]
	old := g.old[e.Address]
	stateOnly := e.StateOnly || ownership.StateOnly(e.Provider, e.Type, nil)
	switch {
	case known && present && inState == id:
	case stateOnly && present:
		// The state is the whole of such an object: what it holds is
		// what exists.
	case known && (!present || (inState == old && g.deleted[e.Address])) && inPlace(st, e):
		// Completed, and written where its arguments say: no import
		// (local_file has none), the next create there rewrites it. The
		// state may still hold the object it replaced, whose delete
		// completed: the next plan's refresh finds it gone.
		st.ID, e.ID = id, id
		v.Unresolved = unresolved(e)
	case known:
		g.known(&v, e, id, stateOnly)
	case present && e.CreatedBy == receipt.CreatedByUnresolved:
		// Left unresolved by an earlier settlement: no run can have
		// created it since, so an object at its address was put there
		// (state mv, import) and is not the one it stands for.
		st.Outcome = receipt.SettledUnresolved
		st.Note = fmt.Sprintf("an object was put at its address after it was left unresolved (id %s); it is not known to be the one the stopped run created", inState)
		v.Unresolved = unresolved(e)
	case present && (old == "" || inState != old):
	default:
		g.unvouched(&v, e, stateOnly, present)
	}
	g.rerun(&v, e)
	return v
}

// known settles e, whose object is known to exist with id and which the
// state does not hold: adopted (by the caller) when a way restores it
// whole (Decide) and the state holds no other object at its address.
func (g *Ground) known(v *Verdict, e receipt.Entry, id string, stateOnly bool) {
	v.Settlement.ID = id
	inState, present := g.present[e.Address]
	restore := Of(e.Provider, e.Type, stateOnly)
	action, why := Decide(Known{Restore: restore, Recorded: e.Restore, StateOnly: stateOnly})
	switch {
	case action != Adopt:
		g.notAdopted(v, e, why, stateOnly)
	case present && (inState != g.old[e.Address] || !g.deleted[e.Address]):
		g.notAdopted(v, e, fmt.Sprintf("the state holds another object at its address (id %s) that may still exist", inState), stateOnly)
	default:
		v.Adopt, v.Restore, v.Replacing = true, restore, present
		v.Settlement.Outcome = receipt.SettledAdopted
	}
}

// Adopted completes v, whose adoption the caller carried out: failure says
// why it did not adopt ("" when it did). An object not adopted is dropped
// when its type keeps nothing outside the state, else unresolved.
func (g *Ground) Adopted(e receipt.Entry, v Verdict, failure string) Verdict {
	v.Adopt = false
	if failure == "" {
		g.present[e.Address] = v.Settlement.ID
		return v
	}
	g.notAdopted(&v, e, failure, e.StateOnly || ownership.StateOnly(e.Provider, e.Type, nil))
	g.rerun(&v, e)
	return v
}

// notAdopted settles e, a known object that is not adopted for why.
func (g *Ground) notAdopted(v *Verdict, e receipt.Entry, why string, stateOnly bool) {
	st := &v.Settlement
	if stateOnly {
		st.Outcome, st.Reason = receipt.SettledDropped, receipt.ReasonStateOnly
		st.Note = fmt.Sprintf("it could not be adopted whole (%s), and a %s keeps nothing outside the state: the next apply creates it again", why, e.Type)
		return
	}
	st.Outcome, st.Note = receipt.SettledUnresolved, why
	e.ID = st.ID
	v.Unresolved = unresolved(e)
}

// unvouched settles e, whose object is not known to exist and which the
// state does not vouch for (it lacks e, or holds the object e was to
// replace): dropped when the create left nothing behind (dropReason), left
// to the rewrite rule (inPlace), else unresolved.
func (g *Ground) unvouched(v *Verdict, e receipt.Entry, stateOnly, present bool) {
	st := &v.Settlement
	if reason, note := g.dropReason(e, stateOnly, present); reason != "" {
		st.Outcome, st.Reason, st.Note = receipt.SettledDropped, reason, note
		return
	}
	if (!present || g.deleted[e.Address]) && inPlace(st, e) {
		v.Unresolved = unresolved(e)
		return
	}
	st.Outcome = receipt.SettledUnresolved
	st.Note = "its create may have started before the run stopped, and no completion was recorded"
	if present {
		st.Note = fmt.Sprintf("the state still holds the object it replaces (id %s); the replacement may have been created", g.old[e.Address])
	}
	v.Unresolved = unresolved(e)
}

// dropReason says why the create of e, which the state does not hold and
// no completion names, left no object, or "" when it may have: e's type
// keeps nothing outside the state; or the engine had not started it,
// because a create or update it waits for had not completed (e.After, read
// from the plan's configuration by applyorder), or because it replaces an
// object whose delete had not completed (a delete-then-create replacement,
// present: the state still holds that object). The engine starts a change
// only once what it waits for has completed, and reports each completion
// before it goes on; the checkpoint records every reported completion, so
// a completion it lacks had not happened, but for the last write's worth
// before a kill (docs/design.md §2.4).
func (g *Ground) dropReason(e receipt.Entry, stateOnly, present bool) (reason, note string) {
	if stateOnly {
		return receipt.ReasonStateOnly, fmt.Sprintf("a %s keeps nothing outside the state, and the state lacks it: the next apply creates it again", e.Type)
	}
	if !Intent(e) || !g.held {
		// An entry an earlier settlement left unresolved: the run that
		// planned it is no longer the one whose completions are known. Or
		// a run that could not pause its engine for its completions: one
		// may have been on its way to the store while the engine went on.
		return "", ""
	}
	for _, w := range e.After {
		if !g.completed[w] && !g.newInState(w) {
			return receipt.ReasonNotStarted, fmt.Sprintf("it waits for %s, which had not completed when run %s stopped, so its create had not started", w, g.FromRun)
		}
	}
	if present && g.deleteFirst[e.Address] && !g.deleted[e.Address] {
		return receipt.ReasonReplaceFirst, fmt.Sprintf("it replaces an object whose delete had not completed when run %s stopped, so its create had not started", g.FromRun)
	}
	return "", ""
}

// rerun says, on a dropped create, what the next apply runs again.
func (g *Ground) rerun(v *Verdict, e receipt.Entry) {
	st := &v.Settlement
	if st.Outcome != receipt.SettledDropped {
		return
	}
	st.Rerun = Rerun(e.Address, e.Provisioned, g.provisioning[e.Address],
		st.Reason == receipt.ReasonNotStarted || st.Reason == receipt.ReasonReplaceFirst)
}

// newInState reports whether the state holds a new object at addr: one
// the scope did not own before, so its create completed.
func (g *Ground) newInState(addr string) bool {
	id, ok := g.present[addr]
	return ok && id != g.old[addr]
}

// inPlace settles e, whose create may have made an object the state
// lacks, by the rewrite rule when its type writes its object where its
// arguments say (ownership.InPlace: local_file's filename) and the plan
// knew them: it stays unresolved, with ReasonInPlace, until a create of it
// at the same place, which writes that object again instead of a second
// one, completes (the check phase lets that create through, the record
// phase settles it as rewritten). It reports whether the rule applies.
func inPlace(st *receipt.Settlement, e receipt.Entry) bool {
	keys := ownership.InPlace(e.Provider, e.Type)
	if len(keys) == 0 || !ownership.SamePlace(e.Provider, e.Type, e.Planned, e.Planned) {
		return false
	}
	place := make([]string, len(keys))
	for i, k := range keys {
		place[i] = fmt.Sprintf("%s=%q", k, e.Planned[k])
	}
	st.Outcome, st.Reason = receipt.SettledUnresolved, receipt.ReasonInPlace
	st.Note = fmt.Sprintf("its create may have happened; a %s is written where its arguments say (%s), so the next apply that creates it there writes that object again, not a second one, and settles it",
		e.Type, strings.Join(place, ", "))
	return true
}

func unresolved(e receipt.Entry) *receipt.Entry {
	e.CreatedBy = receipt.CreatedByUnresolved
	return &e
}
