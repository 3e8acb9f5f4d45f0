package objectstore

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOwnersLogSince(t *testing.T) {
	t.Parallel()
	l := ownersLog{Seq: 12, Changes: []string{"a", "b", "c"}} // 10, 11, 12
	for _, tc := range []struct {
		n    int64
		want []string
		ok   bool
	}{
		{n: 12, want: []string{}, ok: true},
		{n: 11, want: []string{"c"}, ok: true},
		{n: 9, want: []string{"a", "b", "c"}, ok: true},
		{n: 8, ok: false},  // change 9 is gone
		{n: 13, ok: false}, // ahead of the log: not the log the reader read
	} {
		got, ok := l.since(tc.n)
		if ok != tc.ok || (ok && !slices.Equal(got, tc.want)) {
			t.Errorf("since(%d) = %q, %v; want %q, %v", tc.n, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := (ownersLog{}).since(0); !ok || len(got) != 0 {
		t.Errorf("an empty log's since(0) = %q, %v", got, ok)
	}
}

// A pending mark is dropped only when its pointer no longer has the ETag
// its write was conditional on, however old it is.
func TestPendingMarkDroppedWhenPointerMoved(t *testing.T) {
	t.Parallel()
	s := open(t, newMemBucket(nil))
	if _, err := s.Acquire(t.Context(), k1, "run-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	cur, err := s.readPointer(t.Context(), k1)
	if err != nil {
		t.Fatal(err)
	}
	long := cur.now.Add(-2 * logPendingCheck)
	doc := ownersLog{Pending: map[string]pending{
		"old-still": {Scope: scopeID(k1), Since: long, IfMatch: cur.etag},
		"young":     {Scope: scopeID(k1), Since: cur.now, IfMatch: "gone"},
		"old-moved": {Scope: scopeID(k1), Since: long, IfMatch: "gone"},
	}}
	if err := s.dropOver(t.Context(), "preview", &doc, cur.now); err != nil {
		t.Fatal(err)
	}
	var left []string
	for tok := range doc.Pending {
		left = append(left, tok)
	}
	slices.Sort(left)
	if diff := cmp.Diff([]string{"old-still", "young"}, left); diff != "" {
		t.Errorf("marks left (-want +got):\n%s", diff)
	}
}
