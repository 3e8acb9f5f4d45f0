package scopeedit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
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

	o := scopeedit.Options{Store: st, Key: pr, RunID: "run-resolve", Lease: lease.Config{TTL: time.Minute}, Approval: unprotected(pr.Environment)}
	r := scopeedit.Resolution{Addresses: []string{"terraform_data.db"}, ID: "uuid-main"}
	_, err = scopeedit.Resolve(ctx, o, r)
	if !errcode.Is(err, errcode.OwnedByOtherScope) || !strings.Contains(errcode.As(err).Message, "scope main") {
		t.Fatalf("resolve --id of main's object: %v, want OWNED_BY_OTHER_SCOPE naming main", err)
	}
	if rec, _ := st.LatestReceipt(ctx, pr); rec.RunID != "run-pr" {
		t.Errorf("the refused resolve wrote receipt %s", rec.RunID)
	}
	r.ID = "uuid-mine"
	if _, err := scopeedit.Resolve(ctx, o, r); err != nil {
		t.Errorf("resolve --id of an object no scope owns: %v", err)
	}
}
