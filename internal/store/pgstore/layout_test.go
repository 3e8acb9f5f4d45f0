package pgstore_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore/pgtest"
)

// layout1 loads the PostgreSQL store that sponson wrote before stacks
// (internal/store/testdata/layout1/postgres.sql, schema version 1) into a
// new database and returns its DSN.
func layout1(t *testing.T) string {
	t.Helper()
	srv := pgtest.Shared(t)
	db := srv.NewDatabase(t)
	dump, err := os.ReadFile("../testdata/layout1/postgres.sql")
	if err != nil {
		t.Fatal(err)
	}
	// pg_dump's psql meta-commands are not SQL.
	sql := regexp.MustCompile(`(?m)^\\.*$`).ReplaceAllString(string(dump), "")
	if err := srv.Exec(t.Context(), db, sql); err != nil {
		t.Fatalf("loading the layout-1 dump: %v", err)
	}
	return srv.DSN(db)
}

// TestOldLayoutIsRefusedThenMigrated: opening a version-1 schema with
// scopes migrates the schema but refuses the store (STORE_LAYOUT_OLD)
// rather than reading those scopes as empty; Migrate gives them the stack,
// keeping their lease token, receipt, state and index.
func TestOldLayoutIsRefusedThenMigrated(t *testing.T) {
	t.Parallel()
	dsn := layout1(t)
	if _, err := pgstore.Open(t.Context(), dsn); !errcode.Is(err, errcode.StoreLayoutOld) || !strings.Contains(err.Error(), "preview/main") {
		t.Fatalf("Open of a layout-1 store = %v, want STORE_LAYOUT_OLD naming preview/main", err)
	}
	m, err := pgstore.Open(t.Context(), dsn, pgstore.WithOldLayout())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const stack = "github.com/acme/infra//app"
	moved, err := m.Migrate(t.Context(), stack)
	if err != nil || len(moved) != 2 {
		t.Fatalf("Migrate = %v, %v; want main and pr-7", moved, err)
	}
	s, err := pgstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("Open after Migrate: %v", err)
	}
	defer s.Close()
	k := store.Key{Stack: stack, Environment: "preview", Scope: "pr-7"}
	if st, err := s.ReadState(t.Context(), k); err != nil || !strings.Contains(string(st), "terraform_data") {
		t.Fatalf("ReadState after Migrate = %q, %v", st, err)
	}
	if r, err := s.LatestReceipt(t.Context(), k); err != nil || r == nil || len(r.Ledger) != 2 {
		t.Fatalf("LatestReceipt after Migrate = %+v, %v", r, err)
	}
	owners, err := s.Owners(t.Context(), "preview", nil)
	if err != nil || len(owners) != 4 || owners[0].Stack != stack {
		t.Fatalf("Owners after Migrate = %+v, %v; want 4 entries of %s", owners, err, stack)
	}
	sums, err := s.List(t.Context(), "preview")
	if err != nil || len(sums) != 2 || sums[0].Key.Stack != stack {
		t.Fatalf("List after Migrate = %+v, %v", sums, err)
	}
	g, err := s.Acquire(t.Context(), k, "run-next", time.Minute)
	if err != nil || g.Lease.Token != 2 {
		t.Fatalf("Acquire after Migrate = %+v, %v; want token 2", g, err)
	}
	if err := s.WriteState(t.Context(), g.Lease, []byte("{}")); err != nil {
		t.Fatalf("fenced write after Migrate: %v", err)
	}
	if again, err := m.Migrate(t.Context(), stack); err != nil || len(again) != 0 {
		t.Fatalf("second Migrate = %v, %v; want nothing", again, err)
	}
}
