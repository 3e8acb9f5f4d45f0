package scopeedit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

const provider = "terraform.io/builtin/terraform"

// stateOf is a state of lineage with one terraform_data instance per id.
func stateOf(lineage string, serial int, ids ...string) []byte {
	var inst []string
	for _, id := range ids {
		inst = append(inst, fmt.Sprintf(`{"index_key":%q,"attributes":{"id":%q}}`, id, id))
	}
	return fmt.Appendf(nil, `{"version":4,"lineage":%q,"serial":%d,"resources":[{"mode":"managed","type":"terraform_data","name":"x","provider":"provider[\"%s\"]","instances":[%s]}]}`,
		lineage, serial, provider, strings.Join(inst, ","))
}

// applied writes state and a receipt whose ledger is its objects into k,
// as an apply would leave them.
func applied(t *testing.T, st store.Store, k store.Key, state []byte) {
	t.Helper()
	ctx := t.Context()
	g, err := st.Acquire(ctx, k, "run-apply", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Release(ctx, g.Lease); err != nil {
			t.Error(err)
		}
	}()
	objs, err := ownership.StateObjects(state)
	if err != nil {
		t.Fatal(err)
	}
	ledger, _ := ownership.Ledger(nil, objs, ownership.Policy{}, nil)
	rec := receipt.Next(receipt.First(k.Stack, k.Environment, k.Scope), receipt.Run{RunID: "run-apply", Command: "apply", Status: receipt.StatusApplied})
	rec.Ledger = ledger
	if err := st.WriteState(ctx, g.Lease, state); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteReceipt(ctx, g.Lease, rec); err != nil {
		t.Fatal(err)
	}
}

func opts(st scopeedit.Store, k store.Key, runID string) scopeedit.Options {
	return scopeedit.Options{Store: st, Key: k, RunID: runID, Actor: "alice", Lease: lease.Config{TTL: time.Minute}, Approval: unprotected(k.Environment)}
}

// unprotected is the approval of an edit in env, declared unprotected.
func unprotected(env string) scopeedit.Approval {
	a, err := scopeedit.Approve(environments.Environment{Name: env}, "edit", "")
	if err != nil {
		panic(err)
	}
	return a
}

// An edit that fails writes nothing; one that succeeds writes the state,
// then the receipt, under its own lease, which it releases.
func TestEditWritesAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
	applied(t, st, k, stateOf("L", 1, "a"))
	refused := errors.New("refused")
	_, err = scopeedit.Edit(ctx, opts(st, k, "run-edit"), func(_ context.Context, s *scopeedit.Scope) (scopeedit.Change, error) {
		if s.Latest == nil || s.Latest.RunID != "run-apply" || !strings.Contains(string(s.State), `"lineage":"L"`) {
			t.Errorf("the edit found %+v and %s", s.Latest, s.State)
		}
		return scopeedit.Change{State: []byte(`{}`), Receipt: s.Next("x", receipt.StatusApplied)}, refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("Edit: %v, want the edit's error", err)
	}
	if rec, _ := st.LatestReceipt(ctx, k); rec.RunID != "run-apply" {
		t.Errorf("a failed edit wrote receipt %s", rec.RunID)
	}
	c, err := scopeedit.Edit(ctx, opts(st, k, "run-edit"), func(_ context.Context, s *scopeedit.Scope) (scopeedit.Change, error) {
		return scopeedit.Change{Receipt: s.Next("touch", receipt.StatusUnchanged)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := st.LatestReceipt(ctx, k)
	if rec.RunID != "run-edit" || rec.Actor != "alice" || rec.Command != "touch" || len(rec.Ledger) != 1 || c.Receipt.RunID != "run-edit" {
		t.Errorf("the edit's receipt: %+v", rec)
	}
	if l, _ := st.ReadLease(ctx, k); l.Live(time.Now()) {
		t.Errorf("the edit's lease is still held: %+v", l)
	}
}

// An edit waits for nobody by default: a run holding the lease refuses it.
func TestEditRefusedWhileARunHoldsTheLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
	if _, err := st.Acquire(ctx, k, "run-busy", time.Hour); err != nil {
		t.Fatal(err)
	}
	_, err = scopeedit.Edit(ctx, opts(st, k, "run-edit"), func(context.Context, *scopeedit.Scope) (scopeedit.Change, error) {
		t.Error("the edit ran without the lease")
		return scopeedit.Change{}, nil
	})
	if !errcode.Is(err, errcode.LockHeld) {
		t.Errorf("Edit under another run's lease: %v, want LOCK_HELD", err)
	}
}

// state rm as an edit: the instance leaves the state and the ledger, and is
// listed as released.
func TestEditStateRemoves(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
	applied(t, st, k, stateOf("L", 3, "a", "b"))
	target, _ := tfstate.ParseAddr(`terraform_data.x["b"]`)
	var warned []string
	c, err := scopeedit.Edit(ctx, opts(st, k, "run-rm"), scopeedit.EditState("state rm", func(w string) { warned = append(warned, w) },
		func(d tfstate.Doc) (map[string]string, error) { return d.Remove([]tfstate.Addr{target}) }))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Receipt.Ledger) != 1 || c.Receipt.Ledger[0].Address != `terraform_data.x["a"]` || len(c.Receipt.Released) != 1 || len(warned) != 1 {
		t.Errorf("ledger %+v, released %+v, warnings %q", c.Receipt.Ledger, c.Receipt.Released, warned)
	}
	state, _ := st.ReadState(ctx, k)
	if m, _ := tfstate.ReadMeta(state); m.Serial != 4 || strings.Contains(string(state), `"b"`) {
		t.Errorf("the state after rm (serial %d):\n%s", m.Serial, state)
	}
}

// state push as an edit: the rule of lineage and serial, another scope's
// objects refused, the ledger following the state pushed.
func TestPush(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mine := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
	theirs := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-2"}
	applied(t, st, mine, stateOf("L", 5, "a", "b"))
	applied(t, st, theirs, stateOf("M", 1, "z"))
	push := func(state []byte) (scopeedit.Change, error) {
		return scopeedit.Edit(ctx, opts(st, mine, "run-push"), scopeedit.Push("state push", ownership.Declaration{}, state, func(string) {}))
	}
	for name, tc := range map[string]struct {
		state []byte
		code  errcode.Code
	}{
		"another lineage":     {stateOf("M", 9, "a"), errcode.Usage},
		"an older serial":     {stateOf("L", 4, "a"), errcode.Usage},
		"another scope's id":  {stateOf("L", 5, "a", "z"), errcode.OwnedByOtherScope},
		"a document not JSON": {[]byte("{"), errcode.Usage},
	} {
		if _, err := push(tc.state); !errcode.Is(err, tc.code) {
			t.Errorf("%s: %v, want %s", name, err, tc.code)
		}
	}
	if rec, _ := st.LatestReceipt(ctx, mine); rec.RunID != "run-apply" {
		t.Fatalf("a refused push wrote receipt %s", rec.RunID)
	}
	c, err := push(stateOf("L", 5, "a", "c"))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]receipt.Entry{}
	for _, e := range c.Receipt.Ledger {
		by[e.Address] = e
	}
	if len(by) != 2 || by[`terraform_data.x["a"]`].CreatedBy != receipt.CreatedBySponson || by[`terraform_data.x["c"]`].CreatedBy != receipt.CreatedByAdopted {
		t.Errorf("the ledger after push: %+v", c.Receipt.Ledger)
	}
	if len(c.Receipt.Released) != 1 || c.Receipt.Released[0].Address != `terraform_data.x["b"]` {
		t.Errorf("released after push: %+v", c.Receipt.Released)
	}
	state, _ := st.ReadState(ctx, mine)
	if m, _ := tfstate.ReadMeta(state); m.Serial != 6 || m.Lineage != "L" {
		t.Errorf("the pushed state is %+v, want lineage L, serial 6", m)
	}
}
