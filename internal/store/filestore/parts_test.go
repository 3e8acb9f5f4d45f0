package filestore

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
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
	// What is kept is what a parse of the bytes gives, to the time zone
	// and the monotonic reading of each time (the store's clock is UTC).
	var parsed ownersDoc
	if err := json.Unmarshal(kept.data, &parsed); err != nil || !reflect.DeepEqual(parsed, kept.doc) {
		t.Fatalf("the part kept is not its bytes parsed (%v):\n%+v\n%+v", err, kept.doc, parsed)
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

// The cache keeps parts up to its budget: a new part takes the place of
// the path's part before it and of as many others as it needs, and a part
// larger than the budget is not kept.
func TestPartCacheBudget(t *testing.T) {
	t.Parallel()
	var c partCache
	half := make([]byte, partCacheBytes/2)
	c.put("a", half, ownersDoc{RunID: "run-a"})
	c.put("b", bytes.Clone(half), ownersDoc{RunID: "run-b"})
	if _, ok := c.get("a", half); !ok || c.used != partCacheBytes {
		t.Fatalf("two parts within the budget are not both kept (%d bytes counted)", c.used)
	}
	c.put("c", make([]byte, 1), ownersDoc{RunID: "run-c"})
	if _, ok := c.get("c", []byte{0}); !ok || len(c.parts) != 2 || c.used != partCacheBytes/2+1 {
		t.Fatalf("the newest part did not take another's place: %d parts, %d bytes", len(c.parts), c.used)
	}
	c.put("c", make([]byte, partCacheBytes+1), ownersDoc{RunID: "run-d"})
	if _, ok := c.get("c", []byte{0}); ok || len(c.parts) != 1 || c.used != partCacheBytes/2 {
		t.Fatalf("a part over the budget replaced the path's part: %d parts, %d bytes", len(c.parts), c.used)
	}
	if _, ok := c.get("d", half); ok {
		t.Fatal("a path never kept answered")
	}
}
