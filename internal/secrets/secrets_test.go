package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSplitKeepsKeysOutOfTheEnvironment(t *testing.T) {
	env := []string{"PATH=/bin", "SPONSON_STATE_KEY=k", "SPONSON_STATE_KEY_PRODUCTION=p", "SPONSON_PLAN_KEY=s", "SPONSON_STATE_KEY_FILE=/f", FDVar + "=7"}
	rest, keys := split(env)
	if strings.Join(rest, " ") != "PATH=/bin SPONSON_STATE_KEY_FILE=/f" {
		t.Errorf("the environment left: %v", rest)
	}
	if len(keys) != 3 || keys["SPONSON_STATE_KEY_PRODUCTION"] != "p" {
		t.Errorf("the keys: %v", keys)
	}
}

// A key file holds NAME=VALUE lines or the state key alone (a base64 key
// ends in "="); a name set twice is refused without echoing a value.
func TestParseKeyFile(t *testing.T) {
	keys, err := parse([]byte("# the job's keys\nSPONSON_STATE_KEY_PREVIEW=aa\nSPONSON_PLAN_KEY=bb\n"), true)
	if err != nil || keys["SPONSON_STATE_KEY_PREVIEW"] != "aa" || keys["SPONSON_PLAN_KEY"] != "bb" {
		t.Errorf("named keys: %v, %v", keys, err)
	}
	keys, err = parse([]byte("q83vEjRWeJA=\n"), true)
	if err != nil || keys[StateKeyVar] != "q83vEjRWeJA=" {
		t.Errorf("a lone base64 key: %v, %v", keys, err)
	}
	if _, err := parse([]byte("SPONSON_PLAN_KEY=secret-one\nSPONSON_PLAN_KEY=secret-two\n"), true); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a key set twice: %v", err)
	}
}

// Getenv answers the keys from memory, where the environment has none.
func TestGetenvFromAKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte("SPONSON_STATE_KEY_STAGING=from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	readKeyFile(path)
	if err := Err(); err != nil {
		t.Fatal(err)
	}
	if got := Getenv("SPONSON_STATE_KEY_STAGING"); got != "from-file" || os.Getenv("SPONSON_STATE_KEY_STAGING") != "" {
		t.Errorf("Getenv = %q; the environment holds %q", got, os.Getenv("SPONSON_STATE_KEY_STAGING"))
	}
	readKeyFile(filepath.Join(t.TempDir(), "missing"))
	if Err() == nil {
		t.Error("an unreadable key file is not an error")
	}
	setErr(nil)
}
