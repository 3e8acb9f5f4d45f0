package ownership

import (
	"context"
	"slices"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

const local = "registry.opentofu.org/hashicorp/local"

// ledgerOwners is an ownership index over ledgers, as a store builds it
// (store.IndexRows): address identities are never rows.
type ledgerOwners []store.Owner

func indexOf(k store.Key, entries []receipt.Entry) ledgerOwners {
	var out ledgerOwners
	for _, row := range store.IndexRows(&receipt.Receipt{Ledger: entries}) {
		out = append(out, store.Owner{Identity: row.Identity, Address: row.Address, CreatedBy: row.CreatedBy, Scope: k.Scope, Stack: k.Stack, RunID: "run-" + k.Scope})
	}
	return out
}

func (l ledgerOwners) Owners(_ context.Context, _ string, ids []string) ([]store.Owner, error) {
	var out []store.Owner
	for _, o := range l {
		if slices.Contains(ids, o.Identity) {
			out = append(out, o)
		}
	}
	return out, nil
}

// Two scopes writing the same content each to its own path have one id
// (the content's SHA-1): neither owns the other's file, and neither is
// refused its own, unless a scheme is declared for the type.
func TestContentHashIdsAreNotIdentities(t *testing.T) {
	t.Parallel()
	main := store.Key{Stack: "s", Environment: "preview", Scope: "main"}
	pr := store.Key{Stack: "s", Environment: "preview", Scope: "pr-7"}
	file := func(path string) Object {
		return Object{Address: "local_file.readme", Provider: local, Type: "local_file", ID: "aaf4c61d",
			Attributes: map[string]any{"id": "aaf4c61d", "filename": path, "content": "hello"}}
	}
	mainLedger, _ := Ledger(nil, []Object{file("main/README")}, Policy{}, nil)
	if got := mainLedger[0].Identity; !IsAddressIdentity(got) || len(mainLedger[0].Keys) != 0 {
		t.Fatalf("local_file is identified by %q (keys %v), want its address alone", got, mainLedger[0].Keys)
	}
	idx := indexOf(main, mainLedger)
	del := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		change("local_file.readme", "local_file", tfjson.Actions{tfjson.ActionDelete}, file("pr-7/README").Attributes, nil, nil),
	}}
	del.ResourceChanges[0].ProviderName = local
	planned, err := Keyed(t.Context(), idx, "preview", del, Policy{}, Identify(del, Policy{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckForeign(t.Context(), idx, pr, planned, ""); err != nil {
		t.Errorf("pr-7's destroy of its own file is refused: %v", err)
	}
	if NeedsIntentLease(planned) || len(Identities(planned)) != 0 {
		t.Errorf("an address-owned change is matched against the index: %v", Identities(planned))
	}

	// Declared by filename in the environment: the same path is the same
	// file, whichever scope writes it; another path is not.
	declared := Policy{Declared: map[string][]string{"local_file": {"filename"}}}
	mainLedger, _ = Ledger(nil, []Object{file("shared/README")}, declared, nil)
	idx = indexOf(main, mainLedger)
	for path, want := range map[string]bool{"shared/README": true, "pr-7/README": false} {
		create := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
			change("local_file.readme", "local_file", tfjson.Actions{tfjson.ActionCreate}, nil, map[string]any{"filename": path, "content": "hello"}, map[string]any{"id": true}),
		}}
		create.ResourceChanges[0].ProviderName = local
		planned, err := Keyed(t.Context(), idx, "preview", create, declared, Identify(create, declared))
		if err != nil {
			t.Fatal(err)
		}
		_, err = CheckForeign(t.Context(), idx, pr, planned, "")
		if got := errcode.Is(err, errcode.OwnedByOtherScope); got != want {
			t.Errorf("a create of %s by pr-7: refused %v, want %v (%v)", path, got, want, err)
		}
	}
}

// The environment's declared scheme wins over a scope's policy; the
// provider's own identity wins over both.
func TestSchemeOrder(t *testing.T) {
	t.Parallel()
	attrs := map[string]any{"id": "x", "name": "n", "path": "p"}
	pol := Policy{Identity: map[string][]string{"t": {"name"}}, Declared: map[string][]string{"t": {"path"}}}
	if id, _ := pol.Of("p", "t", "t.a", attrs, nil, nil); id != `p|t|path="p"` {
		t.Errorf("declared and scope scheme: %s, want the declared one", id)
	}
	if id, _ := (Policy{Identity: pol.Identity}).Of("p", "t", "t.a", attrs, nil, nil); id != `p|t|name="n"` {
		t.Errorf("scope scheme alone: %s", id)
	}
	if id, _ := pol.Of("p", "t", "t.a", attrs, nil, map[string]any{"name": "n"}); id != `p|t|identity={"name":"n"}` {
		t.Errorf("with a provider identity: %s", id)
	}
	if id, _ := (Policy{}).Of("p", "time_static", "time_static.t", map[string]any{"id": "2026-12-01T21:00:00Z"}, nil, nil); id != store.AddressIdentity("p", "time_static", "time_static.t") {
		t.Errorf("a timestamp id: %s, want the address identity", id)
	}
}

// A replacement whose new id is unknown until apply, in a successor: the
// old object is the predecessor's, which the late check must not hold
// against the run; a new identity another scope owns is reported naming
// both scopes, without claiming that nothing was written.
func TestCheckLate(t *testing.T) {
	t.Parallel()
	pr := store.Key{Stack: "s", Environment: "preview", Scope: "pr-3"}
	branch := store.Key{Stack: "s", Environment: "preview", Scope: "branch-x"}
	other := store.Key{Stack: "s", Environment: "preview", Scope: "main"}
	old := Object{Address: "terraform_data.d", Provider: "terraform.io/builtin/terraform", Type: "terraform_data", ID: "old"}
	branchLedger, _ := Ledger(nil, []Object{old}, Policy{}, nil)
	taken := Object{Address: "terraform_data.e", Provider: old.Provider, Type: old.Type, ID: "taken"}
	otherLedger, _ := Ledger(nil, []Object{taken}, Policy{}, nil)
	idx := append(indexOf(branch, branchLedger), indexOf(other, otherLedger)...)

	replace := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		change("terraform_data.d", "terraform_data", tfjson.Actions{tfjson.ActionDelete, tfjson.ActionCreate}, map[string]any{"id": "old"}, map[string]any{}, map[string]any{"id": true}),
	}}
	replace.ResourceChanges[0].ProviderName = old.Provider
	planned, err := Keyed(t.Context(), idx, "preview", replace, Policy{}, Identify(replace, Policy{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckForeign(t.Context(), idx, pr, planned, branch.Scope); err != nil {
		t.Fatalf("the foreign check of the successor: %v", err)
	}
	created := old
	created.ID = "new"
	after, _ := Ledger(nil, []Object{created}, Policy{}, nil)
	if hit, err := CheckLate(t.Context(), idx, pr, planned, after, branch.Scope); hit != nil || err != nil {
		t.Errorf("the new object of a successor's replacement: %v, %v", hit, err)
	}
	created.ID = "taken"
	after, _ = Ledger(nil, []Object{created}, Policy{}, nil)
	hit, _ := CheckLate(t.Context(), idx, pr, planned, after, branch.Scope)
	e := errcode.As(hit)
	if !errcode.Is(hit, errcode.OwnedByOtherScope) || !strings.Contains(e.Message, "scope main owns") || strings.Contains(e.Message, "nothing was written") {
		t.Errorf("a new identity main owns: %v", hit)
	}
}

// A `moved` block keeps how an object owned by its address came to be
// owned.
func TestLedgerFollowsAMoveOfAnAddressOwnedObject(t *testing.T) {
	t.Parallel()
	o := Object{Address: "time_static.a", Provider: "p", Type: "time_static", ID: "2026-12-01T21:00:00Z"}
	first, _ := Ledger(nil, []Object{o}, Policy{}, nil)
	first[0].CreatedBy = receipt.CreatedByAdopted
	o.Address = "time_static.b"
	moves := Moves(&tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{{Address: "time_static.b", PreviousAddress: "time_static.a", Type: "time_static", ProviderName: "p",
		Mode: tfjson.ManagedResourceMode, Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionNoop}}}}})
	second, notes := Ledger(&receipt.Receipt{Ledger: first}, []Object{o}, Policy{}, moves)
	if second[0].CreatedBy != receipt.CreatedByAdopted || len(notes) != 1 {
		t.Errorf("after the move: created by %s, notes %v; want adopted and one note", second[0].CreatedBy, notes)
	}
}
