package scoperun

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

// The state server hands the wrapper every state the engine writes, so the
// ledger is read from those bytes (ownership.StateObjects, which reads them
// with internal/tfstate) instead of starting the engine again for
// `show -json`.

// stateResource is one managed resource instance of a state.
type stateResource = ownership.Object

// currentState reads the scope's state: from the store, where the state
// server put it, or, when the configuration keeps its own backend, through
// the engine.
func (r *runner) currentState(ctx context.Context, eng *engineRun) ([]stateResource, error) {
	var data []byte
	var err error
	if eng.ownBackend {
		data, err = eng.sess.StatePull(ctx)
	} else {
		data, err = r.o.Store.ReadState(ctx, r.key)
	}
	if err != nil {
		return nil, err
	}
	return readState(data)
}

// readState lists the managed resource instances of a raw state, sorted by
// address. An empty or absent state has none.
func readState(data []byte) ([]stateResource, error) { return ownership.StateObjects(data) }

// StateHolds reports whether a state has resources or outputs: what
// sponson_outputs takes for a state (an empty one is a scope never applied
// or destroyed, which it falls back from).
func StateHolds(state []byte) bool {
	st, err := tfstate.ReadOutputs(state)
	return err == nil && st.Holds
}

// stateEmpty reports whether a scope's state holds no managed resources. A
// state that cannot be read is not known to be empty: the destroy goes
// ahead, and the engine reads the state and reports what is wrong with it.
func stateEmpty(state []byte) bool {
	res, err := readState(state)
	return err == nil && len(res) == 0
}
