package scoperun

import (
	"encoding/json"
	"fmt"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/applyorder"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/settle"
)

// intents are the checkpoint's intents for the creates of the plan, each
// with what a later run needs to settle it without a person if this run
// stops (docs/design.md §2.4): the creates and updates the engine completes
// before it starts it, whether its type keeps nothing outside the state
// (the table or the scope's policy), the planned values a person can look
// it up by, what the settlement restores it whole from (settle.Record),
// and whether its block has provisioners.
func intents(plan *tfjson.Plan, planned []ownership.Planned, rules ownership.Rules) []receipt.Entry {
	out := ownership.Intents(planned)
	waits, provisioned := applyorder.Waits(plan), applyorder.Provisioned(plan)
	changes := map[string]*tfjson.ResourceChange{}
	if plan != nil {
		for _, rc := range plan.ResourceChanges {
			if rc.DeposedKey == "" {
				changes[rc.Address] = rc
			}
		}
	}
	for i := range out {
		out[i].After = waits[out[i].Address]
		out[i].StateOnly = ownership.StateOnly(out[i].Provider, out[i].Type, rules.StateOnly)
		out[i].Provisioned = provisioned[out[i].Address]
		if rc := changes[out[i].Address]; rc != nil && rc.Change != nil {
			out[i].Planned = plannedValues(rc.Change)
			out[i].Restore = settle.Record(out[i].Provider, out[i].Type, rc.Change)
		}
	}
	return out
}

// maxPlannedValue caps one planned value as the receipt keeps it.
const maxPlannedValue = 200

// plannedValues are the top-level attributes of a planned change that are
// known and not sensitive, as text: strings as they are, other scalars as
// JSON. Lists and objects are left out (they are rarely what a person
// searches for, and they may be large).
func plannedValues(ch *tfjson.Change) map[string]string {
	after, _ := ch.After.(map[string]any)
	unknown, _ := ch.AfterUnknown.(map[string]any)
	sensitive, _ := ch.AfterSensitive.(map[string]any)
	if sens, ok := ch.AfterSensitive.(bool); ok && sens {
		return nil
	}
	out := map[string]string{}
	for k, v := range after {
		if u, ok := unknown[k].(bool); ok && u {
			continue
		}
		if _, ok := sensitive[k]; ok {
			// Sensitive, or holding a sensitive part.
			continue
		}
		var text string
		switch v := v.(type) {
		case nil:
			continue
		case string:
			text = v
		case bool, float64, json.Number:
			text = fmt.Sprint(v)
		default:
			continue
		}
		if len(text) > maxPlannedValue {
			text = text[:maxPlannedValue] + "…"
		}
		out[k] = text
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
