package scoperun

import (
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// `sponson resolve --id` with the id of an object another scope owns is
// refused before anything is written: the next apply would import it and
// two scopes would own it.
func TestResolveRefusesAnotherScopesID(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const provider = "terraform.io/builtin/terraform"
	write := func(k store.Key, r *receipt.Receipt) {
		g, err := st.Acquire(ctx, k, "run-w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		r.Version, r.Stack, r.Environment, r.Scope, r.Status = receipt.Version, k.Stack, k.Environment, k.Scope, receipt.StatusApplied
		if err := st.WriteReceipt(ctx, g.Lease, r); err != nil {
			t.Fatal(err)
		}
		if err := st.Release(ctx, g.Lease); err != nil {
			t.Fatal(err)
		}
	}
	main := store.Key{Stack: "acme/app", Environment: "preview", Scope: "main"}
	owned, _ := ownership.Ledger(nil, []ownership.Object{{Address: "terraform_data.db", Provider: provider, Type: "terraform_data", ID: "uuid-main"}}, ownership.Policy{}, nil)
	write(main, &receipt.Receipt{RunID: "run-main", Ledger: owned})
	pr := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
	write(pr, &receipt.Receipt{RunID: "run-pr", Status: receipt.StatusFailed, Ledger: []receipt.Entry{{
		Identity: ownership.IntentIdentity(provider, "terraform_data", "terraform_data.db"), Address: "terraform_data.db",
		Provider: provider, Type: "terraform_data", CreatedBy: receipt.CreatedByUnresolved,
	}}})

	o := ResolveOptions{Store: st, Key: pr, RunID: "run-resolve", Lease: lease.Config{TTL: time.Minute}, Addresses: []string{"terraform_data.db"}, ID: "uuid-main"}
	_, err = Resolve(ctx, o)
	if !errcode.Is(err, errcode.OwnedByOtherScope) || !strings.Contains(errcode.As(err).Message, "scope main") {
		t.Fatalf("resolve --id of main's object: %v, want OWNED_BY_OTHER_SCOPE naming main", err)
	}
	if rec, _ := st.LatestReceipt(ctx, pr); rec.RunID != "run-pr" {
		t.Errorf("the refused resolve wrote receipt %s", rec.RunID)
	}
	o.ID = "uuid-mine"
	if _, err := Resolve(ctx, o); err != nil {
		t.Errorf("resolve --id of an object no scope owns: %v", err)
	}
}

// An entry left unresolved is not vouched for by whatever a person puts at
// its address later (`state mv`, an import): it stays unresolved.
func TestSettleKeepsUnresolvedWhenAnotherObjectIsAtItsAddress(t *testing.T) {
	t.Parallel()
	e := receipt.Entry{Address: "terraform_data.x", Type: "terraform_data", CreatedBy: receipt.CreatedByUnresolved}
	prev := &receipt.Receipt{RunID: "run-1", Ledger: []receipt.Entry{e}}
	s := newSettlement(&runner{}, t.Context(), nil, prev, nil, map[string]string{"terraform_data.x": "moved-here"})
	s.settleOne(e)
	if len(s.out) != 1 || s.out[0].Outcome != receipt.SettledUnresolved || len(s.unresolved) != 1 {
		t.Fatalf("settled %+v, unresolved %v; want it unresolved", s.out, s.unresolved)
	}
	// An intent of a run that stopped before its receipt is vouched for by
	// the new object the engine wrote at its address.
	e.CreatedBy = receipt.CreatedByIntent
	prev.Ledger = []receipt.Entry{e}
	s = newSettlement(&runner{}, t.Context(), nil, prev, nil, map[string]string{"terraform_data.x": "new"})
	s.settleOne(e)
	if s.out[0].Outcome != receipt.SettledClaimed {
		t.Errorf("an intent with a new object at its address: %+v, want claimed", s.out[0])
	}
}
