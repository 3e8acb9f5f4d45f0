package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestE2EPlanLeavesTheLockFile: a read-only plan never leaves a
// .terraform.lock.hcl in the user's directory that was not there, and
// leaves one that was there as it was, although the engine's init writes it
// (docs/design.md §7.2).
func TestE2EPlanLeavesTheLockFile(t *testing.T) {
	h := newHarness(t)
	dir := h.workdir("../../examples/preview")
	lock := filepath.Join(dir, ".terraform.lock.hcl")

	h.mustRun(dir, "plan", "--scope", "lock")
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		b, _ := os.ReadFile(lock)
		t.Fatalf("plan left a lock file in a directory that had none (%v):\n%s", err, b)
	}

	// A lock file of the user's own that init would change: the plan must
	// still see what init wrote, and the user gets the file back.
	own := []byte("# the user's own lock file\n")
	if err := os.WriteFile(lock, own, 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustRun(dir, "plan", "--scope", "lock")
	if got, err := os.ReadFile(lock); err != nil || !bytes.Equal(got, own) {
		t.Fatalf("plan changed the user's lock file (%v):\n%s", err, got)
	}
}
