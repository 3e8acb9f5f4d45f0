package gitstore

import (
	"sync"
	"time"
)

// Hooks for the external tests of this package.

// DisableNonce makes s write commits without a nonce, to show what the nonce
// prevents.
func DisableNonce(s *Store) { s.noNonce = true }

// Spawned returns how many git processes s started, by subcommand.
func Spawned(s *Store) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.spawned))
	for k, v := range s.spawned {
		out[k] = v
	}
	return out
}

// Forget drops what s remembers of every scope's tip.
func Forget(s *Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ks := range s.keys {
		ks.mu.Lock()
		ks.snap = nil
		ks.mu.Unlock()
	}
}

// StepBudgetClock makes s measure its retry budget on a clock that moves by
// step every time it is read, so a test decides how many attempts fit in
// the budget, whatever the machine's speed.
func StepBudgetClock(s *Store, step time.Duration) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.budgetClock = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}
