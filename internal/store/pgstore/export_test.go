package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Internals for the tests of package pgstore_test.

// OwnersByIdentity is the foreign-check query, with the schema put in.
func (s *Store) OwnersByIdentity() string { return s.sql(ownersByIdentity) }

// Pool is the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema is the store's schema name.
func (s *Store) Schema() string { return s.schema }

// AcquireAttempt runs one attempt of Acquire with a given nonce, as the
// retry loop would.
func (s *Store) AcquireAttempt(ctx context.Context, key store.Key, holder string, ttl time.Duration, nonce string, attempt int) (store.Grant, error) {
	var g store.Grant
	err := s.acquireOnce(ctx, key, holder, ttl, nonce, attempt, &g)
	return g, err
}

// ReleaseAttempt runs one attempt of Release, as the retry loop would.
func (s *Store) ReleaseAttempt(ctx context.Context, l store.Lease, attempt int) error {
	return s.releaseOnce(ctx, l, attempt)
}

// StepBudgetClock makes s measure its retry budget on a clock that moves by
// step every time it is read, so a test decides how many attempts fit in
// the budget, whatever the machine's speed.
func StepBudgetClock(s *Store, step time.Duration) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.budgetClock = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}
