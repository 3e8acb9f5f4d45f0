package stackmove

import (
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// Action is what a move of one scope has left to do.
type Action int

// What a move does.
const (
	Nothing Action = iota // the old stack's scope owns nothing: no move
	Start                 // promise, copy, claim, retire
	Resume                // promised already: copy, claim and retire again
	Done                  // moved already: nothing left to do
)

// String names the action for people.
func (a Action) String() string {
	return [...]string{"nothing", "start", "resume", "done"}[a]
}

// Decide says what a move of a scope to stack to must do, given the old
// stack's scope and the new one's as read under their leases. It refuses a
// move to a scope that has resources of its own (the two stacks' states
// cannot be merged), one the old scope promised to a third stack, and one
// whose old scope is in a succession (docs/design.md §2.9) that has not
// finished.
func Decide(to string, old, cur Side) (Action, error) {
	o := old.Latest
	if o != nil && o.MovedTo != "" && o.MovedTo != to {
		return Nothing, errcode.New(errcode.Usage, "the scope %s of stack %s was moved to stack %s, not %s", o.Scope, o.Stack, o.MovedTo, to).
			WithHint(fmt.Sprintf("Its resources are stack %s's now: keep that stack's name (declare stack = %q in the new directory's sponson_scope).", o.MovedTo, o.MovedTo))
	}
	if o != nil && o.MovedTo == to {
		if len(o.Ledger) == 0 && old.Resources == 0 {
			return Done, nil
		}
		return Resume, nil
	}
	if (o == nil || len(o.Ledger) == 0) && old.Resources == 0 {
		if c := cur.Latest; c != nil && c.MovedFrom != "" && old.Latest != nil && c.MovedFrom == old.Latest.Stack {
			return Done, nil
		}
		return Nothing, nil
	}
	if err := refuseStart(to, old, cur); err != nil {
		return Nothing, err
	}
	return Start, nil
}

// refuseStart refuses a move that has not begun and cannot: an old scope
// with resources and no receipt, one in a succession, or a new scope with
// resources of its own.
func refuseStart(to string, old, cur Side) error {
	o := old.Latest
	if o == nil {
		return errcode.New(errcode.ReceiptCorrupt, "the state of the old stack's scope holds %d resources and it has no receipt: nothing says what it owns", old.Resources).
			WithHint("Run `sponson status` on the old stack from a checkout that still has its directory, and settle its state before moving it.")
	}
	if o.Handover != nil || o.Inheriting != "" {
		return errcode.New(errcode.Usage, "the scope %s of stack %s is in a handover between scopes (docs/design.md §2.9) that has not finished: it is moved once that is done", o.Scope, o.Stack).
			WithHint("Finish the handover first: apply the successor scope from a checkout that still has the old directory, then run again.")
	}
	if c := cur.Latest; cur.Resources > 0 || (c != nil && len(c.Ledger) > 0) {
		n := cur.Resources
		if c != nil {
			n = max(n, len(c.Ledger))
		}
		return errcode.New(errcode.Usage, "cannot move the scope %s of stack %s to stack %s: that stack's scope already holds %d resources of its own, and two stacks' states are not merged", o.Scope, o.Stack, to, n).
			WithHint(fmt.Sprintf("Keep the old name instead (declare stack = %q in the new directory's sponson_scope), or destroy what the new stack's scope holds (`sponson destroy --scope %s` there) and run again.", o.Stack, o.Scope))
	}
	return nil
}

// Renamed is the old stack's state as the new stack keeps it: the stack of
// its sponson_scope renamed from from to to (a stack attribute that differs
// would replace the resource), the same lineage, and a serial past both
// the old state's and cur's, the new scope's state before the move.
func Renamed(state []byte, from, to string, cur []byte) ([]byte, error) {
	d, err := tfstate.ParseExact(state)
	if err != nil {
		return nil, err
	}
	c, err := tfstate.ReadMeta(cur)
	if err != nil {
		return nil, err
	}
	if serial, _ := d["serial"].(float64); float64(c.Serial) > serial {
		d["serial"] = float64(c.Serial)
	}
	resources, _ := d["resources"].([]any)
	for _, r := range resources {
		res, _ := r.(map[string]any)
		if res["mode"] != "managed" || res["type"] != "sponson_scope" {
			continue
		}
		instances, _ := res["instances"].([]any)
		for _, i := range instances {
			attrs, _ := i.(map[string]any)["attributes"].(map[string]any)
			if attrs != nil && attrs["stack"] == from {
				attrs["stack"] = to
			}
		}
	}
	return d.Marshal()
}
