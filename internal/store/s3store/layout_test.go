package s3store

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/s3test"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// wantLayoutCode fails unless err has code.
func wantLayoutCode(t *testing.T, what string, err error, code errcode.Code) {
	t.Helper()
	if !errcode.Is(err, code) {
		t.Fatalf("%s = %v, want %s", what, err, code)
	}
}

// A new prefix gets the marker with its first write, not with a read: read-
// only credentials may look at a prefix nobody has written yet.
func TestLayoutMarkerWrittenByFirstWrite(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	s := open(t, srv)
	if _, err := s.ReadLease(t.Context(), k1); err != nil {
		t.Fatal(err)
	}
	if sums, err := s.List(t.Context(), k1.Environment); err != nil || len(sums) != 0 {
		t.Fatalf("List of a new prefix = %v, %v", sums, err)
	}
	if objs := objects(t, s); len(objs) != 0 {
		t.Fatalf("reads of a new prefix wrote %v", objs)
	}
	if _, err := s.Acquire(t.Context(), k1, "run-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := string(objects(t, s)[layoutObject]); got != `{"layout":3}` {
		t.Errorf("%s = %q after the first write, want {\"layout\":3}", layoutObject, got)
	}
}

// Two runs that start on a new prefix at once both record the marker (one
// creates it, the other finds it) and both go on.
func TestLayoutMarkerRace(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		s := open(t, srv)
		k := store.Key{Stack: k1.Stack, Environment: k1.Environment, Scope: "pr-" + string(rune('a'+i))}
		wg.Go(func() { _, errs[i] = s.Acquire(t.Context(), k, "run", time.Minute) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Acquire %d on a new prefix: %v", i, err)
		}
	}
}

// A prefix a stack-aware sponson wrote before the marker existed is layout
// 2: its pointers are one level below .leases. It is read, and the marker
// is added by the next write.
func TestLayoutUnmarkedStackPrefixIsCurrent(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	w := open(t, srv)
	g, err := w.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(k1, "run-a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.b.Delete(t.Context(), w.b.prefix+layoutObject); err != nil {
		t.Fatal(err)
	}
	s := open(t, srv)
	if sums, err := s.List(t.Context(), k1.Environment); err != nil || len(sums) != 1 {
		t.Fatalf("List of an unmarked stack prefix = %v, %v; want its scope", sums, err)
	}
	if err := s.Release(t.Context(), g.Lease); err != nil {
		t.Fatal(err)
	}
	if _, ok := objects(t, s)[layoutObject]; !ok {
		t.Error("the write to an unmarked stack prefix did not record the layout")
	}
}

// A marker of a newer layout refuses every operation, reads included, and
// nothing is written.
func TestLayoutNewerRefused(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	s := open(t, srv)
	if err := s.b.Put(t.Context(), s.b.prefix+layoutObject, []byte(`{"layout":4}`)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	wantLayoutCode(t, "Acquire", err, errcode.StoreLayoutNewer)
	e := errcode.As(err)
	if !strings.Contains(e.Message, "layout 4") {
		t.Errorf("message %q does not name the layout found", e.Message)
	}
	_, err = s.List(t.Context(), k1.Environment)
	wantLayoutCode(t, "List", err, errcode.StoreLayoutNewer)
	_, err = s.LatestReceipt(t.Context(), k1)
	wantLayoutCode(t, "LatestReceipt", err, errcode.StoreLayoutNewer)
	if objs := objects(t, s); len(objs) != 1 {
		t.Errorf("a refused store was written: %v", objs)
	}
}

// Pointers of the layout before stacks (<env>/.leases/<scope>.json) are
// STORE_LAYOUT_OLD with a hint, never an empty environment, for reads and
// writes; no marker is recorded over them.
func TestLayoutOldRefused(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	s := open(t, srv)
	old := `{"holder":"run-0","token":1,"receipt":"preview/pr-1/receipts/run-0.0123456789abcdef.json"}`
	if err := s.b.Put(t.Context(), s.b.prefix+"preview/.leases/pr-1.json", []byte(old)); err != nil {
		t.Fatal(err)
	}
	_, err := s.List(t.Context(), "preview")
	wantLayoutCode(t, "List", err, errcode.StoreLayoutOld)
	e := errcode.As(err)
	if !strings.Contains(e.Message, "preview/.leases/pr-1.json") || !strings.Contains(e.Hint, "sponson migrate") || !strings.Contains(e.Hint, "new prefix") {
		t.Errorf("STORE_LAYOUT_OLD does not name the pointer or say what to do: %s (hint %q)", e.Message, e.Hint)
	}
	if errcode.As(err).Exit() != errcode.ExitRefused {
		t.Errorf("exit %d, want %d", errcode.As(err).Exit(), errcode.ExitRefused)
	}
	// Another environment of the prefix, and a write, are refused too:
	// the prefix is one store.
	_, err = s.Owners(t.Context(), "production", nil)
	wantLayoutCode(t, "Owners of another environment", err, errcode.StoreLayoutOld)
	_, err = s.Acquire(t.Context(), store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-2"}, "run-a", time.Minute)
	wantLayoutCode(t, "Acquire", err, errcode.StoreLayoutOld)
	if objs := objects(t, s); len(objs) != 1 {
		t.Errorf("a refused store was written: %v", objs)
	}
}

// An unreadable marker is STORE_UNAVAILABLE naming it, not a new prefix.
func TestLayoutMarkerUnreadable(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	s := open(t, srv)
	if err := s.b.Put(t.Context(), s.b.prefix+layoutObject, []byte(`not json`)); err != nil {
		t.Fatal(err)
	}
	_, err := s.ReadLease(t.Context(), k1)
	wantLayoutCode(t, "ReadLease", err, errcode.StoreUnavailable)
	e := errcode.As(err)
	if !strings.Contains(e.Message, layoutObject) {
		t.Errorf("message %q does not name the marker", e.Message)
	}
}
