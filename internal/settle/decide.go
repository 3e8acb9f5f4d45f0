package settle

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Action is what the settlement does with an object the engine reported
// complete that the state lacks.
type Action string

// The actions.
const (
	// Adopt: import it (Restore.Way says how it is made whole).
	Adopt Action = "adopt"
	// Drop: settle it as not created; its type keeps nothing outside the
	// state, so the next apply creates it again and nothing is left.
	Drop Action = "drop"
	// Ask: a person decides (`sponson resolve`), shown what the plan knew.
	Ask Action = "ask"
)

// Known is what the settlement knows of an object the engine reported
// complete, with an id, that the state lacks.
type Known struct {
	Restore Restore
	// Recorded are the planned values its intent recorded (Record).
	Recorded map[string]json.RawMessage
	// StateOnly: its type keeps nothing outside the state.
	StateOnly bool
}

// Decide says what to do with k, and why when it is not adopted. Never an
// import the type cannot restore: an object is adopted only by a way that
// makes it whole (an import the provider reads back whole, or an import
// with every argument the import cannot read back known from the plan).
// Otherwise a state-only object is settled as not created, and any other
// is a person's decision.
func Decide(k Known) (Action, string) {
	var why string
	switch k.Restore.Way {
	case ImportRead:
		return Adopt, ""
	case ImportPlanned, Write:
		missing := k.Restore.Missing(k.Recorded)
		if len(missing) == 0 {
			return Adopt, ""
		}
		why = fmt.Sprintf("the plan did not know %s (unknown or sensitive), which only its create could have written", strings.Join(missing, ", "))
	case InPlace:
		why = "it has no import, and the plan did not know where it is written"
	default:
		why = "no import restores it whole: what its create made is only in the state the engine did not write"
	}
	if k.StateOnly {
		return Drop, why
	}
	return Ask, why
}

// Rerun is what a settlement that leaves a create to the next apply runs
// again of the first create: the resource's create-time provisioners, when
// its block has provisioners and the create may have started (it is not
// known to have been left unstarted). started says the engine reported
// them started (the run's journal); else they may have started. The text
// is for people, "" when nothing runs again.
func Rerun(address string, provisioned, started, notStarted bool) string {
	switch {
	case !provisioned || notStarted:
		return ""
	case started:
		return fmt.Sprintf("%s is created again and its provisioners run again: they had started in the stopped run, and what that first run of them made is not tracked by the engine (remove it by hand if it must not stay)", address)
	default:
		return fmt.Sprintf("%s is created again and its provisioners run again: they may have started in the stopped run, and what a first run of them made is not tracked by the engine (remove it by hand if it must not stay)", address)
	}
}
