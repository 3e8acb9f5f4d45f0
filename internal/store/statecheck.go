package store

// StateChecker is a store that can tell before a run starts whether it will
// accept the scope's state. A store that encrypts state refuses to write it
// without its key; found only when the engine's state write is refused,
// that is a run whose objects exist with no state to record them (the
// engine leaves them in errored.tfstate, the next run creates them again).
// Asked first, the run is refused before the engine writes anything.
type StateChecker interface {
	// CheckState returns the error a state write of key would give for
	// want of configuration (no key, no plaintext opt-in), nil if none.
	CheckState(key Key) error
}
