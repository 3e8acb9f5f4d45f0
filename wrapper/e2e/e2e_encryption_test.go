package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EEngineEncryptionRefused: OpenTofu's own state encryption (the
// encryption block, or TF_ENCRYPTION) would hand sponson ciphertext, and
// the scope would silently own nothing: the run is refused before the
// lease, saying why and what to use instead, and nothing is written.
// HashiCorp Terraform, which has no such block, gets the same refusal
// before it could reject the block itself.
func TestE2EEngineEncryptionRefused(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/encrypted")
	for _, args := range [][]string{{"apply", "--scope", "pr-1"}, {"plan", "--scope", "pr-1"}} {
		r := h.run(dir, nil, append(args, "--json")...)
		if r.exit != 2 || r.code(t) != "USAGE" {
			t.Fatalf("%s of an encrypted configuration: exit %d %q\n%s%s", args[0], r.exit, r.code(t), r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "encryption") || !strings.Contains(r.stdout, "SPONSON_STATE_KEY") {
			t.Errorf("the refusal does not say why and what to use:\n%s", r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".sponson")); err == nil {
		entries, _ := os.ReadDir(scopeDir(dir, "preview", "pr-1"))
		if len(entries) > 0 {
			t.Errorf("the refused run wrote to the store: %v", entries)
		}
	}

	plain := h.workdir("testdata/released")
	r := h.run(plain, []string{`TF_ENCRYPTION=key_provider "pbkdf2" "k" { passphrase = "correct-horse-battery-staple" }`}, "apply", "--scope", "pr-1", "--json")
	if r.exit != 2 || !strings.Contains(r.stdout, "TF_ENCRYPTION") {
		t.Errorf("an apply with TF_ENCRYPTION set: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
}
