package objectstore

import (
	"errors"
	"testing"
)

// A lost answer to a conditional write is decided by what a read finds:
// ours, nothing yet, the old version, or someone else's.
func TestResolve(t *testing.T) {
	t.Parallel()
	ours := func(b []byte) bool { return string(b) == "ours" }
	failed := errors.New("connection reset")
	for _, tc := range []struct {
		name    string
		o       Object
		err     error
		ifMatch string
		done    bool
		etag    string
		want    error
	}{
		{name: "ours landed", o: Object{Data: []byte("ours"), ETag: "7"}, ifMatch: "6", done: true, etag: "7"},
		{name: "create not there yet", err: ErrNotFound, ifMatch: "", done: false},
		{name: "replaced object gone", err: ErrNotFound, ifMatch: "6", done: true, want: ErrPrecondition},
		{name: "old version still there", o: Object{Data: []byte("old"), ETag: "6"}, ifMatch: "6", done: false},
		{name: "someone else's", o: Object{Data: []byte("theirs"), ETag: "8"}, ifMatch: "6", done: true, want: ErrPrecondition},
		{name: "someone else created it", o: Object{Data: []byte("theirs"), ETag: "1"}, ifMatch: "", done: true, want: ErrPrecondition},
		{name: "the read failed", err: failed, ifMatch: "6", done: false, want: failed},
	} {
		done, etag, err := Resolve(tc.o, tc.err, tc.ifMatch, ours)
		if done != tc.done || etag != tc.etag || !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: Resolve = %v, %q, %v; want %v, %q, %v", tc.name, done, etag, err, tc.done, tc.etag, tc.want)
		}
	}
}
