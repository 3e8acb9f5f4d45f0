package gitstore_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
)

// layout1Key is the state key the layout-1 fixture was sealed with.
var layout1Key = bytes.Repeat([]byte{0x42}, gitstore.KeySize)

// layout1Remote clones the git store that sponson wrote before stacks
// (internal/store/testdata/layout1/git.bundle) into a new bare remote.
func layout1Remote(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "origin.git")
	bundle, err := filepath.Abs("../testdata/layout1/git.bundle")
	if err != nil {
		t.Fatal(err)
	}
	git(t, "", "clone", "--quiet", "--mirror", bundle, dir)
	git(t, dir, "remote", "remove", "origin")
	return dir
}

// TestOldLayoutIsRefusedThenMigrated: a remote with sponson-receipts/
// branches and no layout branch is STORE_LAYOUT_OLD on every read and
// write; Migrate copies each branch into the stack (states sealed again for
// their new place) and the store then reads the old scopes' state, receipt,
// lease token and index.
func TestOldLayoutIsRefusedThenMigrated(t *testing.T) {
	t.Parallel()
	remote := layout1Remote(t)
	const stack = "github.com/acme/infra//app"
	k := store.Key{Stack: stack, Environment: "preview", Scope: "pr-7"}
	s := openStore(t, remote, gitstore.WithStateKey(layout1Key))
	if _, err := s.ReadState(t.Context(), k); !errcode.Is(err, errcode.StoreLayoutOld) {
		t.Fatalf("ReadState on an old remote = %v, want STORE_LAYOUT_OLD", err)
	}
	if _, err := s.List(t.Context(), "preview"); !errcode.Is(err, errcode.StoreLayoutOld) {
		t.Fatalf("List on an old remote = %v, want STORE_LAYOUT_OLD", err)
	}
	if _, err := s.Acquire(t.Context(), k, "run-x", 60e9); !errcode.Is(err, errcode.StoreLayoutOld) {
		t.Fatalf("Acquire on an old remote = %v, want STORE_LAYOUT_OLD", err)
	}
	before := git(t, remote, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/sponson-receipts/")

	m := openStore(t, remote, gitstore.WithStateKey(layout1Key), gitstore.WithOldLayout())
	moved, err := m.Migrate(t.Context(), stack)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if len(moved) != 2 {
		t.Fatalf("Migrate moved %v, want main and pr-7", moved)
	}
	if after := git(t, remote, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/sponson-receipts/"); after != before {
		t.Errorf("Migrate changed the old branches:\n%s\nwant\n%s", after, before)
	}

	n := openStore(t, remote, gitstore.WithStateKey(layout1Key))
	state, err := n.ReadState(t.Context(), k)
	if err != nil {
		t.Fatalf("ReadState after Migrate: %v", err)
	}
	var doc struct {
		Resources []any `json:"resources"`
	}
	if err := json.Unmarshal(state, &doc); err != nil || len(doc.Resources) != 2 {
		t.Fatalf("state after Migrate = %s, %v; want the old state with 2 resources", state, err)
	}
	r, err := n.LatestReceipt(t.Context(), k)
	if err != nil || r == nil || len(r.Ledger) != 2 {
		t.Fatalf("LatestReceipt after Migrate = %+v, %v", r, err)
	}
	owners, err := n.Owners(t.Context(), "preview", nil)
	if err != nil || len(owners) != 4 {
		t.Fatalf("Owners after Migrate = %+v, %v; want 4", owners, err)
	}
	g, err := n.Acquire(t.Context(), k, "run-next", 60e9)
	if err != nil || g.Lease.Token != 2 {
		t.Fatalf("Acquire after Migrate = %+v, %v; want token 2", g, err)
	}
	if again, err := m.Migrate(t.Context(), stack); err != nil || len(again) != 0 {
		t.Fatalf("second Migrate = %v, %v; want nothing to do", again, err)
	}
}

// TestMigrateNeedsTheStateKey: sealed states cannot be sealed again
// without the key; nothing is written.
func TestMigrateNeedsTheStateKey(t *testing.T) {
	t.Parallel()
	remote := layout1Remote(t)
	m, err := gitstore.Open(t.Context(), remote, gitstore.WithOldLayout())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Migrate(t.Context(), "acme/app"); !errcode.Is(err, errcode.Usage) {
		t.Fatalf("Migrate without the key = %v, want USAGE", err)
	}
	if refs := git(t, remote, "for-each-ref", "--format=%(refname)", "refs/heads/sponson-layout/"); refs != "" {
		t.Fatalf("a failed Migrate recorded the layout: %s", refs)
	}
}

// TestNewerLayoutIsRefused: a remote with a layout branch newer than this
// build's is STORE_LAYOUT_NEWER.
func TestNewerLayoutIsRefused(t *testing.T) {
	t.Parallel()
	remote := newRemote(t)
	w := openStore(t, remote)
	mustAcquire(t, w, pr1, "run-a", 60e9)
	tip := git(t, remote, "rev-parse", "refs/heads/sponson-layout/2")
	git(t, remote, "update-ref", "refs/heads/sponson-layout/3", tip)
	s := openStore(t, remote)
	if _, err := s.ReadLease(t.Context(), pr1); !errcode.Is(err, errcode.StoreLayoutNewer) || !strings.Contains(err.Error(), "layout 3") {
		t.Fatalf("ReadLease on a newer layout = %v, want STORE_LAYOUT_NEWER naming layout 3", err)
	}
}
