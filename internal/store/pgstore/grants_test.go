package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"pgregory.net/rapid"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore/pgtest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// newRole creates a login role in db, dropped when the test ends.
func newRole(t *testing.T, srv *pgtest.Server, db, role string) {
	t.Helper()
	if err := srv.Exec(t.Context(), db, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// This runs before NewDatabase's cleanup drops db, whose grants to
		// the role would keep DROP ROLE from working: drop them first.
		for _, q := range []struct{ db, sql string }{{db, "DROP OWNED BY " + role}, {"postgres", "DROP ROLE IF EXISTS " + role}} {
			if err := srv.Exec(context.Background(), q.db, q.sql); err != nil {
				t.Logf("%s: %v", q.sql, err)
				return
			}
		}
	})
}

// applyGrants runs what `sponson grants` prints for role, as the schema's
// owner.
func applyGrants(t *testing.T, owner *pgstore.Store, role, prefix string) {
	t.Helper()
	q, err := pgstore.PerStackSQL("sponson", role, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Pool().Exec(t.Context(), q); err != nil {
		t.Fatalf("the grants of %s: %v\n%s", role, err, q)
	}
}

// TestGrantsSiblingPrefixes (issue 46 item 4): two repositories whose
// names share a bare prefix, github.com/acme/infra and
// github.com/acme/infra-secrets, each with the role `sponson grants`
// prints for it, applied for real. Each reads and writes its own stacks
// (the repository's root stack and its "//dir" stacks); on the other's,
// every read and write is STORE_PERMISSION naming the grant to ask for,
// never an empty scope; the rows themselves are bounded too (raw SQL as
// the role sees none of the sibling's rows and cannot write one); both
// still read the whole ownership index and share the environment-wide
// scopes. Before the fix, infra's role read, leased and overwrote
// infra-secrets' state.
func TestGrantsSiblingPrefixes(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	db := srv.NewDatabase(t)
	owner := openStore(t, srv.DSN(db))
	roleA, roleB := "infra_"+db, "secrets_"+db
	newRole(t, srv, db, roleA)
	newRole(t, srv, db, roleB)
	applyGrants(t, owner, roleA, "github.com/acme/infra")
	applyGrants(t, owner, roleB, "github.com/acme/infra-secrets/") // a trailing slash means the same
	a := openStore(t, fmt.Sprintf("%s user=%s", srv.DSN(db), roleA))
	b := openStore(t, fmt.Sprintf("%s user=%s", srv.DSN(db), roleB))
	ctx := t.Context()

	type side struct {
		name, role string
		s          *pgstore.Store
		own        []store.Key
	}
	sides := []side{
		{"infra", roleA, a, []store.Key{
			{Stack: "github.com/acme/infra", Environment: "preview", Scope: "main"},
			{Stack: "github.com/acme/infra//app", Environment: "preview", Scope: "main"},
		}},
		{"infra-secrets", roleB, b, []store.Key{
			{Stack: "github.com/acme/infra-secrets//db", Environment: "preview", Scope: "main"},
		}},
	}
	var identities []string
	for i, sd := range sides {
		for _, k := range sd.own {
			g := mustAcquire(t, sd.s, k, "run-"+sd.name, time.Minute)
			rec := storetest.NewReceipt(k, "run-"+sd.name, 1)
			rec.Ledger[0].Identity = fmt.Sprintf("id/%d/%s", i, k.Stack)
			identities = append(identities, rec.Ledger[0].Identity)
			for _, err := range []error{
				sd.s.WriteState(ctx, g.Lease, []byte(`{"secret":"of `+k.Stack+`"}`)),
				sd.s.WriteRecord(ctx, g.Lease, "plan", []byte("p")),
				sd.s.WriteReceipt(ctx, g.Lease, rec),
				sd.s.Release(ctx, g.Lease),
			} {
				if err != nil {
					t.Fatalf("%s in its own stack %s: %v", sd.name, k.Stack, err)
				}
			}
			if st, err := sd.s.ReadState(ctx, k); err != nil || !strings.Contains(string(st), k.Stack) {
				t.Fatalf("%s reads its own stack %s: %q, %v", sd.name, k.Stack, st, err)
			}
		}
	}

	for i, sd := range sides {
		other := sides[1-i]
		for _, k := range other.own {
			refused := func(op string, err error) {
				t.Helper()
				if !errcode.Is(err, errcode.StorePermission) {
					t.Errorf("%s's %s in %s: %v, want STORE_PERMISSION", sd.name, op, k.Stack, err)
					return
				}
				if h := errcode.As(err).Hint; !strings.Contains(h, "--for "+sd.role+" --stack-prefix") {
					t.Errorf("%s's %s in %s: the hint does not name the grant to ask for: %s", sd.name, op, k.Stack, h)
				}
			}
			_, err := sd.s.ReadState(ctx, k)
			refused("ReadState", err)
			_, err = sd.s.LatestReceipt(ctx, k)
			refused("LatestReceipt", err)
			_, err = sd.s.ReadLease(ctx, k)
			refused("ReadLease", err)
			_, err = sd.s.ReadRecord(ctx, k, "plan")
			refused("ReadRecord", err)
			_, err = sd.s.ListQuarantine(ctx, k)
			refused("ListQuarantine", err)
			_, err = sd.s.Acquire(ctx, k, "run-"+sd.name, time.Minute)
			refused("Acquire", err)
			refused("Quarantine", sd.s.Quarantine(ctx, k, "run-x", []byte("{}")))
			refused("WriteState", sd.s.WriteState(ctx, store.Lease{Key: k, Holder: "run-" + other.name, Token: 1}, []byte("{}")))
		}
		// The rows are bounded by the policies, not only by the store's
		// check: raw SQL as the role, as a hand-written client would send.
		var n int
		if err := sd.s.Pool().QueryRow(ctx, `SELECT count(*) FROM sponson.states WHERE stack = ANY($1)`, stacks(other.own)).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s's raw SQL sees %d of %s's states (%v), want none", sd.name, n, other.name, err)
		}
		_, err := sd.s.Pool().Exec(ctx, `INSERT INTO sponson.quarantine (env, stack, scope, run_id, at, data) VALUES ('preview', $1, 'main', 'x', now(), '')`, other.own[0].Stack)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("%s's raw insert into %s's stack: %v, want a row-level security violation", sd.name, other.name, err)
		}
		_, err = sd.s.Pool().Exec(ctx, `INSERT INTO sponson.grants (role, prefix) VALUES (current_user, 'github.com')`)
		if err == nil {
			t.Errorf("%s granted itself github.com", sd.name)
		}
		if owners, err := sd.s.Owners(ctx, "preview", identities); err != nil || len(owners) != len(identities) {
			t.Errorf("%s's foreign check sees %d of %d owners: %v", sd.name, len(owners), len(identities), err)
		}
		parent := store.Key{Environment: "preview", Scope: "_parent-sponson-ownership-index"}
		if gp, err := sd.s.Acquire(ctx, parent, "intents-"+sd.name, time.Minute); err != nil {
			t.Errorf("%s cannot take the environment's intent lease: %v", sd.name, err)
		} else if err := sd.s.Release(ctx, gp.Lease); err != nil {
			t.Error(err)
		}
		if list, err := sd.s.List(ctx, "preview"); err != nil {
			t.Error(err)
		} else {
			for _, sum := range list {
				if !pgstore.Granted([]string{sideprefix(sd.name)}, sum.Key.Stack) {
					t.Errorf("%s's listing shows %s", sd.name, sum.Key)
				}
			}
		}
	}
	for _, sd := range sides {
		for _, k := range sd.own {
			r, err := owner.LatestReceipt(ctx, k)
			st, serr := owner.ReadState(ctx, k)
			if err != nil || r == nil || r.RunID != "run-"+sd.name || serr != nil || !strings.Contains(string(st), k.Stack) {
				t.Errorf("%s's %s after the other's attempts: receipt %v (%v), state %q (%v)", sd.name, k.Stack, r, err, st, serr)
			}
		}
	}
}

func sideprefix(name string) string { return "github.com/acme/" + name }

func stacks(keys []store.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Stack
	}
	return out
}

// TestGrantsRoleWithoutGrant: a role bound by row-level security with no
// row of grants (given table rights by hand, or by the bare-prefix SQL of
// earlier versions, whose policies the new SQL replaces) is refused on
// every stack with STORE_PERMISSION, never shown empty scopes; the schema's
// owner, which row-level security does not bind, is not.
func TestGrantsRoleWithoutGrant(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	db := srv.NewDatabase(t)
	owner := openStore(t, srv.DSN(db))
	roleA, roleC := "granted_"+db, "ungranted_"+db
	newRole(t, srv, db, roleA)
	newRole(t, srv, db, roleC)
	applyGrants(t, owner, roleA, "github.com/acme/a")
	for _, q := range []string{"GRANT USAGE ON SCHEMA sponson TO " + roleC, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA sponson TO " + roleC} {
		if _, err := owner.Pool().Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	c := openStore(t, fmt.Sprintf("%s user=%s", srv.DSN(db), roleC))
	k := store.Key{Stack: "github.com/acme/a", Environment: "preview", Scope: "main"}
	if _, err := c.ReadState(t.Context(), k); !errcode.Is(err, errcode.StorePermission) || !strings.Contains(err.Error(), "grants it no stacks") {
		t.Errorf("a role without grants reads a stack: %v, want STORE_PERMISSION saying it has no stacks", err)
	}
	g := mustAcquire(t, owner, k, "owner-run", time.Minute)
	if err := owner.Release(t.Context(), g.Lease); err != nil {
		t.Errorf("the schema's owner in a granted stack: %v", err)
	}
}

// TestGrantedAgreesWithSQL: the store's check (pgstore.Granted) and the
// function the policies call (stack_granted) give the same answer for
// generated prefixes and stacks, on a real server. The alphabet is chosen
// for the cases a pattern would get wrong: "_" (a LIKE wildcard), "-"
// and "." (siblings), "/" and "//" (the boundaries).
func TestGrantedAgreesWithSQL(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	db := srv.NewDatabase(t)
	owner := openStore(t, srv.DSN(db))
	role := "prop_" + db
	newRole(t, srv, db, role)
	ctx := t.Context()
	if _, err := owner.Pool().Exec(ctx, "GRANT USAGE ON SCHEMA sponson TO "+role); err != nil {
		t.Fatal(err)
	}
	conn, err := owner.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	segment := rapid.StringOfN(rapid.SampledFrom([]rune("ab_-.X")), 1, 3, -1)
	name := rapid.Custom(func(t *rapid.T) string {
		parts := rapid.SliceOfN(segment, 1, 4).Draw(t, "segments")
		var b strings.Builder
		for i, p := range parts {
			if i > 0 {
				b.WriteString(rapid.SampledFrom([]string{"/", "//"}).Draw(t, "sep"))
			}
			b.WriteString(p)
		}
		return b.String()
	})
	rapid.Check(t, func(rt *rapid.T) {
		prefixes := rapid.SliceOfNDistinct(name, 1, 3, rapid.ID[string]).Draw(rt, "prefixes")
		stack := rapid.OneOf(name, rapid.Custom(func(t *rapid.T) string {
			// A stack near a prefix: the prefix itself, below it, or a sibling.
			p := rapid.SampledFrom(prefixes).Draw(t, "near")
			return p + rapid.SampledFrom([]string{"", "/x", "//x", "-x", "_x", "x", ".x"}).Draw(t, "tail")
		})).Draw(rt, "stack")
		if store.CheckStack(stack) != nil {
			rt.Skip("not a stack name")
		}
		var got bool
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, p := range prefixes {
				if _, err := tx.Exec(ctx, `INSERT INTO sponson.grants (role, prefix) VALUES ($1, $2)`, role, p); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT sponson.stack_granted($1)`, stack).Scan(&got); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			rt.Fatal(err)
		}
		if want := pgstore.Granted(prefixes, stack); got != want {
			rt.Fatalf("prefixes %q, stack %q: stack_granted %v, Granted %v", prefixes, stack, got, want)
		}
	})
}

var errRollback = errors.New("rolled back on purpose")

func TestGrantPrefix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"github.com/acme/infra":   "github.com/acme/infra",
		"github.com/acme/infra/":  "github.com/acme/infra",
		"github.com/acme/infra//": "github.com/acme/infra",
		" github.com/acme ":       "github.com/acme",
		"github.com/acme/in_fra":  "github.com/acme/in_fra",
		"":                        "",
		"/":                       "",
		"github.com/acme/%":       "",
		`github.com/acme\x`:       "",
		"github.com/acme/x'y":     "",
	} {
		got, err := pgstore.GrantPrefix(in)
		if (err == nil) != (want != "") || got != want {
			t.Errorf("GrantPrefix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, c := range []struct {
		stack string
		want  bool
	}{
		{"github.com/acme/infra", true},
		{"github.com/acme/infra//db", true},
		{"github.com/acme/infra/sub", true},
		{"", true},
		{"github.com/acme/infra-secrets", false},
		{"github.com/acme/infra-secrets//db", false},
		{"github.com/acme/infra.old", false},
		{"github.com/acme/infrastructure", false},
		{"github.com/acme/inf", false},
		{"github.com/acme", false},
	} {
		if got := pgstore.Granted([]string{"github.com/acme/infra"}, c.stack); got != c.want {
			t.Errorf("Granted(github.com/acme/infra, %q) = %v, want %v", c.stack, got, c.want)
		}
	}
}
