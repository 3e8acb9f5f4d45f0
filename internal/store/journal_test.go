package store

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// latestScope is a scope's latest receipt and its journal record, as a
// store would return them; records counts the reads of the journal.
type latestScope struct {
	rec     *receipt.Receipt
	journal []byte
	records int
}

func (s *latestScope) LatestReceipt(context.Context, Key) (*receipt.Receipt, error) {
	return s.rec, nil
}

func (s *latestScope) ReadRecord(_ context.Context, _ Key, name string) ([]byte, error) {
	s.records++
	if name != JournalRecord {
		return nil, nil
	}
	return s.journal, nil
}

// TestLatest: a checkpoint is read with its journal, a finished receipt
// without reading it, and a damaged journal is RECEIPT_CORRUPT naming the
// scope it belongs to (the conformance suite checks the stores' side:
// storetest "Receipts/CheckpointJournal").
func TestLatest(t *testing.T) {
	ctx := context.Background()
	key := Key{Stack: "net", Environment: "dev", Scope: "pr-7"}
	journal, err := receipt.MarshalJournal("run-2", []receipt.Completion{{Address: "a", ID: "1", Action: "create"}})
	if err != nil {
		t.Fatal(err)
	}

	running := &latestScope{rec: &receipt.Receipt{RunID: "run-2", Status: receipt.StatusRunning}, journal: journal}
	got, err := Latest(ctx, running, key)
	if err != nil || len(got.Completed) != 1 || got.Completed[0].Address != "a" {
		t.Errorf("a checkpoint with its journal: %+v %v, want the journal's completion", got, err)
	}

	finished := &latestScope{rec: &receipt.Receipt{RunID: "run-2", Status: receipt.StatusApplied}, journal: journal}
	if got, err := Latest(ctx, finished, key); err != nil || len(got.Completed) != 0 || finished.records != 0 {
		t.Errorf("a finished receipt: %+v %v, %d journal reads, want it as stored and no read", got, err, finished.records)
	}

	damaged := &latestScope{rec: &receipt.Receipt{RunID: "run-2", Status: receipt.StatusRunning}, journal: []byte("{")}
	_, err = Latest(ctx, damaged, key)
	e := errcode.As(err)
	if e == nil || e.Code != errcode.ReceiptCorrupt || !strings.Contains(e.Message, key.String()) || e.Details["scope"] != key.String() {
		t.Errorf("a damaged journal: %v, want RECEIPT_CORRUPT naming %s", err, key)
	}
}
