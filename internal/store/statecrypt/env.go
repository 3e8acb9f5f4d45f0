package statecrypt

import (
	"os"
	"regexp"
	"strings"
)

// Keys can differ per environment (docs/design.md §9): SPONSON_STATE_KEY_<ENV>
// is the key of one environment, SPONSON_STATE_KEY the key of the others.
// A pull request job that is given only the preview key cannot decrypt
// production's state.

var notAlnum = regexp.MustCompile(`[^A-Z0-9]+`)

// EnvKeyFor names the state key of environment env: SPONSON_STATE_KEY_ and the
// name upper-cased, with each run of characters other than letters and
// digits as one "_" (production: SPONSON_STATE_KEY_PRODUCTION; eu-west:
// SPONSON_STATE_KEY_EU_WEST).
func EnvKeyFor(env string) string {
	return EnvStateKey + "_" + strings.Trim(notAlnum.ReplaceAllString(strings.ToUpper(env), "_"), "_")
}

// Config is what the environment says about sealing a store's state.
type Config struct {
	// Key is the state key; nil when SPONSON_STATE_KEY is unset or empty.
	Key []byte
	// Plaintext is the explicit, unsafe opt-in to unsealed state.
	Plaintext bool
}

// FromEnv reads the state key (SPONSON_STATE_KEY) and the plaintext opt-in
// (SPONSON_STATE_PLAINTEXT) through getenv, which is ForEnvironment's for a
// run in one environment, so both stores that seal state read the two the
// same way. keyHint is the store's words for what to do about a bad key. A
// malformed value is a USAGE error, so a typo never silently means "no key",
// and the error never repeats the key.
func FromEnv(getenv func(string) string, keyHint string) (Config, error) {
	var c Config
	if raw := strings.TrimSpace(getenv(EnvStateKey)); raw != "" {
		key, err := ParseKey(raw, keyHint)
		if err != nil {
			return Config{}, err
		}
		c.Key = key
	}
	plain, err := PlaintextAllowed(getenv)
	if err != nil {
		return Config{}, err
	}
	c.Plaintext = plain
	return c, nil
}

// ForEnvironment returns getenv, except that SPONSON_STATE_KEY is answered
// with env's own key where one is set (not empty).
func ForEnvironment(env string, getenv func(string) string) func(string) string {
	return func(name string) string {
		if name == EnvStateKey {
			if v := strings.TrimSpace(getenv(EnvKeyFor(env))); v != "" {
				return v
			}
		}
		return getenv(name)
	}
}

// Scrub removes every state key from the process environment, which the
// engine and everything it starts (providers, provisioners) inherit: none
// of them needs the key, and any of them could read it. The returned
// function puts the keys back, for a later run of the same process.
func Scrub() (restore func()) {
	var saved [][2]string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if name == EnvStateKey || strings.HasPrefix(name, EnvStateKey+"_") {
			saved = append(saved, [2]string{name, value})
			os.Unsetenv(name)
		}
	}
	return func() {
		for _, kv := range saved {
			os.Setenv(kv[0], kv[1])
		}
	}
}
