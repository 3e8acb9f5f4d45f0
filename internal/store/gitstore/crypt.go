package gitstore

import (
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/statecrypt"
)

// Environment variables FromEnv reads.
const (
	// EnvStateKey holds the 32-byte state key, as 64 hex digits or as
	// base64 (standard or URL alphabet, padded or not).
	EnvStateKey = statecrypt.EnvStateKey
	// EnvStatePlaintext set to 1 or true lets the store write state without
	// a key. Unsafe: anyone who can read the repository reads the state and
	// every secret in it.
	EnvStatePlaintext = statecrypt.EnvStatePlaintext
	// EnvBudget is how long a contended or briefly unavailable remote is
	// retried: a Go duration ("90s", "2m") or a number of seconds.
	EnvBudget = store.EnvBudget
)

// KeySize is the length of the state key: AES-256.
const KeySize = statecrypt.KeySize

// sealedMagic starts every encrypted document (statecrypt.Magic).
const sealedMagic = statecrypt.Magic

// keyHint is what to do when the key is missing or wrong.
const keyHint = "Set " + EnvStateKey + " to 32 random bytes as hex or base64 (e.g. `openssl rand -hex 32`), the same key for every run of this repository; " +
	"or, unsafe because anyone who can read the repository reads the state, set " + EnvStatePlaintext + "=1."

// hints are the git store's words for a sealed state that does not open.
var hints = statecrypt.Hints{Key: keyHint, Restore: "Restore it from the branch's history."}

// FromEnv returns the options the environment sets: the state key
// (SPONSON_STATE_KEY) and the plaintext opt-in (SPONSON_STATE_PLAINTEXT),
// read by statecrypt.FromEnv, and the retry budget (SPONSON_STORE_BUDGET,
// store.BudgetFromEnv). A malformed value is a USAGE error, so a typo never
// silently means "no key".
func FromEnv(getenv func(string) string) ([]Option, error) {
	return store.OptionsFromEnv(getenv, keyHint, store.SealedOptions[Option]{StateKey: WithStateKey, Budget: WithBudget, PlaintextState: WithPlaintextState})
}

// ParseKey decodes a state key: 64 hex digits, or base64 of 32 bytes. The
// error never repeats the value.
func ParseKey(raw string) ([]byte, error) { return statecrypt.ParseKey(raw, keyHint) }

// keyID names a key without revealing it (statecrypt.KeyID).
func keyID(key []byte) string { return statecrypt.KeyID(key) }

// seal encrypts plain under key, bound to context (statecrypt.Seal), so a
// sealed state copied into another scope's branch does not open there.
func seal(key []byte, context string, plain []byte) ([]byte, error) {
	return statecrypt.Seal(key, context, plain)
}

// unseal reverses seal; what names the document in errors.
func unseal(key []byte, context, what string, data []byte) ([]byte, error) {
	return statecrypt.Unseal(key, context, what, data, hints)
}
