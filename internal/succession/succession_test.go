package succession

import (
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// TestDecide covers every state a successor can find, including a
// handover that another pull request of the same head branch holds
// (issue 12 item 5).
func TestDecide(t *testing.T) {
	t.Parallel()
	const branch = "branch-feat"
	ledger := []receipt.Entry{{Identity: "x", Address: "a.b", CreatedBy: receipt.CreatedBySponson}}
	live := &receipt.Receipt{Scope: branch, Ledger: ledger}
	promisedTo := func(s string) *receipt.Receipt {
		return &receipt.Receipt{Scope: branch, Ledger: ledger, Handover: &receipt.Handover{To: s, RunID: "run-" + s}}
	}
	supersededBy := func(s string) *receipt.Receipt {
		return &receipt.Receipt{Scope: branch, RunID: "run-done", SupersededBy: s, Ledger: []receipt.Entry{}}
	}
	inheriting := &receipt.Receipt{Scope: "pr-1", Inheriting: branch}
	for _, c := range []struct {
		name      string
		own, pred *receipt.Receipt
		want      Action
		taken     string // the holder HANDOVER_TAKEN names
	}{
		{"no predecessor", nil, nil, None, ""},
		{"fresh, live branch", nil, live, Start, ""},
		{"fresh, promised to another", nil, promisedTo("pr-2"), None, ""},
		{"fresh, superseded", nil, supersededBy("pr-2"), None, ""},
		{"copied, not promised", inheriting, live, Resume, ""},
		{"copied, promised to me", inheriting, promisedTo("pr-1"), Resume, ""},
		{"copied, finished for me", inheriting, supersededBy("pr-1"), Finish, ""},
		{"copied, promised to another", inheriting, promisedTo("pr-2"), None, "pr-2"},
		{"copied, finished for another", inheriting, supersededBy("pr-2"), None, "pr-2"},
		{"own scope, not inheriting", &receipt.Receipt{Scope: "pr-1"}, promisedTo("pr-2"), None, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := Decide("pr-1", c.own, c.pred)
			if got != c.want {
				t.Errorf("Decide = %v, want %v", got, c.want)
			}
			if c.taken == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			e := errcode.As(err)
			if e == nil || e.Code != errcode.HandoverTaken || e.Details["holder"] != c.taken || e.Details["holderRun"] == "" {
				t.Errorf("err = %v (details %v), want HANDOVER_TAKEN naming %s", err, e, c.taken)
			}
		})
	}
}
