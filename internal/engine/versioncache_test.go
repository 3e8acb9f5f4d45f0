package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"
)

// fakeEngine is an engine binary that fails whatever it is asked: a
// version read from it could only come from the cache.
func fakeEngine(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tofu")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestSeedVersion: terraform-exec takes the seeded version for its checks
// without starting the engine. It fails when a terraform-exec upgrade
// renames the field, which would silently bring the version start back.
func TestSeedVersion(t *testing.T) {
	bin := fakeEngine(t)
	tf, err := tfexec.NewTerraform(t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	want := version.Must(version.NewVersion("1.12.6"))
	if !seedVersion(tf, want) {
		t.Fatal("terraform-exec no longer has the execVersion field seedVersion sets")
	}
	got, _, err := tf.Version(context.Background(), false)
	if err != nil || !got.Equal(want) {
		t.Fatalf("Version after seeding = %v, %v; want %v without starting the engine", got, err, want)
	}
}

// TestEngineVersionCache: the version is read once per binary, and again
// when the binary is replaced (its size or modification time changes).
func TestEngineVersionCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	bin := fakeEngine(t)
	reads := 0
	read := func() (*version.Version, error) { reads++; return version.NewVersion("1.12.6") }
	open := func() *version.Version {
		t.Helper()
		tf, err := tfexec.NewTerraform(t.TempDir(), bin)
		if err != nil {
			t.Fatal(err)
		}
		v, err := engineVersion(tf, bin, read)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := open(); v.String() != "1.12.6" || reads != 1 {
		t.Fatalf("first open: %v after %d reads", v, reads)
	}
	if v := open(); v.String() != "1.12.6" || reads != 1 {
		t.Fatalf("second open read the engine again (%d reads, %v)", reads, v)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	if open(); reads != 2 {
		t.Fatalf("a replaced binary was not read again (%d reads)", reads)
	}
}
