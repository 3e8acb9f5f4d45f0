package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/stackmove"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// testStackMove: a scope moves to another stack (stackmove.Move, the move
// of a renamed stack's state) through the contract alone: the new stack's
// scope gets the state, the ledger and the records, the old one keeps
// neither state nor ledger, the ownership index names the new stack alone,
// and both leases are free again. A second move finds it done.
func testStackMove(t *testing.T, x *suite) {
	ctx := t.Context()
	from := key(preview, "main")
	to := store.Key{Stack: otherStack, Environment: preview, Scope: "main"}
	state := fmt.Appendf(nil, `{"version":4,"lineage":"L","serial":2,"resources":[`+
		`{"mode":"managed","type":"sponson_scope","name":"this","provider":"provider[\"registry.terraform.io/sponson/sponson\"]","instances":[{"attributes":{"id":"preview/main","name":"main","stack":%q}}]},`+
		`{"mode":"managed","type":"terraform_data","name":"x","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"index_key":0,"attributes":{"id":"0"}},{"index_key":1,"attributes":{"id":"1"}}]}]}`, Stack)
	g := x.acquire(t, from, "run-apply")
	rec := NewReceipt(from, "run-apply", 2)
	if err := x.s.WriteState(ctx, g.Lease, state); err != nil {
		t.Fatalf("WriteState: %v", err)
	}
	if err := x.s.WriteRecord(ctx, g.Lease, "scope", []byte(`{"name":"main"}`)); err != nil {
		t.Fatalf("WriteRecord: %v", err)
	}
	if err := x.s.WriteReceipt(ctx, g.Lease, rec); err != nil {
		t.Fatalf("WriteReceipt: %v", err)
	}
	x.release(t, g.Lease)

	approval, err := scopeedit.Approve(environments.Environment{Name: preview}, "apply", "")
	if err != nil {
		t.Fatal(err)
	}
	o := stackmove.Options{Store: x.s, Environment: preview, Scope: "main", From: Stack, To: otherStack,
		RunID: "run-move", Approval: approval, Lease: lease.Config{TTL: x.ttl}}
	res, err := stackmove.Move(ctx, o)
	if err != nil {
		t.Fatalf("Move: %v", err)
	}
	if res.Action != stackmove.Start || res.Resources != 2 {
		t.Errorf("Move = %+v, want a start of 2 resources", res)
	}

	checkMoved(t, x, from, to, rec)
	o.RunID = "run-again"
	if again, err := stackmove.Move(ctx, o); err != nil || again.Action != stackmove.Done {
		t.Errorf("a second Move = %+v, %v; want done", again, err)
	}
}

// checkMoved checks the end of a move from from to to of the scope whose
// receipt was rec.
func checkMoved(t *testing.T, x *suite, from, to store.Key, rec *receipt.Receipt) {
	t.Helper()
	ctx := t.Context()
	moved := x.latest(t, to)
	if moved == nil || moved.MovedFrom != Stack || len(moved.Ledger) != 2 || moved.Ledger[0].Identity != rec.Ledger[0].Identity {
		t.Errorf("the new stack's receipt: %+v", moved)
	}
	if s := string(x.state(t, to)); !strings.Contains(s, `"stack": "`+otherStack+`"`) || !strings.Contains(s, `"lineage": "L"`) || strings.Contains(s, Stack) {
		t.Errorf("the new stack's state:\n%s", s)
	}
	if r, err := x.s.ReadRecord(ctx, to, "scope"); err != nil || string(r) != `{"name":"main"}` {
		t.Errorf("the new stack's scope record: %s, %v", r, err)
	}
	old := x.latest(t, from)
	if old == nil || old.MovedTo != otherStack || len(old.Ledger) != 0 {
		t.Errorf("the old stack's receipt: %+v", old)
	}
	if n, err := stackmove.Resources(x.state(t, from)); err != nil || n != 0 {
		t.Errorf("the old stack's state holds %d resources (%v)", n, err)
	}
	owners, err := x.s.Owners(ctx, preview, nil)
	if err != nil {
		t.Fatalf("Owners: %v", err)
	}
	var stacks []string
	for _, ow := range owners {
		stacks = append(stacks, ow.Stack)
	}
	if !slices.Equal(stacks, []string{otherStack, otherStack}) {
		t.Errorf("the index names the stacks %v after the move, want the new stack's two entries", stacks)
	}
	for _, k := range []store.Key{from, to} {
		if l := x.readLease(t, k); l.Holder != "" {
			t.Errorf("the lease of %s is still held: %+v", k, l)
		}
	}
}
