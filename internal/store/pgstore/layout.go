package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

var _ store.Migrator = (*Store)(nil)

// WithOldLayout opens a store that still has scopes written before stacks,
// for Migrate alone.
func WithOldLayout() Option { return func(s *Store) { s.oldLayout = true } }

// checkOpen is Open's one statement after the schema's version: it reads
// whether the store still has scopes written before stacks (schema
// migration 2 listed them in unmigrated: their rows have no stack, so every
// read would find them empty) and what row-level security grants the
// connecting role (s.access, see checkKey). A store with unmigrated scopes
// is refused unless opened WithOldLayout, for Migrate.
func (s *Store) checkOpen(ctx context.Context) error {
	var n int
	var example string
	var acc access
	err := s.do(ctx, "check the store's layout and grants", func(ctx context.Context, _ int) error {
		return s.pool.QueryRow(ctx, s.sql(`
SELECT count(*), coalesce(min(env || '/' || scope), ''), current_user::text, row_security_active('{s}.states'),
       coalesce((SELECT array_agg(prefix ORDER BY prefix) FROM {s}.grants WHERE role = current_user), '{}')
  FROM {s}.unmigrated`)).Scan(&n, &example, &acc.role, &acc.bound, &acc.prefixes)
	})
	if err != nil {
		return err
	}
	s.access = acc
	if n > 0 && !s.oldLayout {
		return store.OldLayoutError(s.name, fmt.Sprintf("%d scope(s), e.g. %s", n, example))
	}
	return nil
}

// tables are the tables keyed by (env, stack, scope), receipts first: its
// update cascades to latest, whose foreign key points at it.
var tables = []string{"receipts", "leases", "owners", "states", "records", "quarantine", "latest"}

// Migrate gives every scope written before stacks the stack, in one
// transaction under the schema's advisory lock: their rows keep
// everything, the lease token included, and gain the stack. Parent leases
// keep the empty stack. A live lease of such a scope refuses the whole
// migration with LOCK_HELD.
func (s *Store) Migrate(ctx context.Context, stack string) ([]store.Key, error) {
	if err := store.CheckStack(stack); err != nil {
		return nil, err
	}
	if err := s.checkStack(stack); err != nil {
		return nil, err
	}
	var moved []store.Key
	err := s.do(ctx, "migrate the store to stacks", func(ctx context.Context, _ int) error {
		moved = nil
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", int32(lockClass), schemaLockKey(s.schema)); err != nil {
				return err
			}
			var env, scope, holder string
			var info store.LeaseInfo
			err := tx.QueryRow(ctx, s.sql(`
SELECT l.env, l.scope, l.holder, l.token, l.acquired_at, l.expires_at
  FROM {s}.leases l JOIN {s}.unmigrated u ON u.env = l.env AND u.scope = l.scope
 WHERE l.stack = '' AND l.holder IS NOT NULL AND l.expires_at > clock_timestamp()
 LIMIT 1`)).Scan(&env, &scope, &holder, &info.Token, &info.AcquiredAt, &info.ExpiresAt)
			if err == nil {
				info.Holder = holder
				info.AcquiredAt, info.ExpiresAt = info.AcquiredAt.UTC(), info.ExpiresAt.UTC()
				return &store.HeldError{Key: store.Key{Environment: env, Scope: scope}, Lease: info}
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			rows, err := tx.Query(ctx, s.sql(`SELECT env, scope FROM {s}.unmigrated ORDER BY env, scope`))
			if err != nil {
				return err
			}
			keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Key, error) {
				k := store.Key{Stack: stack}
				err := r.Scan(&k.Environment, &k.Scope)
				return k, err
			})
			if err != nil {
				return err
			}
			for _, t := range tables {
				if _, err := tx.Exec(ctx, s.sql(`
UPDATE {s}.`+t+` x SET stack = $1
  FROM {s}.unmigrated u
 WHERE x.stack = '' AND x.env = u.env AND x.scope = u.scope`), stack); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, s.sql(`DELETE FROM {s}.unmigrated`)); err != nil {
				return err
			}
			moved = keys
			return nil
		})
	})
	var held *store.HeldError
	if errors.As(err, &held) {
		return nil, held
	}
	return moved, err
}
