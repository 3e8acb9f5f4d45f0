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

// TestUnresolvedPredecessor: a takeover does not begin while the
// predecessor holds creates nobody vouched for, and says where to resolve
// them; once resolved, what it inherits is the owned objects only.
func TestUnresolvedPredecessor(t *testing.T) {
	t.Parallel()
	pred := &receipt.Receipt{Scope: "branch-feat", Ledger: []receipt.Entry{
		{Identity: "x", Address: "a.owned", ID: "1", CreatedBy: receipt.CreatedBySponson},
		{Identity: "intent:a.open", Address: "a.open", CreatedBy: receipt.CreatedByUnresolved},
	}}
	err := refuseUnresolved("pr-1", pred)
	e := errcode.As(err)
	if err == nil || e.Code != errcode.IntentUnresolved || e.Details["scope"] != "branch-feat" {
		t.Fatalf("refusal %v (details %v), want INTENT_UNRESOLVED naming branch-feat", err, e.Details)
	}
	pred.Ledger = pred.Ledger[:1]
	if err := refuseUnresolved("pr-1", pred); err != nil {
		t.Fatalf("a resolved predecessor is refused: %v", err)
	}
	if got := Inherited(pred); len(got) != 1 || got[0].CreatedBy != receipt.CreatedByInherited {
		t.Errorf("inherited %+v", got)
	}
	// An unresolved entry that reached a promise (written before this
	// check existed) moves as a question, never as an owned object.
	pred.Ledger = append(pred.Ledger, receipt.Entry{Identity: "intent:a.open", Address: "a.open", CreatedBy: receipt.CreatedByUnresolved})
	if got := Inherited(pred); len(got) != 2 || got[1].CreatedBy != receipt.CreatedByUnresolved {
		t.Errorf("inherited %+v; want the open create still unresolved", got)
	}
}
