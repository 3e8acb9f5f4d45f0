package filestore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// layout1 copies the file store that sponson wrote before stacks
// (internal/store/testdata/layout1/file) into a new directory.
func layout1(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	if err := os.CopyFS(root, os.DirFS("../testdata/layout1/file")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestOldLayoutIsRefusedThenMigrated: a store of the layout before stacks is
// STORE_LAYOUT_OLD, never empty; Migrate moves each old scope into the
// stack with its lease token, receipt, state and index, and the store then
// opens.
func TestOldLayoutIsRefusedThenMigrated(t *testing.T) {
	t.Parallel()
	root := layout1(t)
	oldState := readFile(t, filepath.Join(root, "preview", "pr-7", "terraform.tfstate"))
	if _, err := filestore.Open(root); !errcode.Is(err, errcode.StoreLayoutOld) {
		t.Fatalf("Open of an old store = %v, want STORE_LAYOUT_OLD", err)
	}
	if _, err := os.Stat(filepath.Join(root, "@layout.json")); err == nil {
		t.Fatal("a refused Open recorded a layout")
	}
	m, err := filestore.Open(root, filestore.WithOldLayout())
	if err != nil {
		t.Fatal(err)
	}
	const stack = "github.com/acme/infra//app"
	moved, err := m.Migrate(t.Context(), stack)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if len(moved) != 2 {
		t.Fatalf("Migrate moved %v, want main and pr-7", moved)
	}
	s, err := filestore.Open(root)
	if err != nil {
		t.Fatalf("Open after Migrate: %v", err)
	}
	k := store.Key{Stack: stack, Environment: "preview", Scope: "pr-7"}
	if got, err := s.ReadState(t.Context(), k); err != nil || !bytes.Equal(got, oldState) {
		t.Fatalf("ReadState(%s) after Migrate = %d bytes, %v; want the old state", k, len(got), err)
	}
	r, err := s.LatestReceipt(t.Context(), k)
	if err != nil || r == nil || len(r.Ledger) != 2 {
		t.Fatalf("LatestReceipt(%s) = %+v, %v; want the old receipt with 2 entries", k, r, err)
	}
	info, err := s.ReadLease(t.Context(), k)
	if err != nil || info.Token != 1 || info.Holder != "" {
		t.Fatalf("ReadLease(%s) = %+v, %v; want the free lease with token 1", k, info, err)
	}
	owners, err := s.Owners(t.Context(), "preview", nil)
	if err != nil || len(owners) != 4 {
		t.Fatalf("Owners = %+v, %v; want 4 entries", owners, err)
	}
	for _, o := range owners {
		if o.Stack != stack {
			t.Errorf("owner %+v has no stack %s", o, stack)
		}
	}
	// The next grant continues the old token.
	g, err := s.Acquire(t.Context(), k, "run-next", 60e9)
	if err != nil || g.Lease.Token != 2 {
		t.Fatalf("Acquire after Migrate = %+v, %v; want token 2", g, err)
	}
	// Migrating again finds nothing to move.
	if again, err := m.Migrate(t.Context(), stack); err != nil || len(again) != 0 {
		t.Fatalf("second Migrate = %v, %v; want nothing moved", again, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "preview")); len(entries) != 0 {
		t.Errorf("old directory preview/ still holds %v", entries)
	}
}

// TestMigrateRefusesLiveLease: nothing moves while an old scope is leased.
func TestMigrateRefusesLiveLease(t *testing.T) {
	t.Parallel()
	root := layout1(t)
	lease := `{"holder":"run-old","token":2,"acquiredAt":"2026-01-01T00:00:00Z","expiresAt":"2999-01-01T00:00:00Z"}`
	if err := os.WriteFile(filepath.Join(root, "preview", "main", "lease.json"), []byte(lease), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := filestore.Open(root, filestore.WithOldLayout())
	if err != nil {
		t.Fatal(err)
	}
	var held *store.HeldError
	if _, err := m.Migrate(t.Context(), "acme/app"); !errors.As(err, &held) || held.Lease.Holder != "run-old" {
		t.Fatalf("Migrate with a live old lease = %v, want *store.HeldError naming run-old", err)
	}
	if _, err := os.Stat(filepath.Join(root, "preview", "pr-7", "terraform.tfstate")); err != nil {
		t.Fatalf("a refused Migrate moved something: %v", err)
	}
}

// TestNewerLayoutIsRefused: a layout this build does not know is
// STORE_LAYOUT_NEWER.
func TestNewerLayoutIsRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "@layout.json"), []byte(`{"layout": 3}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := filestore.Open(root); !errcode.Is(err, errcode.StoreLayoutNewer) {
		t.Fatalf("Open of a newer layout = %v, want STORE_LAYOUT_NEWER", err)
	}
}
