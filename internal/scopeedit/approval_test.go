package scopeedit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// Approve: a protected environment needs an approver it allows, named; an
// unprotected one needs none and records none, whatever is passed.
func TestApprove(t *testing.T) {
	t.Parallel()
	production := environments.Environment{Name: "production", Protected: true}
	staging := environments.Environment{Name: "staging", Protected: true, Approvers: []string{"alice", "bob"}}
	preview := environments.Environment{Name: "preview"}
	for _, tc := range []struct {
		name   string
		env    environments.Environment
		by     string
		want   string
		refuse bool
		// hint is a part of the refusal's hint.
		hint string
	}{
		{name: "production without an approver", env: production, refuse: true, hint: "Pass --approved-by NAME (or set SPONSON_APPROVED_BY): state rm changes what the protected environment production owns"},
		{name: "production, blank approver", env: production, by: "  ", refuse: true, hint: "--approved-by NAME"},
		{name: "production, any name", env: production, by: " carol ", want: "carol"},
		{name: "declared approvers, none named", env: staging, refuse: true, hint: "alice, bob"},
		{name: "declared approvers, another name", env: staging, by: "mallory", refuse: true, hint: "alice, bob"},
		{name: "declared approvers, one of them", env: staging, by: "bob", want: "bob"},
		{name: "unprotected, none", env: preview},
		{name: "unprotected, a name is not recorded", env: preview, by: "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := scopeedit.Approve(tc.env, "state rm", tc.by)
			if tc.refuse {
				e := errcode.As(err)
				if !errcode.Is(err, errcode.EnvNotApproved) || e.Exit() != errcode.ExitRefused || !strings.HasPrefix(e.Message, "state rm: ") || !strings.Contains(e.Hint, tc.hint) {
					t.Fatalf("Approve: %v (hint %q), want ENV_NOT_APPROVED, exit 2, naming state rm, hint with %q", err, e.Hint, tc.hint)
				}
				return
			}
			if err != nil || a.By() != tc.want {
				t.Fatalf("Approve: %q, %v; want %q", a.By(), err, tc.want)
			}
		})
	}
}

// Edit refuses, before the lease, an edit whose approval was not decided
// for its scope's environment: none at all, or one of another environment.
// It writes nothing and leaves the lease free.
func TestEditRefusesAnUndecidedApproval(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Stack: "acme/app", Environment: "production", Scope: "main"}
	applied(t, st, k, stateOf("L", 1, "a"))
	for name, approval := range map[string]scopeedit.Approval{
		"none":                {},
		"another environment": unprotected("preview"),
	} {
		o := opts(st, k, "run-edit")
		o.Approval = approval
		_, err := scopeedit.Edit(ctx, o, func(context.Context, *scopeedit.Scope) (scopeedit.Change, error) {
			t.Errorf("%s: the edit ran", name)
			return scopeedit.Change{}, nil
		})
		if !errcode.Is(err, errcode.Internal) {
			t.Errorf("%s: Edit: %v, want a refusal", name, err)
		}
		if l, _ := st.ReadLease(ctx, k); l.Holder != "" || l.Token != 1 {
			t.Errorf("%s: the refused edit took the lease: %+v", name, l)
		}
		if rec, _ := st.LatestReceipt(ctx, k); rec.RunID != "run-apply" {
			t.Errorf("%s: the refused edit wrote receipt %s", name, rec.RunID)
		}
	}
}

// The receipt an approved edit writes records its approver, whatever the
// edit put there; the next edit, in an unprotected environment or
// approved by another, does not inherit it (receipt.Next).
func TestEditRecordsTheApprover(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	production := environments.Environment{Name: "production", Protected: true}
	k := store.Key{Stack: "acme/app", Environment: "Production", Scope: "main"}
	applied(t, st, k, stateOf("L", 1, "a"))
	edit := func(by, forged string) *receipt.Receipt {
		t.Helper()
		a, err := scopeedit.Approve(production, "touch", by)
		if err != nil {
			t.Fatal(err)
		}
		o := opts(st, k, "run-"+by)
		o.Approval = a
		if _, err := scopeedit.Edit(ctx, o, func(_ context.Context, s *scopeedit.Scope) (scopeedit.Change, error) {
			rec := s.Next("touch", receipt.StatusUnchanged)
			rec.ApprovedBy = forged
			return scopeedit.Change{Receipt: rec}, nil
		}); err != nil {
			t.Fatal(err)
		}
		rec, err := st.LatestReceipt(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	if rec := edit("alice", "mallory"); rec.ApprovedBy != "alice" || rec.RunID != "run-alice" {
		t.Errorf("the approved edit's receipt: %s approved by %q, want alice", rec.RunID, rec.ApprovedBy)
	}
	if rec := edit("bob", ""); rec.ApprovedBy != "bob" {
		t.Errorf("the next edit's receipt: approved by %q, want bob, not alice's carried over", rec.ApprovedBy)
	}
	// An edit of an unprotected environment records nobody, even after an
	// approved one (the scope's latest receipt named bob).
	pk := store.Key{Stack: "acme/app", Environment: "preview", Scope: "main"}
	applied(t, st, pk, stateOf("P", 1, "p"))
	if _, err := scopeedit.Edit(ctx, opts(st, pk, "run-plain"), func(_ context.Context, s *scopeedit.Scope) (scopeedit.Change, error) {
		rec := s.Next("touch", receipt.StatusUnchanged)
		rec.ApprovedBy = "bob"
		return scopeedit.Change{Receipt: rec}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := st.LatestReceipt(ctx, pk); rec.ApprovedBy != "" {
		t.Errorf("an unprotected edit's receipt names approver %q", rec.ApprovedBy)
	}
	if l, _ := st.ReadLease(ctx, k); l.Live(time.Now()) {
		t.Errorf("the lease is still held: %+v", l)
	}
}
