package store

import (
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store/statecrypt"
)

// SealedOptions are the constructors of the options a store that seals
// states and retries takes from the environment (git, S3, GCS, Azure).
type SealedOptions[O any] struct {
	StateKey       func([]byte) O
	Budget         func(time.Duration) O
	PlaintextState func() O
}

// OptionsFromEnv returns the options the environment sets for such a store:
// the state key (SPONSON_STATE_KEY, or SPONSON_STATE_KEY_<ENV>) and the
// plaintext opt-in (SPONSON_STATE_PLAINTEXT), read by statecrypt.FromEnv
// with keyHint, the store's words for where a key comes from; and the retry
// budget (SPONSON_STORE_BUDGET, BudgetFromEnv). A malformed value is a
// USAGE error, never a silent default; a key is never repeated in an error.
// It is every such store's FromEnv, written once.
func OptionsFromEnv[O any](getenv func(string) string, keyHint string, o SealedOptions[O]) ([]O, error) {
	crypt, err := statecrypt.FromEnv(getenv, keyHint)
	if err != nil {
		return nil, err
	}
	budget, err := BudgetFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	opts := []O{o.StateKey(crypt.Key), o.Budget(budget)}
	if crypt.Plaintext {
		opts = append(opts, o.PlaintextState())
	}
	return opts, nil
}
