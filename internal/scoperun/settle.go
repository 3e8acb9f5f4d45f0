package scoperun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/settle"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// settle is the fifth phase, in a run that writes: what an earlier run left
// unfinished is accounted for against the state before the plan. It comes
// after serve because adopting an object goes through the engine (an
// import under this run's lease, every state write fenced), and because a
// configuration with its own backend has its state read through the engine.
//
// When it settled anything, the receipt it wrote is the one the later
// phases carry forward instead of prev (settled.prev).
func (r *runner) settle(ctx context.Context, eng *engineRun, prev *receipt.Receipt) (*settled, error) {
	st := &settled{prev: prev}
	if r.o.Command == Plan || prev == nil {
		return st, nil
	}
	open := openEntries(prev)
	quarantined, reconciled := r.unreconciledQuarantine(ctx, prev)
	st.reconciled = reconciled
	if len(open) == 0 && len(quarantined) == 0 {
		return st, nil
	}
	resources, err := r.currentState(ctx, eng)
	if err != nil {
		return nil, errcode.Wrap(errcode.IntentUnresolved, err, "run %s left %d intents that cannot be settled", prev.RunID, len(open))
	}
	present := map[string]string{}
	for _, res := range resources {
		present[res.Address] = res.ID
	}
	s := newSettlement(r, ctx, eng, prev, quarantined, present)
	for _, e := range open {
		s.settleOne(e)
	}
	// A quarantined object with no intent behind it (an update the lost run
	// made, say) is adopted too if the state lacks it.
	for _, addr := range s.g.KnownAddresses() {
		if _, ok := present[addr]; !ok && !s.seen[addr] {
			s.settleOne(receipt.Entry{Address: addr, CreatedBy: receipt.CreatedByIntent})
		}
	}
	st.unresolved = s.unresolved
	r.warn(s.report())
	for _, o := range s.out {
		if o.Rerun != "" {
			r.warn(o.Rerun)
		}
	}
	// The settlement is written at once: an adoption changed the state, and
	// what stays unresolved must be visible (status, receipt) even when
	// this run goes no further.
	objects := map[string]stateResource{}
	for _, res := range resources {
		objects[res.Address] = res
	}
	settledRec := r.settledReceipt(prev, s.out, s.present, objects, st)
	if err := r.held.WriteReceipt(ctx, settledRec); err != nil {
		return nil, err
	}
	st.prev, st.out = settledRec, s.out
	return st, nil
}

// settled is what settle produced: the receipt the later phases carry
// forward, what it settled, the entries it could not vouch for, and the
// quarantined runs it reconciled, which every later receipt of the run
// records.
type settled struct {
	// prev is the scope's receipt as the run carries it forward: the one
	// settle wrote, else load's (reindex may write it again).
	prev *receipt.Receipt
	// out is what settle settled, nil when it settled nothing.
	out []receipt.Settlement
	// unresolved are the ledger entries settle could not vouch for.
	unresolved []receipt.Entry
	// reconciled are the runs whose quarantined states are reconciled.
	reconciled []string
}

// settledReceipt is prev's ledger as the settlement leaves it, recorded
// under this run: entries claimed or adopted are owned, the others (st's
// unresolved) are unresolved.
func (r *runner) settledReceipt(prev *receipt.Receipt, settled []receipt.Settlement, present map[string]string, objects map[string]stateResource, st *settled) *receipt.Receipt {
	rec := receipt.Next(prev, receipt.Run{RunID: r.o.RunID, Command: string(r.o.Command), Status: receipt.StatusSettled,
		Actor: r.o.Job.Actor, JobURL: r.o.Job.URL, StartedAt: r.started.UTC(), FinishedAt: time.Now().UTC()})
	rec.Settled, rec.Reconciled = settled, st.reconciled
	// What the crashed run's checkpoint knew stays only where it is still
	// needed: for the entries that remain unresolved.
	rec.Completed = nil
	unresolved := map[string]bool{}
	for _, st := range settled {
		unresolved[st.Address] = st.Outcome == receipt.SettledUnresolved
	}
	for _, c := range prev.Completed {
		if unresolved[c.Address] {
			rec.Completed = append(rec.Completed, c)
		}
	}
	if p := r.held.Preempted; p != nil {
		rec.LockPreempted = &receipt.Preempted{Holder: p.Holder, Since: p.AcquiredAt, Until: p.ExpiresAt}
	}
	outcome := map[string]receipt.Settlement{}
	for _, st := range settled {
		outcome[st.Address] = st
	}
	rec.Ledger = []receipt.Entry{}
	for _, e := range prev.Ledger {
		st, ok := outcome[e.Address]
		if !ok || !isOpen(e) {
			rec.Ledger = append(rec.Ledger, e)
			continue
		}
		switch st.Outcome {
		case receipt.SettledDropped:
			// No object: the scope does not own it, the next apply
			// creates it.
			delete(outcome, e.Address)
			continue
		case receipt.SettledUnresolved:
			e.CreatedBy = receipt.CreatedByUnresolved
			if st.ID != "" {
				e.ID = st.ID
			}
		case receipt.SettledAdopted:
			// Adopted back: the scope's own run created it.
			e.CreatedBy, e.ID = receipt.CreatedBySponson, st.ID
		default:
			e.CreatedBy, e.ID = receipt.CreatedBySponson, present[e.Address]
			if o, ok := objects[e.Address]; ok && e.Identity == ownership.IntentIdentity(e.Provider, e.Type, e.Address) {
				// Unknown at plan time, known from the state now; the run's
				// record phase identifies it under the policy again.
				e.Identity = r.o.Declared.Policy().IdentityOf(o)
			}
		}
		rec.Ledger = append(rec.Ledger, e)
		delete(outcome, e.Address)
	}
	rec.Ledger = withoutReplaced(rec.Ledger, present)
	for _, u := range st.unresolved {
		if _, ok := outcome[u.Address]; ok {
			rec.Ledger = append(rec.Ledger, u)
		}
	}
	return rec
}

// openEntries are the ledger entries of prev that no run has settled yet:
// intents of a run that stopped before its receipt, and unresolved ones.
func openEntries(prev *receipt.Receipt) []receipt.Entry {
	var out []receipt.Entry
	for _, e := range prev.Ledger {
		if isIntent(e) || e.CreatedBy == receipt.CreatedByUnresolved {
			out = append(out, e)
		}
	}
	return out
}

// settlement carries out the settlement of the open entries of one
// previous receipt: the decisions are settle.Ground's, against the state
// (present: address -> id) and what is known of objects the state lacks
// (completed creates and deletes the checkpoint recorded, ids a person
// gave with `sponson resolve`, the objects of quarantined states); the
// adoptions it asks for go through the engine here.
type settlement struct {
	r          *runner
	ctx        context.Context
	eng        *engineRun
	prev       *receipt.Receipt
	g          *settle.Ground
	present    map[string]string
	out        []receipt.Settlement
	unresolved []receipt.Entry
	seen       map[string]bool
}

func newSettlement(r *runner, ctx context.Context, eng *engineRun, prev *receipt.Receipt, quarantined []stateResource, present map[string]string) *settlement {
	return &settlement{r: r, ctx: ctx, eng: eng, prev: prev, present: present, seen: map[string]bool{},
		g: settle.NewGround(prev, quarantined, present)}
}

// settleOne settles one entry as settle.Ground decides, adopting what it
// asks to be adopted.
func (s *settlement) settleOne(e receipt.Entry) {
	s.seen[e.Address] = true
	v := s.g.Settle(e)
	if v.Adopt {
		v = s.g.Adopted(e, v, s.adopt(e, v.Settlement.ID, v.Restore, v.Replacing))
	}
	if v.Unresolved != nil {
		s.unresolved = append(s.unresolved, *v.Unresolved)
	}
	s.out = append(s.out, v.Settlement)
}

// adopt imports the object id at e's address the way restore says, after
// checking that no other scope of the environment owns its identity;
// replacing says the state holds the replaced object there, whose delete
// completed: it leaves the state first. An import that cannot read back
// every argument (settle.ImportPlanned) is completed from the plan's
// values (restoreWhole). Once imported, the object is checked under every
// identity it has (ownership.ForeignOwners), and an object another scope
// owns leaves the state again. It returns why it did not adopt.
func (s *settlement) adopt(e receipt.Entry, id string, restore settle.Restore, replacing bool) string {
	r := s.r
	if e.Identity != "" {
		owners, err := r.o.Store.Owners(s.ctx, r.key.Environment, []string{e.Identity})
		if err != nil {
			return fmt.Sprintf("its owners could not be read: %v", err)
		}
		for _, o := range owners {
			if o.Scope != r.key.Scope || o.Stack != r.key.Stack {
				return fmt.Sprintf("scope %s of stack %s owns its identity", o.Scope, o.Stack)
			}
		}
	}
	if replacing {
		if err := s.eng.sess.StateRm(s.eng.ctx, e.Address); err != nil {
			return fmt.Sprintf("removing the replaced object from the state failed: %s", firstLine(errcode.As(err).Error()))
		}
	}
	if restore.Way == settle.Write {
		if why := s.writeWhole(e, id, restore); why != "" {
			return why
		}
		return s.refuseForeignImport(e.Address)
	}
	importID, ok := restore.ImportID(id, e.Restore)
	if !ok {
		return fmt.Sprintf("its import id cannot be made from id %s and what the plan knew", id)
	}
	if err := s.eng.sess.Import(s.eng.ctx, e.Address, importID, r.o.Vars); err != nil {
		if lost := r.held.Err(); lost != nil {
			return "the lease was lost during its import"
		}
		return fmt.Sprintf("importing it by id %s failed: %s", importID, firstLine(errcode.As(err).Error()))
	}
	if restore.Way == settle.ImportPlanned {
		if why := s.restoreWhole(e, restore); why != "" {
			return s.dropImport(e.Address, why)
		}
	}
	return s.refuseForeignImport(e.Address)
}

// restoreWhole writes the arguments the import of e could not read back
// over the imported object, from the plan's values its intent recorded,
// and derives what follows from them (settle.Restore.Overlay): the object
// the engine's create would have written, so the next plan shows no change
// for it and its destroy (destroy-time provisioners reading self) works.
// It returns why it could not.
func (s *settlement) restoreWhole(e receipt.Entry, restore settle.Restore) string {
	return s.editState(e.Address, func(doc tfstate.Doc, addr tfstate.Addr) string {
		found := false
		for _, inst := range doc.Instances() {
			if !tfstate.Matches(addr, inst.Addr) {
				continue
			}
			attrs, _ := inst.Instance["attributes"].(map[string]any)
			inst.Instance["attributes"] = restore.Overlay(attrs, e.Restore)
			found = true
		}
		if !found {
			return "the import left no object at its address"
		}
		return ""
	})
}

// writeWhole writes the object of e, of a type without an import whose
// id and planned values are the whole object (settle.Write), into the
// state as the engine's create would have. It returns why it could not.
func (s *settlement) writeWhole(e receipt.Entry, id string, restore settle.Restore) string {
	return s.editState(e.Address, func(doc tfstate.Doc, addr tfstate.Addr) string {
		attrs := restore.Overlay(map[string]any{"id": id}, e.Restore)
		if err := doc.Put(addr, e.Provider, restore.Schema, attrs); err != nil {
			return fmt.Sprintf("writing it into the state failed: %v", err)
		}
		return ""
	})
}

// editState changes the state at addr with edit, through the engine
// (state pull, then state push with the next serial), as any state the
// engine keeps: its backend, locking and encryption, fenced by the lease
// where the store serves it. It returns why it could not.
func (s *settlement) editState(address string, edit func(tfstate.Doc, tfstate.Addr) string) string {
	addr, err := tfstate.ParseAddr(address)
	if err != nil {
		return fmt.Sprintf("its address cannot be read: %v", err)
	}
	data, err := s.eng.sess.StatePull(s.eng.ctx)
	if err != nil {
		return fmt.Sprintf("reading the state failed: %s", firstLine(errcode.As(err).Error()))
	}
	doc, err := tfstate.ParseExact(data)
	if err != nil {
		return fmt.Sprintf("reading the state failed: %v", err)
	}
	if why := edit(doc, addr); why != "" {
		return why
	}
	out, err := doc.Marshal()
	if err != nil {
		return fmt.Sprintf("writing the restored object failed: %v", err)
	}
	if err := s.eng.sess.StatePush(s.eng.ctx, out); err != nil {
		if lost := s.r.held.Err(); lost != nil {
			return "the lease was lost while its object was restored"
		}
		return fmt.Sprintf("writing the restored object failed: %s", firstLine(errcode.As(err).Error()))
	}
	return ""
}

// refuseForeignImport checks the object just imported at addr against the
// other scopes of the environment, and takes it out of the state again
// when one of them owns it: why, or "" when it is the scope's.
func (s *settlement) refuseForeignImport(addr string) string {
	r := s.r
	resources, err := r.currentState(s.ctx, s.eng)
	if err != nil {
		return s.dropImport(addr, fmt.Sprintf("the state could not be read to check its owners: %v", err))
	}
	var objects []ownership.Object
	for _, res := range resources {
		if res.Address == addr {
			objects = append(objects, res)
		}
	}
	foreign, err := ownership.ForeignOwners(s.ctx, r.o.Store, r.key, r.o.Declared.Policy(), objects)
	if err != nil {
		return s.dropImport(addr, fmt.Sprintf("its owners could not be read: %v", err))
	}
	if len(foreign[addr]) == 0 {
		return ""
	}
	o := foreign[addr][0]
	return s.dropImport(addr, fmt.Sprintf("%s: scope %s of stack %s owns that object as %s (run %s), so it was not adopted; give the id of this scope's own object, or --gone",
		errcode.OwnedByOtherScope, o.Scope, o.Stack, o.Address, o.RunID))
}

// dropImport takes the object just imported at addr out of the state
// again, and returns why, with what went wrong doing so.
func (s *settlement) dropImport(addr, why string) string {
	if err := s.eng.sess.StateRm(s.eng.ctx, addr); err != nil {
		return why + fmt.Sprintf("; removing it from the state again failed: %s", firstLine(errcode.As(err).Error()))
	}
	return why
}

func (s *settlement) report() string {
	described := map[string]string{}
	for _, e := range s.unresolved {
		described[e.Address] = e.Described()
	}
	by := map[string][]string{}
	for _, st := range s.out {
		a := st.Address
		if d, ok := described[a]; ok && st.Outcome == receipt.SettledUnresolved {
			a = d
		}
		outcome := st.Outcome
		if st.Reason == receipt.ReasonInPlace {
			outcome = inPlaceOutcome
		}
		by[outcome] = append(by[outcome], a)
	}
	msg := fmt.Sprintf("run %s stopped before its receipt (status %s); settled %d entries against the state: claimed %s; adopted %s; not created %s; unresolved %s",
		s.prev.RunID, s.prev.Status, len(s.out), listOrNone(by[receipt.SettledClaimed]), listOrNone(by[receipt.SettledAdopted]),
		listOrNone(by[receipt.SettledDropped]), listOrNone(by[receipt.SettledUnresolved]))
	if len(by[inPlaceOutcome]) > 0 {
		msg += "; created again in place by the next create at the same place " + listOrNone(by[inPlaceOutcome])
	}
	if len(by[receipt.SettledUnresolved]) > 0 {
		msg += "; an unresolved object may exist: find out, then run `sponson resolve ADDRESS --id ID` (it is adopted by the next apply) or `sponson resolve ADDRESS --gone`"
	}
	return msg
}

// inPlaceOutcome groups, in the report, the unresolved entries the next
// create at the same place settles.
const inPlaceOutcome = "in-place"

func listOrNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// unreconciledQuarantine returns the objects of the quarantined states that
// no run has reconciled yet, and the ids of every quarantined run, which
// this run's receipt records as reconciled: their objects are adopted now
// or kept as unresolved entries, so their warning never repeats.
func (r *runner) unreconciledQuarantine(ctx context.Context, prev *receipt.Receipt) ([]stateResource, []string) {
	qs, err := r.o.Store.ListQuarantine(ctx, r.key)
	if err != nil || len(qs) == 0 {
		return nil, prev.Reconciled
	}
	reconciled := slices.Clone(prev.Reconciled)
	var out []stateResource
	for _, q := range qs {
		if slices.Contains(reconciled, q.RunID) {
			continue
		}
		res, err := readState(q.State)
		if err != nil {
			r.warn(fmt.Sprintf("the quarantined state of run %s cannot be read (%v); inspect it by hand", q.RunID, err))
			continue
		}
		out = append(out, res...)
		reconciled = append(reconciled, q.RunID)
	}
	return out, reconciled
}

// withoutReplaced drops the entries of objects the state no longer holds
// at an address it holds another object at (a replacement that completed),
// and duplicates: one address, one object, besides unresolved claims.
func withoutReplaced(ledger []receipt.Entry, present map[string]string) []receipt.Entry {
	out := ledger[:0]
	seen := map[string]bool{}
	for _, e := range ledger {
		key := e.Address + "\x00" + e.ID + "\x00" + e.CreatedBy
		id, held := present[e.Address]
		if (held && e.ID != "" && e.ID != id && e.CreatedBy != receipt.CreatedByUnresolved) || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}
