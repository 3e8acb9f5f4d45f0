package s3store

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/s3test"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

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
	o, err := writer.b.Get(t.Context(), writer.b.prefix+"preview/.owners.log.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Seq     int64          `json:"seq"`
		Pending map[string]any `json:"pending"`
	}
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
	if err := s.b.Put(t.Context(), s.b.prefix+layoutObject, []byte(`{"layout":2}`)); err != nil {
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
