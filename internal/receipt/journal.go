package receipt

import (
	"encoding/json"
	"slices"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Journal is what a run under way records during its apply after its
// checkpoint: the completions the engine reported (docs/design.md §2.4
// "Intent"). It is kept apart from the checkpoint so that a write during
// the apply carries this run's completions, in proportion to its changes,
// and not the scope's whole ledger again: at 1,000 creates a checkpoint is
// 594 KB, the journal of all of them 98 KB. A reader joins the two
// (Joined); a journal of another run than the checkpoint's is stale and
// read as empty.
type Journal struct {
	Version   int          `json:"version"`
	RunID     string       `json:"runId"`
	Completed []Completion `json:"completedCreates"`
}

// JournalVersion is the journal format this build writes and reads.
const JournalVersion = 1

// MarshalJournal renders the journal of run runID.
func MarshalJournal(runID string, completed []Completion) ([]byte, error) {
	return json.Marshal(Journal{Version: JournalVersion, RunID: runID, Completed: completed})
}

// ParseJournal reads a journal, with the errors of a receipt: a newer
// format is RECEIPT_VERSION, a damaged one RECEIPT_CORRUPT.
func ParseJournal(data []byte) (*Journal, error) {
	var j Journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "the journal of completions is not valid")
	}
	switch {
	case j.Version > JournalVersion:
		return nil, errcode.New(errcode.ReceiptVersion, "journal version %d is not supported (this sponson reads up to %d)", j.Version, JournalVersion)
	case j.Version < 1 || j.RunID == "":
		return nil, errcode.New(errcode.ReceiptCorrupt, "the journal of completions has no version or no run id")
	}
	return &j, nil
}

// Joined returns r with the completions of j when j is the journal of r's
// run and r is a checkpoint (StatusRunning); r itself otherwise. A finished
// run's receipt already holds every completion of its run. A completion r
// holds already is not added again: a checkpoint written anew with its
// journal joined (a re-index of a killed run's scope) keeps its run.
func (r *Receipt) Joined(j *Journal) *Receipt {
	if r == nil || j == nil || r.Status != StatusRunning || j.RunID != r.RunID || len(j.Completed) == 0 {
		return r
	}
	c := *r
	held := make(map[Completion]bool, len(r.Completed))
	for _, done := range r.Completed {
		held[done] = true
	}
	c.Completed = slices.Clip(r.Completed)
	for _, done := range j.Completed {
		if !held[done] {
			c.Completed = append(c.Completed, done)
		}
	}
	return &c
}
