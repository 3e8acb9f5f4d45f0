package statecrypt

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func TestEnvKeyFor(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]string{
		"production": "SPONSON_STATE_KEY_PRODUCTION",
		"eu-west.1":  "SPONSON_STATE_KEY_EU_WEST_1",
		"preview":    "SPONSON_STATE_KEY_PREVIEW",
	} {
		if got := EnvKeyFor(env); got != want {
			t.Errorf("EnvKeyFor(%q) = %q, want %q", env, got, want)
		}
	}
}

func TestForEnvironment(t *testing.T) {
	t.Parallel()
	vars := map[string]string{EnvStateKey: "default", "SPONSON_STATE_KEY_PRODUCTION": "prod", "SPONSON_STATE_KEY_STAGING": " "}
	getenv := func(k string) string { return vars[k] }
	for env, want := range map[string]string{"production": "prod", "preview": "default", "staging": "default"} {
		if got := ForEnvironment(env, getenv)(EnvStateKey); got != want {
			t.Errorf("key of %s = %q, want %q", env, got, want)
		}
	}
}

func TestScrubAndRestore(t *testing.T) {
	t.Setenv(EnvStateKey, "k")
	t.Setenv("SPONSON_STATE_KEY_PRODUCTION", "p")
	restore := Scrub()
	if _, ok := os.LookupEnv(EnvStateKey); ok {
		t.Error("the default key stays in the environment")
	}
	if _, ok := os.LookupEnv("SPONSON_STATE_KEY_PRODUCTION"); ok {
		t.Error("an environment's key stays in the environment")
	}
	restore()
	if os.Getenv(EnvStateKey) != "k" || os.Getenv("SPONSON_STATE_KEY_PRODUCTION") != "p" {
		t.Error("the keys were not put back")
	}
}

// TestFromEnv: both stores that seal state read the key and the opt-in
// here, so a bad key is refused the same way (USAGE, the store's hint, never
// the value) whichever store it was meant for.
func TestFromEnv(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{0xa5}, KeySize)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		vars map[string]string
		want Config
	}{
		{"nothing", nil, Config{}},
		{"hex key", map[string]string{EnvStateKey: " " + hex.EncodeToString(key) + "\n"}, Config{Key: key}},
		{"base64 key", map[string]string{EnvStateKey: base64.RawURLEncoding.EncodeToString(key)}, Config{Key: key}},
		{"plaintext", map[string]string{EnvStatePlaintext: "true"}, Config{Plaintext: true}},
		{"plaintext no", map[string]string{EnvStatePlaintext: "0"}, Config{}},
		{"both", map[string]string{EnvStateKey: hex.EncodeToString(key), EnvStatePlaintext: "1"}, Config{Key: key, Plaintext: true}},
		{"production's own key", map[string]string{EnvStateKey: "x", "SPONSON_STATE_KEY_PRODUCTION": hex.EncodeToString(key)}, Config{Key: key}},
	} {
		getenv := env(tc.vars)
		if tc.name == "production's own key" {
			getenv = ForEnvironment("production", getenv)
		}
		got, err := FromEnv(getenv, "the hint")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	for _, bad := range []map[string]string{{EnvStateKey: "notakeyatall"}, {EnvStateKey: hex.EncodeToString(key[:16])}, {EnvStatePlaintext: "maybe"}} {
		_, err := FromEnv(env(bad), "the hint")
		var ce *errcode.Error
		if !errors.As(err, &ce) || ce.Code != errcode.Usage {
			t.Errorf("%v: %v, want USAGE", bad, err)
			continue
		}
		if v := bad[EnvStateKey]; v != "" && (strings.Contains(err.Error(), v) || ce.Hint != "the hint") {
			t.Errorf("%v: %v (hint %q): want the store's hint and not the value", bad, err, ce.Hint)
		}
	}
}
