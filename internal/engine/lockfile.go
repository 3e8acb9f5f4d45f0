package engine

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// LockFileName is the engine's dependency lock file in the configuration
// directory.
const LockFileName = ".terraform.lock.hcl"

// LockGuard gives a read-only run's configuration directory its lock file
// back as it was (docs/design.md §7.2): init writes it, and the engine's
// later commands read it, so it is restored when the run ends, not after
// init.
type LockGuard struct {
	path    string
	before  []byte
	existed bool
}

// GuardLockFile records the lock file of the configuration in dir.
func GuardLockFile(dir string) (*LockGuard, error) {
	g := &LockGuard{path: filepath.Join(dir, LockFileName)}
	b, err := os.ReadFile(g.path)
	switch {
	case err == nil:
		g.before, g.existed = b, true
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return g, nil
}

// Restore puts the lock file back exactly as it was, or removes it when
// there was none; it writes nothing when the file is unchanged.
func (g *LockGuard) Restore() error {
	after, err := os.ReadFile(g.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !g.existed {
			return nil
		}
	case err != nil:
		return err
	case !g.existed:
		return os.Remove(g.path)
	case bytes.Equal(after, g.before):
		return nil
	}
	return os.WriteFile(g.path, g.before, 0o644)
}
