package statecrypt

import (
	"os"
	"testing"
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
