package s3store

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/s3test"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
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

// A warm reader sees an ownership write that landed after it last read the
// log but before the write's end was recorded: the log is unchanged then (a
// 304), and only the pending mark makes the reader read that pointer.
func TestOwnersSeesPendingWrite(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	var hook atomic.Pointer[func(land func())]
	srv.Wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if f := hook.Load(); f != nil && isPointerPut(r) {
				(*f)(func() { h.ServeHTTP(w, r) })
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	writer, reader := open(t, srv), open(t, srv)
	g, err := writer.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(k1, "run-a", 1)); err != nil {
		t.Fatal(err)
	}
	owners := func() []string {
		t.Helper()
		got, err := reader.Owners(t.Context(), "preview", nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range got {
			ids = append(ids, o.Identity)
		}
		return ids
	}
	before := owners()
	r := storetest.NewReceipt(k1, "run-a", 3)
	var want []string
	for _, e := range r.Ledger {
		want = append(want, e.Identity)
	}
	var inFlight, landed []string
	f := func(land func()) {
		hook.Store(nil)
		inFlight = owners() // begun, not landed
		land()
		landed = owners() // landed, not ended
	}
	hook.Store(&f)
	if err := writer.WriteReceipt(t.Context(), g.Lease, r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, inFlight); diff != "" {
		t.Errorf("Owners while the write was in flight (-before +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, landed); diff != "" {
		t.Errorf("Owners after the PUT landed, before its end (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, owners()); diff != "" {
		t.Errorf("Owners after the end (-want +got):\n%s", diff)
	}
	o, err := writer.get(t.Context(), writer.ownersLogKey("preview"))
	if err != nil {
		t.Fatal(err)
	}
	var doc ownersLog
	if err := json.Unmarshal(o.Data, &doc); err != nil || doc.Seq != 2 || len(doc.Pending) != 0 {
		t.Errorf("the log after two ownership writes: %s, %v; want seq 2 and nothing pending", o.Data, err)
	}
}

// A layout 2 prefix (a sponson that does not log may still write it) is
// read by listing: its writes leave no log behind.
func TestLayoutTwoIsListed(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, nil)
	s := open(t, srv)
	if err := s.put(t.Context(), s.prefix+layoutObject, []byte(`{"layout":2}`)); err != nil {
		t.Fatal(err)
	}
	g, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(k1, "run-a", 2)); err != nil {
		t.Fatal(err)
	}
	if _, ok := objects(t, s)[k1.Environment+"/.owners.log.json"]; ok {
		t.Error("a layout 2 prefix got an ownership log")
	}
	got, err := open(t, srv).Owners(t.Context(), "preview", nil)
	if err != nil || len(got) != 2 || got[0].Scope != k1.Scope {
		t.Errorf("Owners = %+v, %v", got, err)
	}
}

// A pending mark is dropped only when its pointer no longer has the ETag
// its write was conditional on, however old it is.
func TestPendingMarkDroppedWhenPointerMoved(t *testing.T) {
	t.Parallel()
	s := open(t, s3test.Start(t, nil))
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

// An owners index as of a state of the log reads that state back; one
// without it reads back without it.
func TestOwnersIndexLogState(t *testing.T) {
	t.Parallel()
	rows := map[string]ownersRow{"acme_2fapp/pr-1": {ETag: "e1", Key: "owners/a.json", RunID: "run-1", Entries: []ownerRow{{Identity: "x", Address: "t.x", CreatedBy: "sponson", Since: 1}}}}
	for _, st := range []logState{
		{ok: true, epoch: "E", seq: 42, pending: []string{"acme_2fapp/pr-2"}},
		{},
	} {
		data, err := encodeOwnersIndex(ownersIndex{Version: indexVersion, Scopes: rows, Log: st})
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeOwnersIndex(data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st, got.Log, cmp.AllowUnexported(logState{})); diff != "" {
			t.Errorf("log state (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(rows, decodedRows(t, got.Scopes), cmp.AllowUnexported(ownersRow{})); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
	}
}
