package filestore

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

var partKey = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}

// writePart writes a receipt of n entries for partKey through s and
// returns the path of the scope's part of the index.
func writePart(t *testing.T, s *Store, runID string, n int) string {
	t.Helper()
	g, err := s.Acquire(t.Context(), partKey, runID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(partKey, runID, n)); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(t.Context(), g.Lease); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(s.ownersDir(partKey), partKey.Scope+".json")
}

func readEntries(t *testing.T, s *Store, path string) []store.Owner {
	t.Helper()
	doc, err := s.readPart(path)
	if err != nil {
		t.Fatal(err)
	}
	return doc.Entries
}

// The part a store wrote is kept parsed, and every read of the same bytes
// returns it without a parse: the entries are the very ones it kept.
func TestPartIsParsedOncePerContent(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := writePart(t, s, "run-a", 3)
	kept, ok := s.parts.parts[path]
	if !ok || len(kept.doc.Entries) != 3 {
		t.Fatalf("the part just written is not kept: %+v", kept)
	}
	for range 2 {
		if got := readEntries(t, s, path); &got[0] != &kept.doc.Entries[0] {
			t.Fatal("an unchanged part was parsed again")
		}
	}
}

// A part another process replaced is parsed again, even when the part it
// replaced was kept: the cache answers for the bytes it parsed alone.
func TestReplacedPartIsReadAgain(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	reader, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	path := writePart(t, writer, "run-a", 3)
	if n := len(readEntries(t, reader, path)); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	writePart(t, writer, "run-b", 5)
	if n := len(readEntries(t, reader, path)); n != 5 {
		t.Fatalf("after another store replaced the part: %d entries, want 5", n)
	}
	owners, err := reader.Owners(t.Context(), "preview", nil)
	if err != nil || len(owners) != 5 || owners[4].Scope != "pr-1" || owners[4].Stack != "acme/app" {
		t.Fatalf("Owners after the replacement: %+v, %v", owners, err)
	}
}

// The cache keeps parts up to its budget and drops the one a path held
// before, so a part that grew beyond the budget is not answered for.
func TestPartCacheBudget(t *testing.T) {
	t.Parallel()
	var c partCache
	small := []byte(`{"runId":"run-a","entries":[]}`)
	c.put("a", small, ownersDoc{RunID: "run-a"})
	if _, ok := c.get("a", bytes.Clone(small)); !ok {
		t.Fatal("a part within the budget is not kept")
	}
	c.put("a", make([]byte, partCacheBytes+1), ownersDoc{RunID: "run-b"})
	if _, ok := c.get("a", small); ok || c.used != 0 {
		t.Fatalf("the part a path held before is still kept (%d bytes counted)", c.used)
	}
	if _, ok := c.get("b", small); ok {
		t.Fatal("a path never kept answered")
	}
}
