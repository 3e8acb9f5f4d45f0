package stackmove_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/failpoint"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/stackmove"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

const (
	oldStack = "acme/infra//stacks/docs"
	newStack = "acme/infra//stacks/documentation"
	env      = "preview"
)

var (
	oldKey = store.Key{Stack: oldStack, Environment: env, Scope: "main"}
	newKey = store.Key{Stack: newStack, Environment: env, Scope: "main"}
)

// stores are the backends the move is tried on: the file store and the
// git store (a bare repository on disk).
var stores = map[string]func(t testing.TB) store.Store{
	"file": func(t testing.TB) store.Store {
		s, err := filestore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	},
	"git": func(t testing.TB) store.Store {
		remote := filepath.Join(t.TempDir(), "origin.git")
		if out, err := exec.Command("git", "init", "--bare", "--quiet", remote).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		s, err := gitstore.Open(t.Context(), remote, gitstore.WithPlaintextState())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	},
}

// stateOf is the state of a stack named stack: its sponson_scope and one
// random_id per hex.
func stateOf(stack string, serial int, hexes ...string) []byte {
	var ids []string
	for _, h := range hexes {
		ids = append(ids, fmt.Sprintf(`{"index_key":%q,"attributes":{"id":%q,"hex":%q}}`, h, h, h))
	}
	return fmt.Appendf(nil, `{"version":4,"lineage":"L","serial":%d,"resources":[`+
		`{"mode":"managed","type":"sponson_scope","name":"this","provider":"provider[\"registry.terraform.io/sponson/sponson\"]","instances":[{"attributes":{"id":"preview/main","name":"main","stack":%q}}]},`+
		`{"mode":"managed","type":"random_id","name":"tag","provider":"provider[\"registry.terraform.io/hashicorp/random\"]","instances":[%s]}]}`,
		serial, stack, strings.Join(ids, ","))
}

// applied leaves k as an apply would: state, the record of its
// sponson_scope, and a receipt whose ledger is the state's objects.
func applied(t testing.TB, st store.Store, k store.Key, state []byte) *receipt.Receipt {
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
	rec.Ledger, rec.Commit = ledger, "c0ffee"
	if err := st.WriteState(ctx, g.Lease, state); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteRecord(ctx, g.Lease, "scope", []byte(`{"environment":"preview","name":"main"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteReceipt(ctx, g.Lease, rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func approval(t testing.TB) scopeedit.Approval {
	t.Helper()
	a, err := scopeedit.Approve(environments.Environment{Name: env}, "apply", "")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func opts(t testing.TB, st store.Store, runID string) stackmove.Options {
	return stackmove.Options{Store: st, Environment: env, Scope: "main", From: oldStack, To: newStack,
		RunID: runID, Actor: "alice", Approval: approval(t), Lease: lease.Config{TTL: time.Minute}}
}

// owners are the stacks the ownership index names for each identity.
func owners(t *testing.T, st store.Store) map[string][]string {
	t.Helper()
	all, err := st.Owners(t.Context(), env, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, o := range all {
		out[o.Identity] = append(out[o.Identity], o.Stack)
	}
	return out
}

// wantMoved checks the end of a move: the new stack's scope holds the old
// one's resources, ledger and records, the sponson_scope renamed; the old
// one holds nothing and says where it went; the index names only the new
// stack; no lease is left held.
func wantMoved(t *testing.T, st store.Store, before *receipt.Receipt) {
	t.Helper()
	ctx := t.Context()
	rec, err := store.Latest(ctx, st, newKey)
	if err != nil || rec == nil {
		t.Fatalf("the new stack's receipt: %v, %v", rec, err)
	}
	var got, want []string
	for _, e := range rec.Ledger {
		got = append(got, e.Identity)
	}
	for _, e := range before.Ledger {
		want = append(want, e.Identity)
	}
	if !slices.Equal(got, want) || rec.MovedFrom != oldStack || rec.Command != stackmove.Command || rec.Commit != "c0ffee" {
		t.Errorf("the new stack's receipt: ledger %v (want %v), movedFrom %q, command %q, commit %q", got, want, rec.MovedFrom, rec.Command, rec.Commit)
	}
	state, _ := st.ReadState(ctx, newKey)
	if !strings.Contains(string(state), `"hex": "aa11"`) || !strings.Contains(string(state), `"stack": "`+newStack+`"`) || strings.Contains(string(state), oldStack) {
		t.Errorf("the new stack's state:\n%s", state)
	}
	if m, _ := tfstate.ReadMeta(state); m.Lineage != "L" {
		t.Errorf("the moved state has lineage %q, want the old state's", m.Lineage)
	}
	if r, _ := st.ReadRecord(ctx, newKey, "scope"); !strings.Contains(string(r), `"name":"main"`) {
		t.Errorf("the new stack's scope record: %s", r)
	}
	old, _ := store.Latest(ctx, st, oldKey)
	if old == nil || len(old.Ledger) != 0 || old.MovedTo != newStack {
		t.Errorf("the old stack's receipt: %+v", old)
	}
	if n, _ := stackmove.Resources(must(st.ReadState(ctx, oldKey))); n != 0 {
		t.Errorf("the old stack's state still holds %d resources", n)
	}
	for id, stacks := range owners(t, st) {
		if !slices.Equal(stacks, []string{newStack}) {
			t.Errorf("the index names %v as owners of %s, want the new stack alone", stacks, id)
		}
	}
	for _, k := range []store.Key{oldKey, newKey} {
		if l, _ := st.ReadLease(ctx, k); l.Live(time.Now()) {
			t.Errorf("the lease of %s is still held: %+v", k, l)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A move carries state, ledger and records to the new stack, retires the
// old scope, and a second move finds it done.
func TestMove(t *testing.T) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			before := applied(t, st, oldKey, stateOf(oldStack, 3, "aa11", "bb22"))
			res, err := stackmove.Move(t.Context(), opts(t, st, "run-move"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != stackmove.Start || res.Resources != 3 {
				t.Errorf("Move: %+v, want a start of 3 resources", res)
			}
			wantMoved(t, st, before)
			again, err := stackmove.Move(t.Context(), opts(t, st, "run-again"))
			if err != nil || again.Action != stackmove.Done || again.Resources != 3 {
				t.Errorf("the second move: %+v, %v, want done", again, err)
			}
			if rec, _ := st.LatestReceipt(t.Context(), newKey); rec.RunID != "run-move" {
				t.Errorf("the second move wrote receipt %s", rec.RunID)
			}
		})
	}
}

// A move into a scope that holds resources of its own is refused, with
// nothing written: two stacks' states are not merged.
func TestMoveRefusesATargetWithResources(t *testing.T) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			applied(t, st, oldKey, stateOf(oldStack, 3, "aa11"))
			applied(t, st, newKey, stateOf(newStack, 1, "cc33"))
			_, err := stackmove.Move(t.Context(), opts(t, st, "run-move"))
			if !errcode.Is(err, errcode.Usage) || !strings.Contains(err.Error(), "already holds 2 resources") || !strings.Contains(errcode.As(err).Hint, `stack = "`+oldStack+`"`) {
				t.Fatalf("Move into a stack with resources: %v (hint %q)", err, errcode.As(err).Hint)
			}
			if old, _ := st.LatestReceipt(t.Context(), oldKey); old.RunID != "run-apply" || old.MovedTo != "" {
				t.Errorf("the refused move wrote the old receipt: %+v", old)
			}
		})
	}
}

// A move with no approval decided for its environment is refused before
// any lease is taken.
func TestMoveNeedsAnApproval(t *testing.T) {
	t.Parallel()
	st := stores["file"](t)
	applied(t, st, oldKey, stateOf(oldStack, 3, "aa11"))
	o := opts(t, st, "run-move")
	o.Approval = scopeedit.Approval{}
	if _, err := stackmove.Move(t.Context(), o); !errcode.Is(err, errcode.Internal) {
		t.Errorf("Move without an approval: %v", err)
	}
	prod := environments.Environment{Name: "production", Protected: true}
	if _, err := scopeedit.Approve(prod, "apply", ""); !errcode.Is(err, errcode.EnvNotApproved) {
		t.Errorf("a move in production without an approver: %v", err)
	}
	a, err := scopeedit.Approve(environments.Environment{Name: "production", Protected: true, Approvers: []string{"Ada"}}, "apply", "Ada")
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Stack: oldStack, Environment: "production", Scope: "main"}
	before := applied(t, st, k, stateOf(oldStack, 3, "aa11"))
	o = opts(t, st, "run-move")
	o.Environment, o.Approval = "production", a
	if _, err := stackmove.Move(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	rec, _ := st.LatestReceipt(t.Context(), store.Key{Stack: newStack, Environment: "production", Scope: "main"})
	if rec == nil || rec.ApprovedBy != "Ada" || len(rec.Ledger) != len(before.Ledger) {
		t.Errorf("the move in production: %+v, want approved by Ada", rec)
	}
}

// A move stopped after any step (a panic from the failpoint hook, as a
// kill would stop it, its leases then released as their expiry would)
// leaves exactly one stack owning the resources: the old one before the
// promise, the new one after it; the next move completes it, to the same
// end as a move that was never stopped.
func TestMoveStoppedAtEveryStep(t *testing.T) {
	steps := []string{stackmove.StepPromised, stackmove.StepCopied, stackmove.StepClaimed, stackmove.StepRetired}
	for name, open := range stores {
		for _, step := range steps {
			t.Run(name+"/"+step, func(t *testing.T) {
				st := open(t)
				before := applied(t, st, oldKey, stateOf(oldStack, 3, "aa11", "bb22"))
				stopped := stopAt(t, step, func() {
					_, _ = stackmove.Move(context.Background(), opts(t, st, "run-killed"))
				})
				if !stopped {
					t.Fatalf("the move never reached %s", step)
				}
				if got := owner(t, st); got != newStack {
					t.Errorf("after a stop at %s the resources are %s's, want the new stack's (the promise is made)", step, got)
				}
				res, err := stackmove.Move(t.Context(), opts(t, st, "run-rerun"))
				if err != nil {
					t.Fatalf("the move after a stop at %s: %v", step, err)
				}
				want := stackmove.Resume
				if step == stackmove.StepRetired {
					want = stackmove.Done
				}
				if res.Action != want {
					t.Errorf("the move after a stop at %s: %v, want %v", step, res.Action, want)
				}
				wantMoved(t, st, before)
			})
		}
	}
}

// owner is the stack whose scope owns the resources by the move's
// protocol: the new one once the old one's receipt promises them to it
// (movedTo), the old one before. It fails the test when the one it names
// holds neither their state nor, where the old stack's receipt has not
// promised them, their ledger.
func owner(t *testing.T, st store.Store) string {
	t.Helper()
	ctx := t.Context()
	old, err := store.Latest(ctx, st, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if old.MovedTo == "" {
		if len(old.Ledger) == 0 {
			t.Error("the old stack's scope owns nothing and promised nothing")
		}
		return oldStack
	}
	// Promised: the resources are at the old scope until retired, and at
	// the new one once claimed; never nowhere.
	oldN, _ := stackmove.Resources(must(st.ReadState(ctx, oldKey)))
	newN, _ := stackmove.Resources(must(st.ReadState(ctx, newKey)))
	if oldN == 0 && newN == 0 {
		t.Error("after the promise neither stack's state holds the resources")
	}
	return old.MovedTo
}

// stopAt runs f with the failpoint hook panicking at step, and reports
// whether it did.
func stopAt(t *testing.T, step string, f func()) (stopped bool) {
	t.Helper()
	failpoint.SetHook(func(name string) {
		if name == step {
			panic(step)
		}
	})
	defer failpoint.SetHook(nil)
	defer func() {
		if r := recover(); r != nil {
			if r != step {
				panic(r)
			}
			stopped = true
		}
	}()
	f()
	return false
}

// BenchmarkMove times one move of a scope whose state and ledger hold its
// sponson_scope and n random_ids (objects=n), on the file and git stores: both
// leases, the four steps, the releases. Each move gets a fresh store,
// seeded untimed. Run with
//
//	go test -run '^$' -bench Move -benchtime 5x ./internal/stackmove/
func BenchmarkMove(b *testing.B) {
	for _, name := range []string{"file", "git"} {
		for _, n := range []int{3, 1000} {
			b.Run(fmt.Sprintf("%s/objects=%d", name, n), func(b *testing.B) {
				hexes := make([]string, n)
				for i := range hexes {
					hexes[i] = fmt.Sprintf("%04x", i)
				}
				state := stateOf(oldStack, 3, hexes...)
				for range b.N {
					b.StopTimer()
					st := stores[name](b)
					applied(b, st, oldKey, state)
					b.StartTimer()
					if _, err := stackmove.Move(b.Context(), opts(b, st, "run-move")); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
