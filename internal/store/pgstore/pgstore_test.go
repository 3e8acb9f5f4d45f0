package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership/ownershiptest"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore/pgtest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// conformanceTTL is the lease TTL of the conformance suite on the database
// clock: long enough for a handful of operations to finish well inside a
// quarter of it on a loaded two-core machine, short enough that the
// subtests that wait for expiry stay quick.
const conformanceTTL = 1500 * time.Millisecond

func TestConformance(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		clock.UseWallTime(conformanceTTL)
		return openStore(t, srv.DSN(srv.NewDatabase(t)))
	})
}

// openStore opens a store for one test with a budget short enough for a
// failing test to end quickly, and closes it when the test ends.
func openStore(t testing.TB, dsn string, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := pgstore.Open(ctx, dsn, append([]pgstore.Option{pgstore.WithBudget(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var pr1 = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}

func mustAcquire(t testing.TB, s store.Store, k store.Key, holder string, ttl time.Duration) store.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), k, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", k, holder, err)
	}
	return g
}

// TestConcurrentFirstRuns: eight processes' worth of stores open one empty
// database at once; every one succeeds and the schema is created once.
func TestConcurrentFirstRuns(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	dsn := srv.DSN(srv.NewDatabase(t))
	for _, schema := range []string{pgstore.DefaultSchema, "sponson_other"} {
		const n = 8
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema), pgstore.WithBudget(20*time.Second))
				if err == nil {
					_, err = s.Acquire(t.Context(), store.Key{Stack: "acme/app", Environment: "preview", Scope: fmt.Sprintf("pr-%d", i)}, "run", time.Minute)
					s.Close()
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("schema %s, opener %d: %v", schema, i, err)
			}
		}
		s := openStore(t, dsn, pgstore.WithSchema(schema))
		var versions []int32
		rows, err := s.Pool().Query(t.Context(), "SELECT version FROM "+schema+".schema_version ORDER BY version")
		if err == nil {
			versions, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		}
		if err != nil {
			t.Fatal(err)
		}
		var want []int32
		for v := 1; v <= pgstore.SchemaVersion(); v++ {
			want = append(want, int32(v))
		}
		if diff := cmp.Diff(want, versions); diff != "" {
			t.Errorf("schema %s versions (-want +got):\n%s", schema, diff)
		}
	}
}

// TestNewerSchemaRefused: a schema migrated by a newer sponson is not used.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	dsn := srv.DSN(srv.NewDatabase(t))
	s := openStore(t, dsn)
	if _, err := s.Pool().Exec(t.Context(), "INSERT INTO sponson.schema_version (version) VALUES ($1)", pgstore.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.Open(t.Context(), dsn, pgstore.WithBudget(time.Second))
	if !errcode.Is(err, errcode.StoreLayoutNewer) || !strings.Contains(err.Error(), "newer than this sponson") {
		t.Fatalf("Open of a newer schema: %v, want STORE_LAYOUT_NEWER naming the newer version", err)
	}
}

// TestOpenErrors: each way of failing to open has its code, fails fast when
// retrying cannot help, and never shows a password.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	missingDir := t.TempDir()
	tests := []struct {
		name string
		dsn  string
		code errcode.Code
	}{
		{"unreachable socket", "postgres://postgres:s3cret-pw@/postgres?host=" + missingDir, errcode.StoreUnavailable},
		{"unreachable key/value", "host=" + missingDir + " user=postgres password=s3cret-pw dbname=postgres", errcode.StoreUnavailable},
		{"unknown role", strings.Replace(srv.URL("postgres"), "postgres://postgres@", "postgres://nobody:s3cret-pw@", 1), errcode.StorePermission},
		{"missing database", srv.URL("no_such_db"), errcode.StoreUnavailable},
		{"bad URL", "postgres://postgres:s3cret-pw@host:notaport/db", errcode.Usage},
		{"bad key/value", "host=x password=s3cret-pw port=notaport", errcode.Usage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Only an unreachable server is retried: it gives up after a
			// short budget. Every other failure must come before a budget
			// far longer than any machine needs for one attempt, so a
			// retry loop shows as the whole minute spent.
			budget, limit := time.Minute, 30*time.Second
			if tc.code == errcode.StoreUnavailable && strings.Contains(tc.dsn, missingDir) {
				budget = 500 * time.Millisecond
			}
			start := time.Now()
			s, err := pgstore.Open(t.Context(), tc.dsn, pgstore.WithBudget(budget))
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errcode.Is(err, tc.code) {
				t.Errorf("Open = %v, want %s", err, tc.code)
			}
			if el := time.Since(start); el > limit {
				t.Errorf("Open took %s with a budget of %s, want it to give up before %s", el, budget, limit)
			}
			if strings.Contains(fmt.Sprintf("%v %+v", err, errcode.As(err)), "s3cret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	if _, err := pgstore.Open(t.Context(), srv.DSN("postgres"), pgstore.WithSchema("Bad-Name")); !errcode.Is(err, errcode.Usage) {
		t.Errorf("Open with an invalid schema name: %v, want USAGE", err)
	}
}

// TestStoreURL: --store postgres://... opens this backend and shows the URL
// without its password.
func TestStoreURL(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDatabase(t)
	raw := strings.Replace(srv.URL(db), "postgres://postgres@", "postgres://postgres:ignored-by-trust@", 1)
	st, shown, err := storeurl.Open(raw, t.TempDir())
	if err != nil {
		t.Fatalf("storeurl.Open: %v", err)
	}
	defer st.Close()
	if _, ok := st.(*pgstore.Store); !ok {
		t.Errorf("storeurl.Open returned a %T", st)
	}
	if strings.Contains(shown, "ignored-by-trust") || !strings.HasPrefix(shown, "postgres://postgres@/"+db) {
		t.Errorf("shown URL = %q, want it without the password", shown)
	}
	mustAcquire(t, st, pr1, "run-a", time.Minute)

	t.Setenv("SPONSON_STORE_BUDGET", "soon")
	if _, _, err := storeurl.Open(raw, t.TempDir()); !errcode.Is(err, errcode.Usage) {
		t.Errorf("SPONSON_STORE_BUDGET=soon: %v, want USAGE", err)
	}
	t.Setenv("SPONSON_STORE_BUDGET", "1")
	start := time.Now()
	_, _, err = storeurl.Open("postgres://postgres@/postgres?host="+t.TempDir(), t.TempDir())
	if !errcode.Is(err, errcode.StoreUnavailable) || time.Since(start) > 10*time.Second {
		t.Errorf("SPONSON_STORE_BUDGET=1 on an unreachable server: %v after %s, want STORE_UNAVAILABLE within seconds", err, time.Since(start))
	}
}

// TestAmbiguousCommits: an Acquire or Release whose answer was lost is
// retried; the retry recognises its own committed effect instead of
// reporting the lease held by itself or already lost.
func TestAmbiguousCommits(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	s := openStore(t, srv.DSN(srv.NewDatabase(t)))
	ctx := t.Context()

	first := mustAcquire(t, s, pr1, "run-0", 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	// Attempt 0 commits a takeover; its answer "is lost"; attempt 1 runs.
	g0, err := s.AcquireAttempt(ctx, pr1, "run-a", time.Minute, "nonce-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	g1, err := s.AcquireAttempt(ctx, pr1, "run-a", time.Minute, "nonce-1", 1)
	if err != nil {
		t.Fatalf("retried Acquire: %v, want the grant of the first attempt", err)
	}
	if diff := cmp.Diff(g0, g1); diff != "" {
		t.Errorf("retried Acquire returned another grant (-first +retry):\n%s", diff)
	}
	if g1.Preempted == nil || g1.Preempted.Holder != "run-0" || g1.Preempted.Token != first.Lease.Token {
		t.Errorf("retried Acquire lost the preemption: %+v", g1.Preempted)
	}
	// Another call of the same holder (another nonce) is refused.
	if _, err := s.AcquireAttempt(ctx, pr1, "run-a", time.Minute, "nonce-2", 1); !errors.As(err, new(*store.HeldError)) {
		t.Errorf("Acquire with another nonce: %v, want *store.HeldError", err)
	}

	if err := s.ReleaseAttempt(ctx, g1.Lease, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseAttempt(ctx, g1.Lease, 1); err != nil {
		t.Errorf("retried Release: %v, want success", err)
	}
	if err := s.Release(ctx, g1.Lease); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a second Release call: %v, want store.ErrLeaseLost", err)
	}
	// Once someone else was granted the lease, the retry no longer
	// mistakes it for its own release.
	mustAcquire(t, s, pr1, "run-b", time.Minute)
	if err := s.ReleaseAttempt(ctx, g1.Lease, 1); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("retried Release after another grant: %v, want store.ErrLeaseLost", err)
	}
}

// TestOwnersTenThousandScopes: the foreign check of 50 identities against an
// environment of 10,000 scopes × 50 resources is one query on the index,
// and finds every owner, intents included, and nothing else.
func TestOwnersTenThousandScopes(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 500,000 index rows")
	}
	t.Parallel()
	srv := pgtest.Shared(t)
	s := openStore(t, srv.DSN(srv.NewDatabase(t)))
	const scopes, per = 10000, 50
	start := time.Now()
	seedOwners(t, s, "preview", scopes, per)
	t.Logf("seeded %d scopes × %d entries in %s", scopes, per, time.Since(start).Round(time.Millisecond))

	// Two scopes claim the same resource, one of them with an intent,
	// through the real fenced write.
	k := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-new"}
	g := mustAcquire(t, s, k, "run-new", time.Minute)
	r := storetest.NewReceipt(k, "run-new", 0)
	r.Ledger = []receipt.Entry{{Identity: seedIdentity(7, 3), Address: "x.y", CreatedBy: receipt.CreatedByIntent}}
	if err := s.WriteReceipt(t.Context(), g.Lease, r); err != nil {
		t.Fatal(err)
	}

	var ids []string
	want := map[string]string{}
	for i := range 49 {
		sc, e := i*199, i%per
		ids = append(ids, seedIdentity(sc, e))
		want[seedIdentity(sc, e)] = seedScope(sc)
	}
	ids = append(ids, "registry.opentofu.org/nobody/none/x/1")
	ids = append(ids, seedIdentity(7, 3))
	var got []store.Owner
	var took []time.Duration
	for range 5 {
		t0 := time.Now()
		var err error
		got, err = s.Owners(t.Context(), "preview", ids)
		if err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	t.Logf("Owners(50 identities) over %d index rows: median %s", scopes*per+1, took[len(took)/2])
	gotMap := map[string][]string{}
	for _, o := range got {
		gotMap[o.Identity] = append(gotMap[o.Identity], o.Scope+"/"+o.CreatedBy)
	}
	for id, sc := range want {
		if len(gotMap[id]) != 1 || gotMap[id][0] != sc+"/created" {
			t.Errorf("owners of %s = %v, want %s/created", id, gotMap[id], sc)
		}
	}
	if diff := cmp.Diff([]string{"pr-00007/created", "pr-new/intent"}, gotMap[seedIdentity(7, 3)]); diff != "" {
		t.Errorf("owners of the doubly claimed resource (-want +got):\n%s", diff)
	}
	if len(got) != 51 {
		t.Errorf("Owners returned %d entries, want 51", len(got))
	}

	// The plan: the identity index, no scan of the table.
	rows, err := s.Pool().Query(t.Context(), "EXPLAIN "+s.OwnersByIdentity(), "preview", ids)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "owners_by_identity") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("the foreign check does not use the index:\n%s", plan)
	}
}

func seedScope(i int) string { return fmt.Sprintf("pr-%05d", i) }

func seedIdentity(scope, entry int) string {
	return fmt.Sprintf("registry.opentofu.org/hashicorp/aws/aws_s3_bucket/bucket-%05d-%02d", scope, entry)
}

// seedOwners fills the ownership index of env with scopes × per entries in
// one COPY (writing 10,000 receipts one by one would test nothing more and
// take minutes), then lets the planner see the table, as autovacuum would.
func seedOwners(t testing.TB, s *pgstore.Store, env string, scopes, per int) {
	t.Helper()
	i, since := 0, time.Now()
	n, err := s.Pool().CopyFrom(t.Context(), pgx.Identifier{s.Schema(), "owners"},
		[]string{"env", "stack", "scope", "ord", "identity", "address", "created_by", "run_id", "since"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == scopes*per {
				return nil, nil
			}
			sc, e := i/per, i%per
			i++
			return []any{env, "acme/app", seedScope(sc), int32(e + 1), seedIdentity(sc, e), fmt.Sprintf("aws_s3_bucket.b[%d]", e), "created", fmt.Sprintf("run-%05d", sc), since}, nil
		}))
	if err != nil || n != int64(scopes*per) {
		t.Fatalf("seeding the index: %d rows, %v", n, err)
	}
	if _, err := s.Pool().Exec(t.Context(), "ANALYZE "+s.Schema()+".owners"); err != nil {
		t.Fatal(err)
	}
}

// TestLeastPrivilegeRole: a runner role that may only use the tables an
// owner created works through the fast path of Open; a role without those
// rights gets STORE_PERMISSION at once, not a retry.
func TestLeastPrivilegeRole(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	db := srv.NewDatabase(t)
	owner := openStore(t, srv.DSN(db))
	role := "runner_" + db
	if _, err := owner.Pool().Exec(t.Context(), "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// This runs before NewDatabase's cleanup drops db, whose grants to
		// the role would keep DROP ROLE from working: drop them first.
		for _, q := range []struct{ db, sql string }{
			{db, "DROP OWNED BY " + role},
			{"postgres", "DROP ROLE IF EXISTS " + role},
		} {
			if err := srv.Exec(context.Background(), q.db, q.sql); err != nil {
				t.Logf("%s: %v", q.sql, err)
				return
			}
		}
	})
	dsn := fmt.Sprintf("%s user=%s", srv.DSN(db), role)

	start := time.Now()
	// At once: well before a budget a retry loop would spend.
	_, err := pgstore.Open(t.Context(), dsn, pgstore.WithBudget(time.Minute))
	if !errcode.Is(err, errcode.StorePermission) || time.Since(start) > 30*time.Second {
		t.Fatalf("Open by a role without rights: %v after %s, want STORE_PERMISSION without retrying for the 1 min budget", err, time.Since(start))
	}

	for _, q := range []string{
		"GRANT USAGE ON SCHEMA sponson TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA sponson TO " + role,
	} {
		if _, err := owner.Pool().Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	s := openStore(t, dsn)
	g := mustAcquire(t, s, pr1, "run-a", time.Minute)
	if err := s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(pr1, "run-a", 3)); err != nil {
		t.Fatalf("WriteReceipt by the runner role: %v", err)
	}
	if err := s.Release(t.Context(), g.Lease); err != nil {
		t.Fatal(err)
	}
}

// TestIntentRace runs the intent race rule's race test on two stores (two
// connection pools) of one database (ownershiptest.IntentRace).
func TestIntentRace(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	dsn := srv.DSN(srv.NewDatabase(t))
	ownershiptest.IntentRace(t, 200, openStore(t, dsn), openStore(t, dsn))
}

// TestUnchangedOwnersRowsAreKept: a receipt whose ledger changed no
// ownership leaves the scope's rows of the index untouched (the same row
// versions, xmin); one that moved an entry replaces them, and the rows it
// did not change keep their run (store.OwnersOf).
func TestUnchangedOwnersRowsAreKept(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	s := openStore(t, srv.DSN(srv.NewDatabase(t)))
	ctx := t.Context()
	g := mustAcquire(t, s, pr1, "run-a", time.Minute)
	versions := func(r *receipt.Receipt) []string {
		t.Helper()
		if err := s.WriteReceipt(ctx, g.Lease, r); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Pool().Query(ctx, `SELECT xmin::text || ' ' || run_id FROM `+pgx.Identifier{s.Schema(), "owners"}.Sanitize()+` ORDER BY ord`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := versions(storetest.NewReceipt(pr1, "run-a", 3))
	if same := versions(storetest.NewReceipt(pr1, "run-b", 3)); len(first) != 3 || !slices.Equal(first, same) {
		t.Fatalf("the same ledger again: rows %v, before %v; want them untouched", same, first)
	}
	moved := storetest.NewReceipt(pr1, "run-c", 3)
	moved.Ledger[2].Address = "terraform_data.moved"
	after := versions(moved)
	if len(after) != 3 || after[0] == first[0] || !strings.HasSuffix(after[0], " run-a") || !strings.HasSuffix(after[2], " run-c") {
		t.Fatalf("a moved entry: rows %v, before %v; want them rewritten, run-a kept where unchanged", after, first)
	}
}
