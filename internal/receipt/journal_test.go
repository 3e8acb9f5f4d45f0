package receipt

import (
	"slices"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// TestJournalJoined: a checkpoint joins its own run's journal, after what
// it recorded itself and without what it holds already; another run's
// journal, or a receipt that is no checkpoint, leaves the receipt as it is.
func TestJournalJoined(t *testing.T) {
	own := []Completion{{Address: "a", ID: "1", Action: "create"}}
	data, err := MarshalJournal("run-2", []Completion{{Address: "b", ID: "2", Action: "create"}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := ParseJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	cp := &Receipt{RunID: "run-2", Status: StatusRunning, Completed: own}
	got := cp.Joined(j)
	want := []Completion{own[0], {Address: "b", ID: "2", Action: "create"}}
	if !slices.Equal(got.Completed, want) {
		t.Errorf("joined: %+v, want %+v", got.Completed, want)
	}
	if !slices.Equal(cp.Completed, own) {
		t.Errorf("Joined changed the receipt it was given: %+v", cp.Completed)
	}
	if again := got.Joined(j); !slices.Equal(again.Completed, want) {
		t.Errorf("a checkpoint written again with its journal joined, joined once more: %+v, want %+v", again.Completed, want)
	}
	for _, r := range []*Receipt{
		{RunID: "run-1", Status: StatusRunning, Completed: own},
		{RunID: "run-2", Status: StatusApplied, Completed: own},
	} {
		if got := r.Joined(j); got != r {
			t.Errorf("receipt of %s (%s) joined a journal of run-2: %+v", r.RunID, r.Status, got.Completed)
		}
	}
}

func TestParseJournalErrors(t *testing.T) {
	for _, tc := range []struct {
		data string
		want errcode.Code
	}{
		{`{"version":2,"runId":"r","completedCreates":[]}`, errcode.ReceiptVersion},
		{`{"runId":"r","completedCreates":[]}`, errcode.ReceiptCorrupt},
		{`{"version":1,"completedCreates":[]}`, errcode.ReceiptCorrupt},
		{`{"version":1,"runId":"r","completedCreates":{}}`, errcode.ReceiptCorrupt},
		{`not json`, errcode.ReceiptCorrupt},
	} {
		if _, err := ParseJournal([]byte(tc.data)); !errcode.Is(err, tc.want) {
			t.Errorf("ParseJournal(%s) = %v, want %s", tc.data, err, tc.want)
		}
	}
}
