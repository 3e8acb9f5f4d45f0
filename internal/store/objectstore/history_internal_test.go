package objectstore

import (
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// Of a run's two bodies the one the pointer names is kept, else the newer;
// a body retired since the listing (not read) is none; runs come oldest
// first.
func TestOneReceiptPerRun(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := func(id, status string, start int) *receipt.Receipt {
		return &receipt.Receipt{RunID: id, Status: status, StartedAt: at.Add(time.Duration(start) * time.Minute)}
	}
	checkpoint, final := rec("run-b", receipt.StatusRunning, 1), rec("run-b", receipt.StatusApplied, 1)
	stale, current := rec("run-c", receipt.StatusApplied, 2), rec("run-c", receipt.StatusFailed, 2)
	first := rec("run-z", receipt.StatusApplied, 0)
	got := oneReceiptPerRun([]historyBody{
		{name: "receipts/run-b.1.json", at: at.Add(time.Minute), r: checkpoint},
		{name: "receipts/run-b.2.json", at: at.Add(2 * time.Minute), r: final},
		{name: "receipts/run-c.2.json", at: at.Add(4 * time.Minute), r: stale},
		{name: "receipts/run-c.1.json", at: at.Add(3 * time.Minute), r: current, current: true},
		{name: "receipts/run-d.1.json", at: at.Add(5 * time.Minute)},
		{name: "receipts/run-z.1.json", at: at, r: first},
	})
	want := []*receipt.Receipt{first, final, current}
	if len(got) != len(want) {
		t.Fatalf("%d receipts, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("receipt %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
