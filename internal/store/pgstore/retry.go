package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Backoff between attempts after a transient failure.
const (
	minDelay = 25 * time.Millisecond
	maxDelay = 2 * time.Second
)

// do runs op until it succeeds, fails for a reason a retry cannot change, or
// the retry budget (counted from the first attempt) or ctx runs out. Each
// attempt gets its own timeout, so a server that stopped answering costs one
// attempt, not the budget.
//
// Why retrying is safe (docs/design.md §2.8 "Fenced write"): a connection that drops
// after a statement was sent leaves the client not knowing whether it
// committed. Every operation is therefore written to be run again:
//
//   - a fenced write re-runs the whole transaction, fence included, so it
//     writes again only if the lease is still held at that moment, and what
//     it writes (the same receipt, state or record) replaces itself;
//   - Renew re-checks the lease and extends it from the database's now;
//   - Acquire and Release would misread their own committed effect as
//     someone else's (a lease held by us, a lease already released), so on
//     a retry they first look for it: Acquire by the nonce it stored in the
//     row, Release by the token still being ours with the holder cleared.
//
// A write that found the lease lost (SQLSTATE SP001 from fence) is never
// retried: it returns store.ErrLeaseLost and the run stops with LOCK_LOST.
func (s *Store) do(ctx context.Context, what string, op func(ctx context.Context, attempt int) error) error {
	if s.closed.Load() {
		return errcode.New(errcode.Internal, "cannot %s: the PostgreSQL store %s is closed", what, s.name)
	}
	start := s.budgetClock()
	delay := minDelay
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, s.attemptTimeout)
		err := op(actx, attempt)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return s.ctxError(ctx, what, err)
		}
		if !transient(err) {
			return s.permanent(what, err)
		}
		if s.closed.Load() { // the pool went away under us: nothing to wait for
			return errcode.Wrap(errcode.Internal, err, "cannot %s: the PostgreSQL store %s was closed", what, s.name)
		}
		wait := delay/2 + rand.N(delay)
		if s.budgetClock().Sub(start)+wait > s.budget {
			return errcode.Wrap(errcode.StoreUnavailable, err, "the PostgreSQL store %s could not %s within %s (%d attempts)",
				s.name, what, s.budget, attempt+1).With("store", s.name)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.ctxError(ctx, what, err)
		case <-t.C:
		}
		delay = min(2*delay, maxDelay)
	}
}

// transient reports whether a failure may go away by itself: the connection
// was refused, dropped or timed out, the server is shutting down, starting
// up or out of connections, or a transaction lost a deadlock or
// serialization race. Errors of our own (lease lost, lease held, usage) and
// answers of the server about the request itself are not.
func transient(err error) bool {
	var (
		held *store.HeldError
		ce   *errcode.Error
		pe   *pgconn.PgError
	)
	switch {
	case errors.Is(err, store.ErrLeaseLost), errors.As(err, &held), errors.As(err, &ce):
		return false
	case errors.As(err, &pe):
		if strings.HasPrefix(pe.Code, "08") { // connection exception
			return true
		}
		switch pe.Code {
		case "57P01", // admin_shutdown: pg_terminate_backend, a fast shutdown
			"57P02", // crash_shutdown: another backend crashed, the server restarts
			"57P03", // cannot_connect_now: starting up or in recovery
			"57P05", // idle_session_timeout
			"57014", // query_canceled: statement_timeout, lock_timeout
			"53300", // too_many_connections
			"40001", // serialization_failure
			"40P01", // deadlock_detected
			"25006": // read_only_sql_transaction: connected to a standby mid-failover
			return true
		}
		return false
	}
	// Everything else comes from the connection (refused, reset, EOF,
	// timeout, closed by the pool after the server went away).
	return true
}

// permanent gives a failure that retrying cannot change its code.
func (s *Store) permanent(what string, err error) error {
	var (
		held *store.HeldError
		ce   *errcode.Error
		pe   *pgconn.PgError
	)
	switch {
	case errors.Is(err, store.ErrLeaseLost), errors.As(err, &held), errors.As(err, &ce):
		return err
	case errors.As(err, &pe):
		switch {
		case pe.Code == fenceState:
			return fmt.Errorf("%w: %s", store.ErrLeaseLost, pe.Message)
		case strings.HasPrefix(pe.Code, "28"), pe.Code == "42501": // invalid authorization, insufficient privilege
			return errcode.Wrap(errcode.StorePermission, err, "the PostgreSQL store %s refused to %s", s.name, what).
				WithHint("Check the user, its password (PGPASSWORD or ~/.pgpass) and its privileges on schema "+s.schema+"; "+
					"a role without CREATE rights needs the schema created once by its owner.").With("store", s.name)
		case pe.Code == "3D000": // invalid_catalog_name
			return errcode.Wrap(errcode.StoreUnavailable, err, "the PostgreSQL store %s has no such database", s.name).
				WithHint("Create the database (CREATE DATABASE ...) or fix the database name in the store URL.").With("store", s.name)
		case strings.HasPrefix(pe.Code, "22"), strings.HasPrefix(pe.Code, "23"): // data exception, integrity
			return errcode.Wrap(errcode.StoreRejected, err, "the PostgreSQL store %s rejected the request to %s", s.name, what).With("store", s.name)
		}
	}
	return errcode.Wrap(errcode.Internal, err, "the PostgreSQL store %s failed to %s", s.name, what).With("store", s.name)
}

// ctxError is the error of an operation whose context ended: INTERRUPTED
// for a cancellation, STORE_UNAVAILABLE for a deadline, with ctx.Err() in
// the chain for errors.Is.
func (s *Store) ctxError(ctx context.Context, what string, last error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errcode.Wrap(errcode.StoreUnavailable, ctx.Err(), "the PostgreSQL store %s did not %s before the deadline (last error: %v)", s.name, what, last).With("store", s.name)
	}
	return errcode.Wrap(errcode.Interrupted, ctx.Err(), "interrupted while the PostgreSQL store %s was to %s", s.name, what)
}
