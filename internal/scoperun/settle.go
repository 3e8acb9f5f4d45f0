package scoperun

import (
	"context"
	"fmt"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// settle is the fifth phase, in a run that writes: what an earlier run left
// unfinished is accounted for against the state before the plan. It comes
// after serve because a configuration with its own backend has its state
// read through the engine.
func (r *runner) settle(ctx context.Context, prev *receipt.Receipt) ([]receipt.Settlement, error) {
	if r.o.Command == Plan {
		return nil, nil
	}
	settled, err := r.settleIntents(ctx, prev)
	if err != nil {
		return nil, err
	}
	r.reviewQuarantine(ctx)
	return settled, nil
}

// settleIntents resolves the intents a previous run left behind (it crashed or was
// killed between its checkpoint and its receipt): an intent whose address
// is in the state is claimed, the others are dropped. The new ledger is
// built from the state anyway; the settlement is recorded and reported so
// that nothing created is silently forgotten.
func (r *runner) settleIntents(ctx context.Context, prev *receipt.Receipt) ([]receipt.Settlement, error) {
	if prev == nil {
		return nil, nil
	}
	var intents []receipt.Entry
	for _, e := range prev.Ledger {
		if isIntent(e) {
			intents = append(intents, e)
		}
	}
	if len(intents) == 0 {
		return nil, nil
	}
	resources, err := r.currentState(ctx)
	if err != nil {
		return nil, errcode.Wrap(errcode.IntentUnresolved, err, "run %s left %d intents that cannot be settled", prev.RunID, len(intents))
	}
	present := map[string]bool{}
	for _, res := range resources {
		present[res.Address] = true
	}
	var out []receipt.Settlement
	var claimed, dropped []string
	for _, e := range intents {
		s := receipt.Settlement{Address: e.Address, FromRun: prev.RunID, Outcome: receipt.SettledDropped}
		if present[e.Address] {
			s.Outcome = receipt.SettledClaimed
			claimed = append(claimed, e.Address)
		} else {
			dropped = append(dropped, e.Address)
		}
		out = append(out, s)
	}
	r.warn(fmt.Sprintf("run %s stopped before its receipt (status %s); settled its %d intents against the state: claimed %s; dropped %s",
		prev.RunID, prev.Status, len(intents), listOrNone(claimed), listOrNone(dropped)))
	return out, nil
}

func listOrNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

// reviewQuarantine reports quarantined states that hold resources the
// current state lacks: objects that may exist without being managed.
func (r *runner) reviewQuarantine(ctx context.Context) {
	qs, err := r.o.Store.ListQuarantine(ctx, r.key)
	if err != nil || len(qs) == 0 {
		return
	}
	current, err := r.currentState(ctx)
	if err != nil {
		return
	}
	have := map[string]bool{}
	for _, c := range current {
		have[c.Address+"|"+c.ID] = true
	}
	for _, q := range qs {
		res, err := readState(q.State)
		if err != nil {
			continue
		}
		var missing []string
		for _, x := range res {
			if !have[x.Address+"|"+x.ID] {
				missing = append(missing, x.Address)
			}
		}
		if len(missing) > 0 {
			r.warn(fmt.Sprintf("the quarantined state of run %s holds %d resources the current state lacks (%s): they may exist unmanaged; import them or delete them by hand, then remove the quarantined state", q.RunID, len(missing), strings.Join(missing, ", ")))
		}
	}
}
