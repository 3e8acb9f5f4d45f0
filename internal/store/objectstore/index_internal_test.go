package objectstore

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The binary owners index reads back what was written, and damage is an
// error (then the cache is ignored), never a wrong index.
func TestOwnersIndexEncoding(t *testing.T) {
	t.Parallel()
	doc := ownersIndex{Version: indexVersion, Scopes: map[string]ownersRow{
		"pr-1": {ETag: "e1", Key: "owners/a.json", RunID: "run-1", Entries: []ownerRow{
			{Identity: "p|t|name=\"a\nb\"", Address: "t.a", CreatedBy: "sponson", Since: 1},
			{Identity: "x", Address: "t.x", CreatedBy: "intent", RunID: "run-0", Since: -5},
		}},
		"main": {ETag: "e2", Entries: []ownerRow{}},
	}}
	data, err := encodeOwnersIndex(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeOwnersIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	got.Scopes = decodedRows(t, got.Scopes)
	if fmt.Sprint(got) != fmt.Sprint(doc) {
		t.Errorf("decoded %+v, want %+v", got, doc)
	}
	for _, bad := range [][]byte{nil, []byte("x"), data[:len(data)/2]} {
		if _, err := decodeOwnersIndex(bad); err == nil {
			t.Errorf("decodeOwnersIndex of %d damaged bytes gave no error", len(bad))
		}
	}
}

// decodedRows is rows with the entries the reader kept in their encoding
// decoded into Entries, as the writer was given them.
func decodedRows(t *testing.T, rows map[string]ownersRow) map[string]ownersRow {
	t.Helper()
	out := make(map[string]ownersRow, len(rows))
	for id, row := range rows {
		if row.raw == nil && row.n != 0 {
			t.Fatalf("row %s was decoded on reading; want its entries kept in their encoding", id)
		}
		entries := []ownerRow{}
		eachRaw(row.raw, nil, func(identity, address, createdBy, run []byte, since int64) {
			entries = append(entries, ownerRow{Identity: string(identity), Address: string(address), CreatedBy: string(createdBy), RunID: string(run), Since: since})
		})
		if len(entries) != row.n {
			t.Fatalf("row %s: %d entries read back, the row says %d", id, len(entries), row.n)
		}
		out[id] = ownersRow{ETag: row.ETag, Key: row.Key, RunID: row.RunID, Entries: entries}
	}
	return out
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
