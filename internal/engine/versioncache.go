package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"unsafe"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"
)

// The engine's version is read once per binary (docs/design.md §8: the
// engine starts only when needed): `version -json` costs an engine start
// on every run otherwise. The cache lives in the user's cache directory,
// outside any checkout, one file per binary named by the hash of its
// resolved path, size and modification time, so a replaced or upgraded
// binary is read again.

// versionCacheFile is where the version of binary is cached, "" when there
// is no user cache directory.
func versionCacheFile(binary string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	path, err := filepath.Abs(binary)
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	sum := sha256.Sum256([]byte(FileIdentity(path)))
	return filepath.Join(dir, "sponson", "engine-version", hex.EncodeToString(sum[:16]))
}

// cachedVersion returns the version cached for binary.
func cachedVersion(binary string) (*version.Version, bool) {
	f := versionCacheFile(binary)
	if f == "" {
		return nil, false
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, false
	}
	v, err := version.NewVersion(strings.TrimSpace(string(b)))
	return v, err == nil
}

// cacheVersion records the version of binary; a cache that cannot be
// written only means the next run reads the version again.
func cacheVersion(binary string, v *version.Version) {
	f := versionCacheFile(binary)
	if f == "" || os.MkdirAll(filepath.Dir(f), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), ".version-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(v.String() + "\n")
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), f) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// seedVersion gives terraform-exec the version it would otherwise read by
// starting the engine before its first command (it checks each command's
// options against it). terraform-exec has no setter, so the unexported
// field is set by reflection; if a later terraform-exec renames it,
// seedVersion reports false and the version is read from the engine, as
// before (TestSeedVersion fails then, so the upgrade notices).
func seedVersion(tf *tfexec.Terraform, v *version.Version) bool {
	f := reflect.ValueOf(tf).Elem().FieldByName("execVersion")
	if !f.IsValid() || f.Type() != reflect.TypeOf(v) {
		return false
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(v))
	return true
}

// engineVersion returns the version of the engine tf runs, from the cache
// when the binary was read before.
func engineVersion(tf *tfexec.Terraform, binary string, read func() (*version.Version, error)) (*version.Version, error) {
	if v, ok := cachedVersion(binary); ok && seedVersion(tf, v) {
		return v, nil
	}
	v, err := read()
	if err != nil {
		return nil, err
	}
	cacheVersion(binary, v)
	return v, nil
}
