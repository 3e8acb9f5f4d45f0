package adopt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// A scope with state or a ledger is refused; a fresh or emptied one is not.
func TestRefuseOccupied(t *testing.T) {
	t.Parallel()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	fresh := store.Key{Stack: "acme/app", Environment: "preview", Scope: "main"}
	if err := inEdit(t, st, fresh, refuseOccupied); err != nil {
		t.Errorf("a fresh scope: %v", err)
	}
	writeState := func(state string) {
		g, err := st.Acquire(ctx, fresh, "run-a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := st.Release(ctx, g.Lease); err != nil {
				t.Error(err)
			}
		}()
		if err := st.WriteState(ctx, g.Lease, []byte(state)); err != nil {
			t.Fatal(err)
		}
	}
	writeState(`{"version":4,"resources":[]}`)
	if err := inEdit(t, st, fresh, refuseOccupied); err != nil {
		t.Errorf("a scope with an empty state (destroyed): %v", err)
	}
	writeState(`{"version":4,"resources":[{"mode":"managed","type":"terraform_data","name":"x","instances":[{"attributes":{"id":"1"}}]}]}`)
	if err := inEdit(t, st, fresh, refuseOccupied); !errcode.Is(err, errcode.ScopeHasState) {
		t.Errorf("a scope with resources in its state: %v, want SCOPE_HAS_STATE", err)
	}
	owned := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
	g2, err := st.Acquire(ctx, owned, "run-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteReceipt(ctx, g2.Lease, storetest.NewReceipt(owned, "run-b", 1)); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, g2.Lease); err != nil {
		t.Fatal(err)
	}
	if err := inEdit(t, st, owned, refuseOccupied); !errcode.Is(err, errcode.ScopeHasState) {
		t.Errorf("a scope with a ledger: %v, want SCOPE_HAS_STATE", err)
	}
}

// Resources another scope owns are refused, naming it; the scope's own and
// unowned ones are not.
func TestRefuseForeign(t *testing.T) {
	t.Parallel()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	other := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
	g, err := st.Acquire(ctx, other, "run-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := storetest.NewReceipt(other, "run-b", 0)
	theirs := ownership.Object{Address: "terraform_data.a", Provider: "terraform.io/builtin/terraform", Type: "terraform_data", ID: "uuid-1"}
	theirFile := ownership.Object{Address: "local_file.readme", Provider: "registry.opentofu.org/hashicorp/local", Type: "local_file", ID: "da39a3ee",
		Attributes: map[string]any{"filename": "pr-1/README"}}
	r.Ledger, _ = ownership.Ledger(nil, []ownership.Object{theirs, theirFile}, ownership.Policy{}, nil)
	if err := st.WriteReceipt(ctx, g.Lease, r); err != nil {
		t.Fatal(err)
	}
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "main"}
	mine := []ownership.Object{
		{Address: "terraform_data.b", Provider: theirs.Provider, Type: "terraform_data", ID: "uuid-2"},
		// Equal contents, one id: owned by address, never foreign.
		{Address: "local_file.readme", Provider: "registry.opentofu.org/hashicorp/local", Type: "local_file", ID: "da39a3ee",
			Attributes: map[string]any{"filename": "main/README"}},
	}
	if err := inEdit(t, st, key, foreign(mine)); err != nil {
		t.Errorf("unowned resources: %v", err)
	}
	theirs.Address = "terraform_data.renamed"
	err = inEdit(t, st, key, foreign(append(mine, theirs)))
	if !errcode.Is(err, errcode.OwnedByOtherScope) {
		t.Fatalf("a resource of pr-1: %v, want OWNED_BY_OTHER_SCOPE", err)
	}
	if e := errcode.As(err); e == nil || !strings.Contains(e.Message, "pr-1") {
		t.Errorf("the refusal does not name the owner: %v", err)
	}
}

// inEdit runs check on key as an adoption's edit does, under the scope's
// lease, and writes nothing.
func inEdit(t *testing.T, st *filestore.Store, key store.Key, check func(*scopeedit.Scope) error) error {
	t.Helper()
	approval, _ := scopeedit.Approve(environments.Environment{Name: key.Environment}, Command, "")
	_, err := scopeedit.Edit(t.Context(), scopeedit.Options{Store: st, Key: key, RunID: "run-check", Lease: lease.Config{TTL: time.Minute}, Approval: approval},
		func(_ context.Context, s *scopeedit.Scope) (scopeedit.Change, error) {
			return scopeedit.Change{}, check(s)
		})
	return err
}

func foreign(objects []ownership.Object) func(*scopeedit.Scope) error {
	return func(s *scopeedit.Scope) error {
		return s.RefuseForeign(context.Background(), ownership.Policy{}, objects, "adopting the state")
	}
}
