package fixtureprovider

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cmdPackage is the import path of the provider binary's main package. Build
// names it by import path, so it works from the directory of any package of
// this module, which is where `go test` runs a test binary.
const cmdPackage = "github.com/sponson/terraform-provider-sponson/internal/fixtureprovider/cmd/" + BinaryName

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Build builds the provider binary (terraform-provider-fixture) once per test
// binary and returns its path; every later call returns the same path. A
// failed build fails every test that calls it.
//
// The binary outlives the test that built it, so it cannot live in a
// t.TempDir. It goes to one directory per checkout under os.TempDir instead
// of a new one per test binary, which would leave a binary behind for every
// `go test` run: each build is written beside it and renamed over it, so a
// test binary of the same checkout that is running the previous build keeps
// a complete file, and checkouts (worktrees) never share a binary.
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { builtBin, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("building %s: %v", cmdPackage, buildErr)
	}
	return builtBin
}

// build runs go build and returns the binary's path. go test puts its own
// GOROOT/bin first on PATH, so `go` is the toolchain of the test binary.
func build() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	checkout := sha256.Sum256([]byte(strings.TrimSpace(string(gomod))))
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("sponson-fixture-provider-%x", checkout[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // empty after the rename, or holding a failed build
	out, err := exec.Command("go", "build", "-o", filepath.Join(tmp, BinaryName), cmdPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w", errors.Join(err, errors.New(string(out))))
	}
	bin := filepath.Join(dir, BinaryName)
	if err := os.Rename(filepath.Join(tmp, BinaryName), bin); err != nil {
		return "", err
	}
	return bin, nil
}
