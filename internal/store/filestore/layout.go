package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

var _ store.Migrator = (*Store)(nil)

type layoutDoc struct {
	Layout int `json:"layout"`
}

// checkLayout reads @layout.json. Without it the root is either new (it is
// written now) or holds the layout before stacks: an environment directory
// with a scope in it, which is STORE_LAYOUT_OLD.
func (s *Store) checkLayout() error {
	v, err := s.layoutVersion()
	if err != nil {
		return err
	}
	switch {
	case v > Layout:
		return store.NewerLayoutError(s.root, v, Layout)
	case v == Layout:
		return nil
	}
	old, err := s.oldScopes()
	if err != nil {
		return err
	}
	if len(old) > 0 {
		return store.OldLayoutError(s.root, fmt.Sprintf("%d scope(s), e.g. %s", len(old), old[0]))
	}
	return writeJSON(s.root, layoutFile, layoutDoc{Layout: Layout})
}

// layoutVersion is the recorded layout, 0 when none is recorded.
func (s *Store) layoutVersion() (int, error) {
	p := filepath.Join(s.root, layoutFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fsError("read", p, err)
	}
	var doc layoutDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Layout < 1 {
		return 0, errcode.New(errcode.StoreUnavailable, "the layout record %s is unreadable; restore it (it reads {\"layout\": %d})", p, Layout).With("path", p)
	}
	return doc.Layout, nil
}

// oldScopes lists the scopes of the layout before stacks:
// <root>/<env>/<scope>/ directories, as env/scope.
func (s *Store) oldScopes() ([]store.Key, error) {
	envs, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fsError("list", s.root, err)
	}
	var out []store.Key
	for _, e := range envs {
		if !e.IsDir() || store.CheckName("environment", e.Name()) != nil {
			continue // @stacks, hidden files
		}
		dir := filepath.Join(s.root, e.Name())
		scopes, err := os.ReadDir(dir)
		if err != nil {
			return nil, fsError("list", dir, err)
		}
		for _, sc := range scopes {
			if sc.IsDir() && store.CheckName("scope", sc.Name()) == nil {
				out = append(out, store.Key{Environment: e.Name(), Scope: sc.Name()})
			}
		}
	}
	return out, nil
}

// Migrate moves every scope of the layout before stacks into stack:
// <root>/<env>/<scope>/ becomes <root>/@stacks/<env>/<S>/<scope>/ (one
// rename, so the lease record and its token move with it) and its part of
// the ownership index is rewritten with the stack. Parent leases keep no
// stack. It takes no scope's lease but refuses with LOCK_HELD, before
// moving anything, while any old scope's lease is live: run it when no run
// of the old sponson is in progress.
func (s *Store) Migrate(ctx context.Context, stack string) ([]store.Key, error) {
	if err := store.CheckStack(stack); err != nil {
		return nil, err
	}
	if v, err := s.layoutVersion(); err != nil {
		return nil, err
	} else if v > Layout {
		return nil, store.NewerLayoutError(s.root, v, Layout)
	}
	// Migrations of one root take turns on the root's own .mutex (flock,
	// never replaced), as mutations of a scope do on the scope's.
	unlock, err := lockScope(ctx, s.root, true)
	if err != nil {
		return nil, err
	}
	defer unlock()

	old, err := s.oldScopes()
	if err != nil {
		return nil, err
	}
	now := s.clock()
	for _, k := range old {
		info, _, err := readLease(filepath.Join(s.root, k.Environment, k.Scope, leaseFile))
		if err != nil {
			return nil, err
		}
		if info.Live(now) {
			return nil, &store.HeldError{Key: k, Lease: info}
		}
	}
	var moved []store.Key
	for _, k := range old {
		nk := store.Key{Stack: stack, Environment: k.Environment, Scope: k.Scope}
		if strings.HasPrefix(k.Scope, store.ParentScopePrefix) {
			nk.Stack = ""
		}
		if err := s.migrateScope(k, nk); err != nil {
			return moved, err
		}
		moved = append(moved, nk)
	}
	// What is left of the old environment directories: the emptied index
	// directory and the environment itself. Anything else stays.
	for _, k := range old {
		_ = os.Remove(filepath.Join(s.root, k.Environment, ownersDir))
		_ = os.Remove(filepath.Join(s.root, k.Environment))
	}
	if err := writeJSON(s.root, layoutFile, layoutDoc{Layout: Layout}); err != nil {
		return moved, err
	}
	return moved, nil
}

// migrateScope moves one old scope. The new index part is written before
// the directory moves and the old one removed after, so a crash between
// leaves the index claiming more, never less, and a second Migrate finishes.
func (s *Store) migrateScope(old, nk store.Key) error {
	oldDir := filepath.Join(s.root, old.Environment, old.Scope)
	oldIdx := filepath.Join(s.root, old.Environment, ownersDir, old.Scope+".json")
	if b, err := os.ReadFile(oldIdx); err == nil {
		var doc ownersDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			return errcode.Wrap(errcode.ReceiptCorrupt, err, "the ownership index %s does not parse", oldIdx)
		}
		for i := range doc.Entries {
			doc.Entries[i].Stack, doc.Entries[i].Scope = nk.Stack, nk.Scope
		}
		odir := s.ownersDir(nk)
		if err := ensureDir(odir, s.root); err != nil {
			return err
		}
		if err := writeJSON(odir, nk.Scope+".json", doc); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fsError("read", oldIdx, err)
	}
	dst := s.scopeDir(nk)
	if _, err := os.Stat(dst); err == nil {
		return errcode.New(errcode.Internal, "cannot migrate %s: %s exists already", oldDir, dst).With("path", dst)
	}
	if err := ensureDir(filepath.Dir(dst), s.root); err != nil {
		return err
	}
	if err := os.Rename(oldDir, dst); err != nil {
		return fsError("move", oldDir, err)
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(oldDir)); err != nil {
		return err
	}
	if err := os.Remove(oldIdx); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fsError("remove", oldIdx, err)
	}
	return nil
}
