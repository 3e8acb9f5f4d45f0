package pgstore

import (
	"context"
	"errors"
	"hash/crc32"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// migrations are the versions of the schema, in order: migrations[i] brings
// the schema from version i to i+1. A released migration is never edited;
// a change is a new one. "{s}" stands for the schema name.
//
// Every text column that names something is COLLATE "C": names compare and
// sort byte by byte, as the file store sorts its directories, whatever
// collation the database was created with.
var migrations = []string{
	// 1: leases, receipts, the ownership index, state, records, quarantine.
	`
CREATE TABLE {s}.leases (
	env         text COLLATE "C" NOT NULL,
	scope       text COLLATE "C" NOT NULL,
	holder      text COLLATE "C",                 -- NULL while the lease is free
	token       bigint NOT NULL CHECK (token > 0), -- grows by one per grant, survives release
	acquired_at timestamptz NOT NULL,
	expires_at  timestamptz NOT NULL,             -- the time of release once released
	last_holder text COLLATE "C" NOT NULL,        -- holder of the latest grant, kept after release
	grant_id    text NOT NULL,                    -- nonce of the Acquire call that made the latest grant
	-- the expired lease the latest grant took over, NULL if it took over none
	preempted_holder      text COLLATE "C",
	preempted_token       bigint,
	preempted_acquired_at timestamptz,
	preempted_expires_at  timestamptz,
	PRIMARY KEY (env, scope)
);

CREATE TABLE {s}.receipts (
	env        text COLLATE "C" NOT NULL,
	scope      text COLLATE "C" NOT NULL,
	run_id     text COLLATE "C" NOT NULL,
	token      bigint NOT NULL,      -- the lease token the receipt was written under
	written_at timestamptz NOT NULL,
	body       json NOT NULL,        -- receipt.Marshal, byte for byte
	PRIMARY KEY (env, scope, run_id)
);

CREATE TABLE {s}.latest (
	env        text COLLATE "C" NOT NULL,
	scope      text COLLATE "C" NOT NULL,
	run_id     text COLLATE "C" NOT NULL,
	token      bigint NOT NULL,
	written_at timestamptz NOT NULL,
	PRIMARY KEY (env, scope),
	FOREIGN KEY (env, scope, run_id) REFERENCES {s}.receipts (env, scope, run_id)
);

CREATE TABLE {s}.owners (
	env        text COLLATE "C" NOT NULL,
	scope      text COLLATE "C" NOT NULL,
	ord        integer NOT NULL,     -- position in the ledger
	identity   text COLLATE "C" NOT NULL,
	address    text NOT NULL,
	created_by text NOT NULL,
	run_id     text COLLATE "C" NOT NULL,
	since      timestamptz NOT NULL, -- when the scope's index first listed the identity
	PRIMARY KEY (env, scope, ord)
);
-- The foreign check: the owners of a set of identities in one environment.
CREATE INDEX owners_by_identity ON {s}.owners (env, identity);

CREATE TABLE {s}.states (
	env        text COLLATE "C" NOT NULL,
	scope      text COLLATE "C" NOT NULL,
	token      bigint NOT NULL,
	written_at timestamptz NOT NULL,
	data       bytea NOT NULL,
	PRIMARY KEY (env, scope)
);

CREATE TABLE {s}.records (
	env        text COLLATE "C" NOT NULL,
	scope      text COLLATE "C" NOT NULL,
	name       text COLLATE "C" NOT NULL,
	token      bigint NOT NULL,
	written_at timestamptz NOT NULL,
	data       bytea NOT NULL,
	PRIMARY KEY (env, scope, name)
);

CREATE TABLE {s}.quarantine (
	env    text COLLATE "C" NOT NULL,
	scope  text COLLATE "C" NOT NULL,
	run_id text COLLATE "C" NOT NULL,
	at     timestamptz NOT NULL,
	data   bytea NOT NULL,
	PRIMARY KEY (env, scope, run_id)
);

-- fence is the first statement of every fenced write (docs/design.md
-- §2.8). It locks the lease row FOR SHARE if it still names the holder and
-- token and has not expired by the database clock, and raises SQLSTATE SP001
-- otherwise, which aborts the transaction the write runs in. The row lock
-- lasts until that transaction ends: a takeover or a release (an UPDATE of
-- the row) waits for the write to commit, and a write queued behind a
-- takeover re-reads the row under READ COMMITTED and finds it gone.
CREATE FUNCTION {s}.fence(p_env text, p_scope text, p_holder text, p_token bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	cur record;
BEGIN
	PERFORM 1 FROM {s}.leases
	 WHERE env = p_env AND scope = p_scope AND holder = p_holder AND token = p_token
	   AND expires_at > clock_timestamp()
	   FOR SHARE;
	IF FOUND THEN
		RETURN p_token;
	END IF;
	SELECT holder, token, expires_at INTO cur FROM {s}.leases WHERE env = p_env AND scope = p_scope;
	IF NOT FOUND THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = 'the scope has no lease record';
	ELSIF cur.holder IS NULL THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease was released (token %s)', cur.token);
	ELSIF cur.holder <> p_holder OR cur.token <> p_token THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease is now %s''s with token %s', cur.holder, cur.token);
	ELSE
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease expired at %s',
			to_char(cur.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
	END IF;
END
$$;
`,
	// 2: stacks. Every table is keyed by (env, stack, scope). Rows written
	// before get the empty stack, which only parent leases may have; the
	// other scopes are listed in unmigrated, and Open refuses the store
	// (STORE_LAYOUT_OLD) until Migrate gave them a stack.
	`
ALTER TABLE {s}.latest DROP CONSTRAINT latest_env_scope_run_id_fkey;
ALTER TABLE {s}.leases     ADD COLUMN stack text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.receipts   ADD COLUMN stack text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.latest     ADD COLUMN stack text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.owners     ADD COLUMN stack text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.states     ADD COLUMN stack text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.records    ADD COLUMN stack text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.quarantine ADD COLUMN stack text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.leases     DROP CONSTRAINT leases_pkey,     ADD PRIMARY KEY (env, stack, scope);
ALTER TABLE {s}.receipts   DROP CONSTRAINT receipts_pkey,   ADD PRIMARY KEY (env, stack, scope, run_id);
ALTER TABLE {s}.latest     DROP CONSTRAINT latest_pkey,     ADD PRIMARY KEY (env, stack, scope),
	ADD FOREIGN KEY (env, stack, scope, run_id) REFERENCES {s}.receipts (env, stack, scope, run_id) ON UPDATE CASCADE;
ALTER TABLE {s}.owners     DROP CONSTRAINT owners_pkey,     ADD PRIMARY KEY (env, stack, scope, ord);
ALTER TABLE {s}.states     DROP CONSTRAINT states_pkey,     ADD PRIMARY KEY (env, stack, scope);
ALTER TABLE {s}.records    DROP CONSTRAINT records_pkey,    ADD PRIMARY KEY (env, stack, scope, name);
ALTER TABLE {s}.quarantine DROP CONSTRAINT quarantine_pkey, ADD PRIMARY KEY (env, stack, scope, run_id);
ALTER TABLE {s}.leases     ALTER COLUMN stack DROP DEFAULT;
ALTER TABLE {s}.receipts   ALTER COLUMN stack DROP DEFAULT;
ALTER TABLE {s}.latest     ALTER COLUMN stack DROP DEFAULT;
ALTER TABLE {s}.owners     ALTER COLUMN stack DROP DEFAULT;
ALTER TABLE {s}.states     ALTER COLUMN stack DROP DEFAULT;
ALTER TABLE {s}.records    ALTER COLUMN stack DROP DEFAULT;
ALTER TABLE {s}.quarantine ALTER COLUMN stack DROP DEFAULT;

-- The scopes written before stacks, until Migrate moves them into one.
CREATE TABLE {s}.unmigrated (
	env   text COLLATE "C" NOT NULL,
	scope text COLLATE "C" NOT NULL,
	PRIMARY KEY (env, scope)
);
INSERT INTO {s}.unmigrated (env, scope)
SELECT env, scope FROM {s}.leases   WHERE scope NOT LIKE '\_parent-%' UNION
SELECT env, scope FROM {s}.receipts WHERE scope NOT LIKE '\_parent-%' UNION
SELECT env, scope FROM {s}.states   WHERE scope NOT LIKE '\_parent-%' UNION
SELECT env, scope FROM {s}.records  WHERE scope NOT LIKE '\_parent-%' UNION
SELECT env, scope FROM {s}.quarantine WHERE scope NOT LIKE '\_parent-%' UNION
SELECT env, scope FROM {s}.owners   WHERE scope NOT LIKE '\_parent-%';

DROP FUNCTION {s}.fence(text, text, text, bigint);
CREATE FUNCTION {s}.fence(p_env text, p_stack text, p_scope text, p_holder text, p_token bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	cur record;
BEGIN
	PERFORM 1 FROM {s}.leases
	 WHERE env = p_env AND stack = p_stack AND scope = p_scope AND holder = p_holder AND token = p_token
	   AND expires_at > clock_timestamp()
	   FOR SHARE;
	IF FOUND THEN
		RETURN p_token;
	END IF;
	SELECT holder, token, expires_at INTO cur FROM {s}.leases WHERE env = p_env AND stack = p_stack AND scope = p_scope;
	IF NOT FOUND THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = 'the scope has no lease record';
	ELSIF cur.holder IS NULL THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease was released (token %s)', cur.token);
	ELSIF cur.holder <> p_holder OR cur.token <> p_token THEN
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease is now %s''s with token %s', cur.holder, cur.token);
	ELSE
		RAISE EXCEPTION USING ERRCODE = 'SP001', MESSAGE = format('the lease expired at %s',
			to_char(cur.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
	END IF;
END
$$;
`,
	// 3: who holds a lease, for people (store.HolderInfo, JSON): NULL while
	// the lease is free or when the holder gave no description.
	`
ALTER TABLE {s}.leases ADD COLUMN about jsonb;
`,
	// 4: grants (docs/design.md §5.4, §9). The stack prefixes each role
	// may use, the one rule the row-level security policies printed by
	// PerStackSQL and the store's own check before a read (Store.checkKey)
	// both apply: stack_granted is that rule. A prefix is bounded at a path
	// boundary: "github.com/acme/infra" grants that stack and every
	// "github.com/acme/infra/..." and "github.com/acme/infra//...", never
	// "github.com/acme/infra-secrets". starts_with compares bytes, so no
	// character of a prefix is a wildcard. Every role reads its own rows
	// only, and nobody but the owner writes any: without an INSERT policy,
	// row-level security refuses every other role's insert.
	`
CREATE TABLE {s}.grants (
	role   text COLLATE "C" NOT NULL,
	prefix text COLLATE "C" NOT NULL CHECK (prefix <> '' AND right(prefix, 1) <> '/'),
	PRIMARY KEY (role, prefix)
);
ALTER TABLE {s}.grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON {s}.grants FOR SELECT USING (role = current_user);
GRANT SELECT ON {s}.grants TO PUBLIC;

CREATE FUNCTION {s}.stack_granted(p_stack text) RETURNS boolean LANGUAGE sql STABLE AS $$
SELECT p_stack = '' OR EXISTS (
	SELECT 1 FROM {s}.grants g
	 WHERE g.role = current_user
	   AND (p_stack = g.prefix OR starts_with(p_stack, g.prefix || '/')))
$$;
`,
}

// SchemaVersion returns the schema version this build creates and the
// newest it can use.
func SchemaVersion() int { return len(migrations) }

// fenceState is the SQLSTATE fence raises when the lease is not held.
const fenceState = "SP001"

// lockClass is the first key of the two-int4 advisory lock that serialises
// migrations ("Spns"). OpenTofu's pg backend takes single-bigint advisory
// locks, a key space that does not overlap with the two-int4 one.
const lockClass = 0x53706e73

// migrate brings the schema to SchemaVersion. The fast path is one read of
// the version table, so a store whose schema was created by an owner can be
// used by a role without CREATE rights. The slow path runs in a transaction
// under a transaction-scoped advisory lock, so concurrent first runs create
// the schema once and the others find it done; the lock ends with the
// transaction, whatever happens to the connection.
func (s *Store) migrate(ctx context.Context) error {
	return s.do(ctx, "prepare the schema", func(ctx context.Context, _ int) error {
		v, err := s.schemaVersion(ctx, s.pool)
		if err != nil && !missingSchema(err) {
			return err
		}
		if err == nil && v == SchemaVersion() {
			return nil
		}
		if err == nil && v > SchemaVersion() {
			return newerSchema(s.schema, v)
		}
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return s.migrateLocked(ctx, tx) })
	})
}

// migrateLocked is migrate's slow path, in tx: take the advisory lock,
// create the schema and its version table where missing, and run every
// migration after the version recorded.
func (s *Store) migrateLocked(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", int32(lockClass), schemaLockKey(s.schema)); err != nil {
		return err
	}
	if err := s.createSchema(ctx, tx); err != nil {
		return err
	}
	v, err := s.schemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v > SchemaVersion() {
		return newerSchema(s.schema, v)
	}
	for ; v < SchemaVersion(); v++ {
		if _, err := tx.Exec(ctx, s.sql(migrations[v])); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.sql("INSERT INTO {s}.schema_version (version) VALUES ($1)"), v+1); err != nil {
			return err
		}
	}
	return nil
}

// createSchema creates the schema and its version table where missing.
// CREATE SCHEMA checks the right to create schemas in the database even
// when the schema exists: it is only asked for when it does not, so a role
// with rights on the schema alone can migrate it.
func (s *Store) createSchema(ctx context.Context, tx pgx.Tx) error {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regnamespace($1) IS NOT NULL", s.schema).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := tx.Exec(ctx, s.sql("CREATE SCHEMA {s}")); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, s.sql(`
CREATE TABLE IF NOT EXISTS {s}.schema_version (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	applied_by text NOT NULL DEFAULT current_user
)`))
	return err
}

// schemaLockKey is the second key of the advisory lock of schema.
func schemaLockKey(schema string) int32 { return int32(crc32.ChecksumIEEE([]byte(schema))) }

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRow(ctx, s.sql("SELECT coalesce(max(version), 0) FROM {s}.schema_version")).Scan(&v)
	return v, err
}

// missingSchema reports an undefined schema or table: a store never used.
func missingSchema(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "3F000" || pe.Code == "42P01")
}

// newerSchema is STORE_LAYOUT_NEWER: the schema version is the store's
// layout version.
func newerSchema(schema string, v int) error {
	return store.NewerLayoutError("PostgreSQL schema "+schema, v, SchemaVersion())
}

// sql puts the schema name into a statement.
func (s *Store) sql(q string) string { return strings.ReplaceAll(q, "{s}", s.schema) }
