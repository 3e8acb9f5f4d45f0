package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// WriteReceipt stores r as the run's receipt and the scope's latest, and
// rewrites the scope's part of the ownership index from r's ledger, fenced
// by l, all in one transaction. r must name l's environment and scope and
// read back with receipt.Parse: the store never writes a receipt it would
// later report as corrupt.
func (s *Store) WriteReceipt(ctx context.Context, l store.Lease, r *receipt.Receipt) error {
	if err := s.checkKey(l.Key); err != nil {
		return err
	}
	data, parsed, err := store.EncodeReceipt(l.Key, r)
	if err != nil {
		return err
	}
	// The index is built from the parsed copy: it went through JSON, so
	// its strings are valid UTF-8 like the stored document's.
	rows := store.IndexRows(parsed)
	n := len(rows)
	ids, addrs, by := make([]string, n), make([]string, n), make([]string, n)
	for i, e := range rows {
		ids[i], addrs[i], by[i] = e.Identity, e.Address, e.CreatedBy
	}
	env, scope, stack := l.Key.Environment, l.Key.Scope, l.Key.Stack
	return s.fenced(ctx, "write the receipt of run "+r.RunID+" to "+l.Key.String(), l, func(b *pgx.Batch) {
		b.Queue(s.sql(`
INSERT INTO {s}.receipts AS r (env, scope, run_id, token, written_at, body, stack)
VALUES ($1, $2, $3, $4, clock_timestamp(), $5::json, $6)
ON CONFLICT (env, stack, scope, run_id) DO UPDATE
   SET token = EXCLUDED.token, written_at = EXCLUDED.written_at, body = EXCLUDED.body`),
			env, scope, r.RunID, l.Token, string(data), stack)
		// The token condition is storage-side fencing: an older token
		// never replaces a newer one, whatever happened to the lease.
		b.Queue(s.sql(`
INSERT INTO {s}.latest AS t (env, scope, run_id, token, written_at, stack)
VALUES ($1, $2, $3, $4, clock_timestamp(), $5)
ON CONFLICT (env, stack, scope) DO UPDATE
   SET run_id = EXCLUDED.run_id, token = EXCLUDED.token, written_at = EXCLUDED.written_at
 WHERE t.token <= EXCLUDED.token`),
			env, scope, r.RunID, l.Token, stack)
		// The scope's part of the index is replaced as a whole when it
		// changed, and left as it is when its rows are the ledger's
		// already (store.SameOwners: a run that changed no ownership);
		// an identity it already listed keeps its Since, and its run
		// when its address and origin are the same (store.OwnersOf).
		// Deleting and inserting in one statement lets the insert read
		// what was deleted, and every part of it sees the rows as they
		// were before.
		b.Queue(s.sql(`
WITH o AS (SELECT u.identity COLLATE "C" AS identity, u.address, u.created_by, u.n::integer AS n
             FROM unnest($4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS u(identity, address, created_by, n)),
cur AS (SELECT ord, identity, address, created_by FROM {s}.owners WHERE env = $1 AND scope = $2 AND stack = $7),
same AS (SELECT NOT EXISTS (SELECT n, identity, address, created_by FROM o EXCEPT SELECT * FROM cur)
            AND NOT EXISTS (SELECT * FROM cur EXCEPT SELECT n, identity, address, created_by FROM o) AS v),
prev AS (DELETE FROM {s}.owners WHERE env = $1 AND scope = $2 AND stack = $7 AND NOT (SELECT v FROM same)
         RETURNING identity, since, address, created_by, run_id)
INSERT INTO {s}.owners (env, scope, ord, identity, address, created_by, run_id, since, stack)
SELECT $1, $2, o.n, o.identity, o.address, o.created_by, coalesce(r.run_id, $3), coalesce(p.since, clock_timestamp()), $7
  FROM o
  LEFT JOIN (SELECT identity, min(since) AS since FROM prev GROUP BY identity) p ON p.identity = o.identity
  LEFT JOIN LATERAL (SELECT q.run_id FROM prev q
                      WHERE q.identity = o.identity AND q.address = o.address AND q.created_by = o.created_by AND q.run_id <> ''
                      LIMIT 1) r ON true
 WHERE NOT (SELECT v FROM same)`),
			env, scope, r.RunID, ids, addrs, by, stack)
	})
}

// LatestReceipt returns the scope's latest receipt, nil if it has none. A
// stored receipt that does not parse is an error (RECEIPT_CORRUPT or
// RECEIPT_VERSION), never an empty scope.
func (s *Store) LatestReceipt(ctx context.Context, key store.Key) (*receipt.Receipt, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	var body *string
	err := s.do(ctx, "read the latest receipt of "+key.String(), func(ctx context.Context, _ int) error {
		body = nil
		err := s.pool.QueryRow(ctx, s.sql(`
SELECT r.body::text FROM {s}.latest t
  JOIN {s}.receipts r ON r.env = t.env AND r.stack = t.stack AND r.scope = t.scope AND r.run_id = t.run_id
 WHERE t.env = $1 AND t.scope = $2 AND t.stack = $3`), key.Environment, key.Scope, key.Stack).Scan(&body)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil || body == nil {
		return nil, err
	}
	return parseReceipt(key, *body)
}

func parseReceipt(key store.Key, body string) (*receipt.Receipt, error) {
	r, err := receipt.Parse([]byte(body))
	if err != nil {
		where := "the latest receipt of " + key.String()
		var e *errcode.Error
		if errors.As(err, &e) {
			// Keep Parse's code and hint; say which receipt it was.
			return nil, (&errcode.Error{Code: e.Code, Message: where + ": " + e.Message, Hint: e.Hint, Err: e}).With("scope", key.String())
		}
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "%s", where)
	}
	return r, nil
}

// WriteState replaces the scope's Terraform state, fenced by l.
func (s *Store) WriteState(ctx context.Context, l store.Lease, state []byte) error {
	if err := s.checkKey(l.Key); err != nil {
		return err
	}
	if state == nil {
		state = []byte{}
	}
	return s.fenced(ctx, "write the state of "+l.Key.String(), l, func(b *pgx.Batch) {
		b.Queue(s.sql(`
INSERT INTO {s}.states AS st (env, scope, token, written_at, data, stack)
VALUES ($1, $2, $3, clock_timestamp(), $4, $5)
ON CONFLICT (env, stack, scope) DO UPDATE
   SET token = EXCLUDED.token, written_at = EXCLUDED.written_at, data = EXCLUDED.data
 WHERE st.token <= EXCLUDED.token`), l.Key.Environment, l.Key.Scope, l.Token, state, l.Key.Stack)
	})
}

// ReadState returns the scope's Terraform state, nil if it has none.
func (s *Store) ReadState(ctx context.Context, key store.Key) ([]byte, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	return s.readBytes(ctx, "read the state of "+key.String(),
		`SELECT data FROM {s}.states WHERE env = $1 AND scope = $2 AND stack = $3`, key.Environment, key.Scope, key.Stack)
}

// readBytes reads one bytea value, nil when there is no row.
func (s *Store) readBytes(ctx context.Context, what, q string, args ...any) ([]byte, error) {
	var out []byte
	err := s.do(ctx, what, func(ctx context.Context, _ int) error {
		out = nil
		err := s.pool.QueryRow(ctx, s.sql(q), args...).Scan(&out)
		if errors.Is(err, pgx.ErrNoRows) {
			out = nil
			return nil
		}
		if err == nil && out == nil {
			out = []byte{}
		}
		return err
	})
	return out, err
}

// WriteRecord stores a record of the scope, fenced by l.
func (s *Store) WriteRecord(ctx context.Context, l store.Lease, name string, data []byte) error {
	if err := s.checkKey(l.Key); err != nil {
		return err
	}
	if err := store.CheckName("record", name); err != nil {
		return err
	}
	if data == nil {
		data = []byte{}
	}
	return s.fenced(ctx, "write the record "+name+" of "+l.Key.String(), l, func(b *pgx.Batch) {
		b.Queue(s.sql(`
INSERT INTO {s}.records AS rc (env, scope, name, token, written_at, data, stack)
VALUES ($1, $2, $3, $4, clock_timestamp(), $5, $6)
ON CONFLICT (env, stack, scope, name) DO UPDATE
   SET token = EXCLUDED.token, written_at = EXCLUDED.written_at, data = EXCLUDED.data
 WHERE rc.token <= EXCLUDED.token`), l.Key.Environment, l.Key.Scope, name, l.Token, data, l.Key.Stack)
	})
}

// ReadRecord returns a record of the scope, nil if there is none.
func (s *Store) ReadRecord(ctx context.Context, key store.Key, name string) ([]byte, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	if err := store.CheckName("record", name); err != nil {
		return nil, err
	}
	return s.readBytes(ctx, "read the record "+name+" of "+key.String(),
		`SELECT data FROM {s}.records WHERE env = $1 AND scope = $2 AND name = $3 AND stack = $4`, key.Environment, key.Scope, name, key.Stack)
}

// DeleteRecord removes a record, fenced by l; a missing record is not an
// error.
func (s *Store) DeleteRecord(ctx context.Context, l store.Lease, name string) error {
	if err := s.checkKey(l.Key); err != nil {
		return err
	}
	if err := store.CheckName("record", name); err != nil {
		return err
	}
	return s.fenced(ctx, "delete the record "+name+" of "+l.Key.String(), l, func(b *pgx.Batch) {
		b.Queue(s.sql(`DELETE FROM {s}.records WHERE env = $1 AND scope = $2 AND name = $3 AND stack = $4`), l.Key.Environment, l.Key.Scope, name, l.Key.Stack)
	})
}

// Quarantine keeps a state a run could not write, under the run's id,
// without a fence: it can replace nothing but its own earlier copy, and
// never the scope's state.
func (s *Store) Quarantine(ctx context.Context, key store.Key, runID string, state []byte) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	if err := store.CheckName("run id", runID); err != nil {
		return err
	}
	if state == nil {
		state = []byte{}
	}
	return s.do(ctx, "quarantine the state of run "+runID+" in "+key.String(), func(ctx context.Context, _ int) error {
		_, err := s.pool.Exec(ctx, s.sql(`
INSERT INTO {s}.quarantine (env, scope, run_id, at, data, stack) VALUES ($1, $2, $3, clock_timestamp(), $4, $5)
ON CONFLICT (env, stack, scope, run_id) DO UPDATE SET at = EXCLUDED.at, data = EXCLUDED.data`),
			key.Environment, key.Scope, runID, state, key.Stack)
		return err
	})
}

// ListQuarantine returns the quarantined states of key, oldest first.
func (s *Store) ListQuarantine(ctx context.Context, key store.Key) ([]store.Quarantined, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	var out []store.Quarantined
	err := s.do(ctx, "list the quarantined states of "+key.String(), func(ctx context.Context, _ int) error {
		rows, err := s.pool.Query(ctx, s.sql(`
SELECT run_id, at, data FROM {s}.quarantine WHERE env = $1 AND scope = $2 AND stack = $3 ORDER BY at, run_id`),
			key.Environment, key.Scope, key.Stack)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Quarantined, error) {
			var q store.Quarantined
			err := row.Scan(&q.RunID, &q.At, &q.State)
			q.At = q.At.UTC()
			return q, err
		})
		return err
	})
	return out, err
}

// The queries of Owners. ownersByIdentity is the foreign check: one probe
// of owners_by_identity per identity asked for. It is written as a join on
// the identities rather than identity = ANY(...), which without fresh
// statistics the planner turns into a scan of the whole environment.
const (
	ownersAll = `
SELECT stack, scope, identity, address, created_by, run_id, since FROM {s}.owners WHERE env = $1 ORDER BY stack, scope, ord`
	ownersByIdentity = `
SELECT o.stack, o.scope, o.identity, o.address, o.created_by, o.run_id, o.since
  FROM unnest($2::text[]) AS i(identity)
  JOIN {s}.owners o ON o.env = $1 AND o.identity = i.identity
 ORDER BY o.stack, o.scope, o.ord`
)

// Owners returns the ownership index entries of env whose identity is one of
// identities (all of them when identities is nil): one query on the index
// (env, identity), however many scopes env has. Entries come in scope order,
// then ledger order.
func (s *Store) Owners(ctx context.Context, env string, identities []string) ([]store.Owner, error) {
	if err := store.CheckName("environment", env); err != nil {
		return nil, err
	}
	q, args := ownersAll, []any{env}
	if identities != nil {
		// An identity the database cannot store cannot be in the index.
		// Each identity once: the join would repeat an owner per copy.
		ids := make([]string, 0, len(identities))
		seen := make(map[string]bool, len(identities))
		for _, id := range identities {
			if storable(id) && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return []store.Owner{}, nil
		}
		q, args = ownersByIdentity, []any{env, ids}
	}
	var out []store.Owner
	err := s.do(ctx, "read the ownership index of "+env, func(ctx context.Context, _ int) error {
		rows, err := s.pool.Query(ctx, s.sql(q), args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Owner, error) {
			var o store.Owner
			err := row.Scan(&o.Stack, &o.Scope, &o.Identity, &o.Address, &o.CreatedBy, &o.RunID, &o.Since)
			o.Since = o.Since.UTC()
			return o, err
		})
		return err
	})
	if out == nil && err == nil {
		out = []store.Owner{}
	}
	return out, err
}

// List returns the scopes of env that have a lease record (every scope
// that ever had a receipt has one), sorted by name, with their latest
// receipts. A receipt that does not parse fails the listing, naming the
// scope, rather than showing the scope as empty.
func (s *Store) List(ctx context.Context, env string) ([]store.ScopeSummary, error) {
	if err := store.CheckName("environment", env); err != nil {
		return nil, err
	}
	type row struct {
		stack, scope     string
		holder, body     *string
		about            *string
		token            int64
		acquired, expiry time.Time
	}
	var rowsOut []row
	err := s.do(ctx, "list the scopes of "+env, func(ctx context.Context, _ int) error {
		rows, err := s.pool.Query(ctx, s.sql(`
SELECT l.stack, l.scope, l.holder, l.token, l.acquired_at, l.expires_at, r.body::text, l.about::text
  FROM {s}.leases l
  LEFT JOIN {s}.latest t ON t.env = l.env AND t.stack = l.stack AND t.scope = l.scope
  LEFT JOIN {s}.receipts r ON r.env = t.env AND r.stack = t.stack AND r.scope = t.scope AND r.run_id = t.run_id
 WHERE l.env = $1 AND (l.stack <> '' OR l.scope LIKE '\_parent-%')
 ORDER BY l.stack, l.scope`), env)
		if err != nil {
			return err
		}
		rowsOut, err = pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
			var r row
			err := cr.Scan(&r.stack, &r.scope, &r.holder, &r.token, &r.acquired, &r.expiry, &r.body, &r.about)
			return r, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]store.ScopeSummary, 0, len(rowsOut))
	for _, r := range rowsOut {
		k := store.Key{Stack: r.stack, Environment: env, Scope: r.scope}
		sum := store.ScopeSummary{Key: k, Lease: store.LeaseInfo{Token: r.token, AcquiredAt: r.acquired.UTC(), ExpiresAt: r.expiry.UTC()}}
		if r.holder != nil {
			sum.Lease.Holder = *r.holder
			sum.Lease.About = decodeAbout(r.about)
		}
		if r.body != nil {
			if sum.Latest, err = parseReceipt(k, *r.body); err != nil {
				return nil, err
			}
		}
		out = append(out, sum)
	}
	return out, nil
}
