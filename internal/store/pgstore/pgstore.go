// Package pgstore is the PostgreSQL store backend (`--store postgres://...`),
// for teams whose runners outgrow one repository's push rate (docs/design.md §5.4).
// Sponson is only a client: leases, receipts, the ownership index, Terraform
// state, records and quarantined states are rows in tables of their own
// schema (`sponson` by default; OpenTofu's pg backend keeps its states in
// `terraform_remote_state`, so both can share a database).
//
// The design is the one measured in shared/reference/store-notes.md §3:
//
//   - Database clock. Expiry and takeover are decided by clock_timestamp()
//     on the server, never by a client's clock, and never by now(), which is
//     the start of the transaction. Expiry times returned to callers are the
//     server's.
//   - Leases are rows. Acquire is one INSERT ... ON CONFLICT DO UPDATE that
//     takes the row over only if it is free or expired, and increments the
//     token; Release clears the holder and keeps the token, so a token is
//     never handed out twice. No advisory locks: session locks die with a
//     connection the pool hands around.
//   - Fenced writes. Every write of a receipt, state or record is one
//     implicit transaction (a pipelined pgx batch, one round trip) whose
//     first statement, the SQL function fence, locks the lease row FOR
//     SHARE if it still names the writer's holder and token and has not
//     expired, and raises SQLSTATE SP001 otherwise, aborting the rest. The
//     row lock keeps a takeover out until the write has committed.
//   - The ownership index (table owners, indexed on environment and
//     identity) is rewritten for the scope in the same fenced transaction as
//     the receipt, so Owners is one indexed query however many scopes the
//     environment has, and a refused receipt leaves the index untouched.
//   - Faults. Connection failures are retried within a budget
//     (SPONSON_STORE_BUDGET, 60 s by default), then reported as
//     STORE_UNAVAILABLE; see Store.do for why a retry never writes under a
//     lease that is no longer held.
//   - Grants (PerStackSQL; docs/design.md §5.4): schema migration 4 holds
//     the rule in one place, the table grants, writable by the owner only,
//     and the function stack_granted(stack) that every row-level security
//     policy calls, comparing with starts_with and =, not LIKE, so no
//     character of a prefix is a wildcard. Open reads whether row-level
//     security binds the role in the one statement it already runs, and an
//     operation on a stack not granted then fails with STORE_PERMISSION
//     naming the grant (Granted is stack_granted in Go) instead of reading
//     another repository's scope as empty.
//   - The schema is versioned and migrated on first use under a
//     transaction-scoped advisory lock, so concurrent first runs do not
//     break each other.
package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

var _ store.Store = (*Store)(nil)

// Defaults of the options.
const (
	// DefaultBudget is how long an operation retries transient failures.
	DefaultBudget = 60 * time.Second
	// DefaultSchema holds Sponson's tables.
	DefaultSchema = "sponson"
	// DefaultAttemptTimeout bounds one attempt, so that a server that stops
	// answering costs an attempt, not the whole budget.
	DefaultAttemptTimeout = 15 * time.Second
	// DefaultMaxConns bounds each process's pool: a run needs a connection
	// for its writes and one for the renewal, and dozens of runs share one
	// server (max_connections is 100 by default).
	DefaultMaxConns = 4
	// applicationName is set on connections unless the DSN names one, so
	// that pg_stat_activity shows what they are.
	applicationName = "sponson"
)

// kvPassword is the password of a key/value connection string. The
// expressions of this package are compiled on first use: every sponson
// process, whatever its store, paid for compiling them at start
// (docs/design.md §8).
var kvPassword = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`password\s*=\s*('[^']*'|\S*)`)
})

// schemaName is what WithSchema and PerStackSQL accept as a schema or a
// role: a plain lower-case identifier that needs no quoting.
var schemaName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
})

// Store is the PostgreSQL store. It is safe for concurrent use; any number
// of Stores in any number of processes may share one database.
type Store struct {
	pool           *pgxpool.Pool
	schema         string
	name           string // the server, user and database, without password
	budget         time.Duration
	budgetClock    func() time.Time // measures the retry budget; time.Now but in tests
	attemptTimeout time.Duration
	maxConns       int32
	oldLayout      bool   // WithOldLayout: Open leaves unmigrated scopes to Migrate
	access         access // what row-level security lets the role use, read by Open
	closed         atomic.Bool
}

// Option configures Open.
type Option func(*Store)

// WithBudget sets how long an operation retries transient failures before
// it fails with STORE_UNAVAILABLE (DefaultBudget when d <= 0).
func WithBudget(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.budget = d
		}
	}
}

// WithAttemptTimeout bounds a single attempt of an operation
// (DefaultAttemptTimeout when d <= 0).
func WithAttemptTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.attemptTimeout = d
		}
	}
}

// WithSchema keeps the tables in another schema than DefaultSchema, to keep
// two installations apart in one database. name must be a plain lower-case
// identifier.
func WithSchema(name string) Option {
	return func(s *Store) { s.schema = name }
}

// WithMaxConns bounds the connection pool (DefaultMaxConns when n <= 0,
// unless the DSN sets pool_max_conns).
func WithMaxConns(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxConns = int32(n)
		}
	}
}

// Open connects to the database dsn names (a postgres:// URL or a key/value
// string, as libpq takes them; PGPASSWORD, PGHOST and the other PG*
// variables and ~/.pgpass fill in what it leaves out) and brings the schema
// to the current version. Connection failures are retried within the
// budget. The password never appears in an error.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s := &Store{schema: DefaultSchema, budget: DefaultBudget, budgetClock: time.Now, attemptTimeout: DefaultAttemptTimeout}
	for _, o := range opts {
		o(s)
	}
	if !schemaName().MatchString(s.schema) {
		return nil, errcode.New(errcode.Usage, "invalid PostgreSQL schema name %q: use a lower-case identifier", s.schema)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errcode.New(errcode.Usage, "invalid PostgreSQL connection string %s: %s", redactDSN(dsn), scrub(err, dsn)).
			WithHint("Use postgres://USER@HOST:PORT/DATABASE?sslmode=...; pass the password in PGPASSWORD or ~/.pgpass.")
	}
	s.name = describe(cfg.ConnConfig)
	switch {
	case s.maxConns > 0:
		cfg.MaxConns = s.maxConns
	case !strings.Contains(dsn, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = applicationName
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	// pgxpool connects lazily: nothing is dialled before migrate.
	s.pool, err = pgxpool.NewWithConfig(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return nil, errcode.New(errcode.Usage, "invalid PostgreSQL connection settings for %s: %s", s.name, scrub(err, dsn))
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	if err := s.checkOpen(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

// Name returns the server, user and database of the store, without any
// password, for messages.
func (s *Store) Name() string { return s.name }

// Close closes the store's connections. Leases are not released.
func (s *Store) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.pool.Close()
	}
	return nil
}

// Acquire grants the lease of key to holder for ttl (from the database's
// now). A live lease gives *store.HeldError, also when it is holder's own;
// an expired one is taken over and reported in Grant.Preempted. A done ctx
// is refused up front: a lease granted to a run being interrupted would
// block the scope for a whole TTL.
func (s *Store) Acquire(ctx context.Context, key store.Key, holder string, ttl time.Duration) (store.Grant, error) {
	if err := s.checkKey(key); err != nil {
		return store.Grant{}, err
	}
	if ctx.Err() != nil {
		return store.Grant{}, s.ctxError(ctx, "acquire the lease of "+key.String(), ctx.Err())
	}
	if holder == "" {
		return store.Grant{}, errcode.New(errcode.Usage, "a lease needs a holder")
	}
	if !storable(holder) || len(holder) > 256 {
		return store.Grant{}, errcode.New(errcode.Usage, "invalid lease holder %q: use up to 256 bytes of UTF-8 without NUL", holder)
	}
	if ttl < time.Millisecond {
		return store.Grant{}, errcode.New(errcode.Usage, "lease TTL must be at least 1ms, got %s", ttl)
	}
	nonce := newNonce()
	var g store.Grant
	err := s.do(ctx, "acquire the lease of "+key.String(), func(ctx context.Context, attempt int) error {
		return s.acquireOnce(ctx, key, holder, ttl, nonce, attempt, &g)
	})
	return g, err
}

// acquireOnce is one attempt of Acquire; nonce is the same for every
// attempt of one call.
func (s *Store) acquireOnce(ctx context.Context, key store.Key, holder string, ttl time.Duration, nonce string, attempt int, g *store.Grant) error {
	if attempt > 0 {
		// An earlier attempt may have committed before its answer was
		// lost: the row then carries our nonce.
		mine, err := s.ownGrant(ctx, key, holder, nonce, g)
		if err != nil || mine {
			return err
		}
	}
	// The grant and the read of a lease that refused it are two
	// statements: a lease released or expired in between is simply tried
	// again.
	for range 10 {
		granted, err := s.tryAcquire(ctx, key, holder, nonce, ttl, g)
		if err != nil || granted {
			return err
		}
		info, live, err := s.leaseRow(ctx, key)
		if err != nil {
			return err
		}
		if live {
			return &store.HeldError{Key: key, Lease: info}
		}
	}
	return errcode.New(errcode.StoreContended, "the lease of %s changed hands faster than it could be acquired", key)
}

// tryAcquire runs the grant statement. The preempted columns keep the lease
// a takeover replaced, so a retried Acquire can rebuild the whole Grant.
func (s *Store) tryAcquire(ctx context.Context, key store.Key, holder, nonce string, ttl time.Duration, g *store.Grant) (bool, error) {
	row := s.pool.QueryRow(ctx, s.sql(`
WITH now AS (SELECT clock_timestamp() AS t)
INSERT INTO {s}.leases AS l (env, scope, holder, token, acquired_at, expires_at, last_holder, grant_id, stack, about)
SELECT $1, $2, $3, 1, now.t, now.t + $4::interval, $3, $5, $6, $7::jsonb FROM now
ON CONFLICT (env, stack, scope) DO UPDATE SET
	holder = EXCLUDED.holder,
	about = EXCLUDED.about,
	token = l.token + 1,
	acquired_at = EXCLUDED.acquired_at,
	expires_at = EXCLUDED.expires_at,
	last_holder = EXCLUDED.last_holder,
	grant_id = EXCLUDED.grant_id,
	preempted_holder = l.holder,
	preempted_token = CASE WHEN l.holder IS NULL THEN NULL ELSE l.token END,
	preempted_acquired_at = CASE WHEN l.holder IS NULL THEN NULL ELSE l.acquired_at END,
	preempted_expires_at = CASE WHEN l.holder IS NULL THEN NULL ELSE l.expires_at END
WHERE l.holder IS NULL OR l.expires_at <= clock_timestamp()
RETURNING token, acquired_at, expires_at, preempted_holder, preempted_token, preempted_acquired_at, preempted_expires_at`),
		key.Environment, key.Scope, holder, ttl, nonce, key.Stack, encodeAbout(store.HolderFrom(ctx)))
	err := scanGrant(row, key, holder, g)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// ownGrant reports whether the lease row holds the grant of the Acquire call
// that made nonce, and fills g from it.
func (s *Store) ownGrant(ctx context.Context, key store.Key, holder, nonce string, g *store.Grant) (bool, error) {
	row := s.pool.QueryRow(ctx, s.sql(`
SELECT token, acquired_at, expires_at, preempted_holder, preempted_token, preempted_acquired_at, preempted_expires_at
  FROM {s}.leases WHERE env = $1 AND scope = $2 AND holder = $3 AND grant_id = $4 AND stack = $5`),
		key.Environment, key.Scope, holder, nonce, key.Stack)
	err := scanGrant(row, key, holder, g)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func scanGrant(row pgx.Row, key store.Key, holder string, g *store.Grant) error {
	var (
		token            int64
		acquired, expiry time.Time
		pHolder          *string
		pTok             *int64
		pAcq, pExp       *time.Time
	)
	if err := row.Scan(&token, &acquired, &expiry, &pHolder, &pTok, &pAcq, &pExp); err != nil {
		return err
	}
	*g = store.Grant{Lease: store.Lease{Key: key, Holder: holder, Token: token, ExpiresAt: expiry.UTC()}}
	if pHolder != nil && pTok != nil && pAcq != nil && pExp != nil {
		g.Preempted = &store.LeaseInfo{Holder: *pHolder, Token: *pTok, AcquiredAt: pAcq.UTC(), ExpiresAt: pExp.UTC()}
	}
	return nil
}

// Renew extends l to ttl from the database's now if l still holds the
// lease; store.ErrLeaseLost otherwise. Renewing twice (a retry after a lost
// answer) only extends it again.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := s.checkKey(l.Key); err != nil {
		return store.Lease{}, err
	}
	if ttl < time.Millisecond {
		return store.Lease{}, errcode.New(errcode.Usage, "lease TTL must be at least 1ms, got %s", ttl)
	}
	if err := checkHolder(l); err != nil {
		return store.Lease{}, err
	}
	out := l
	err := s.do(ctx, "renew the lease of "+l.Key.String(), func(ctx context.Context, _ int) error {
		var expiry time.Time
		err := s.pool.QueryRow(ctx, s.sql(`
UPDATE {s}.leases SET expires_at = clock_timestamp() + $5::interval
 WHERE env = $1 AND scope = $2 AND holder = $3 AND token = $4 AND stack = $6 AND expires_at > clock_timestamp()
RETURNING expires_at`), l.Key.Environment, l.Key.Scope, l.Holder, l.Token, ttl, l.Key.Stack).Scan(&expiry)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.lostReason(ctx, l)
		}
		out.ExpiresAt = expiry.UTC()
		return err
	})
	if err != nil {
		return store.Lease{}, err
	}
	return out, nil
}

// Release frees the lease if l still holds it. The row keeps the token (the
// next grant is token+1) and the time of release as its expiry. A context
// already done when Release is called (cleanup after an interrupt) is
// replaced by a short one of its own, so the lease is still freed.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := s.checkKey(l.Key); err != nil {
		return err
	}
	if err := checkHolder(l); err != nil {
		return err
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
	}
	return s.do(ctx, "release the lease of "+l.Key.String(), func(ctx context.Context, attempt int) error {
		return s.releaseOnce(ctx, l, attempt)
	})
}

// releaseOnce is one attempt of Release.
func (s *Store) releaseOnce(ctx context.Context, l store.Lease, attempt int) error {
	tag, err := s.pool.Exec(ctx, s.sql(`
UPDATE {s}.leases SET holder = NULL, about = NULL, expires_at = clock_timestamp()
 WHERE env = $1 AND scope = $2 AND holder = $3 AND token = $4 AND stack = $5 AND expires_at > clock_timestamp()`),
		l.Key.Environment, l.Key.Scope, l.Holder, l.Token, l.Key.Stack)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	if attempt > 0 {
		// Did an earlier attempt release it before its answer was lost?
		// Then the row is free with our token and nobody has been granted
		// it since.
		var done bool
		err := s.pool.QueryRow(ctx, s.sql(`
SELECT holder IS NULL AND token = $3 AND last_holder = $4 FROM {s}.leases WHERE env = $1 AND scope = $2 AND stack = $5`),
			l.Key.Environment, l.Key.Scope, l.Token, l.Holder, l.Key.Stack).Scan(&done)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if done {
			return nil
		}
	}
	return s.lostReason(ctx, l)
}

// ReadLease returns the lease record of key, the zero LeaseInfo if the scope
// never had one.
func (s *Store) ReadLease(ctx context.Context, key store.Key) (store.LeaseInfo, error) {
	if err := s.checkKey(key); err != nil {
		return store.LeaseInfo{}, err
	}
	var info store.LeaseInfo
	err := s.do(ctx, "read the lease of "+key.String(), func(ctx context.Context, _ int) error {
		var err error
		info, _, err = s.leaseRow(ctx, key)
		return err
	})
	return info, err
}

// leaseRow reads the lease row and whether it is live by the database clock.
func (s *Store) leaseRow(ctx context.Context, key store.Key) (store.LeaseInfo, bool, error) {
	var (
		holder, about    *string
		info             store.LeaseInfo
		acquired, expiry time.Time
		live             bool
	)
	err := s.pool.QueryRow(ctx, s.sql(`
SELECT holder, token, acquired_at, expires_at, holder IS NOT NULL AND expires_at > clock_timestamp(), about::text
  FROM {s}.leases WHERE env = $1 AND scope = $2 AND stack = $3`), key.Environment, key.Scope, key.Stack).
		Scan(&holder, &info.Token, &acquired, &expiry, &live, &about)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.LeaseInfo{}, false, nil
	}
	if err != nil {
		return store.LeaseInfo{}, false, err
	}
	if holder != nil {
		info.Holder = *holder
	}
	info.About = decodeAbout(about)
	info.AcquiredAt, info.ExpiresAt = acquired.UTC(), expiry.UTC()
	return info, live, nil
}

// encodeAbout is the about column of a holder's description: NULL for none.
func encodeAbout(a store.HolderInfo) *string {
	if a == (store.HolderInfo{}) {
		return nil
	}
	b, _ := json.Marshal(a) // strings and an int always encode
	s := string(b)
	return &s
}

// decodeAbout reads the about column. A value that does not parse is no
// description rather than an error: it is only ever shown to people, and a
// lease must stay readable whatever a newer sponson wrote there.
func decodeAbout(s *string) store.HolderInfo {
	var a store.HolderInfo
	if s != nil {
		_ = json.Unmarshal([]byte(*s), &a)
	}
	return a
}

// lostReason returns store.ErrLeaseLost saying why l no longer holds the
// lease, as fence does for writes. It reads after the refusal, so the
// reason is the state it finds, which may be newer.
func (s *Store) lostReason(ctx context.Context, l store.Lease) error {
	var (
		holder *string
		token  int64
		expiry time.Time
	)
	err := s.pool.QueryRow(ctx, s.sql(`SELECT holder, token, expires_at FROM {s}.leases WHERE env = $1 AND scope = $2 AND stack = $3`),
		l.Key.Environment, l.Key.Scope, l.Key.Stack).Scan(&holder, &token, &expiry)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Lost(l.Key, "the scope has no lease record")
	case err != nil:
		return err
	case holder == nil:
		return store.Lost(l.Key, fmt.Sprintf("the lease was released (token %d)", token))
	case *holder != l.Holder || token != l.Token:
		return store.Lost(l.Key, fmt.Sprintf("the lease is now %s's with token %d", *holder, token))
	default:
		return store.Lost(l.Key, "the lease expired at "+expiry.UTC().Format(time.RFC3339Nano))
	}
}

// fenced runs the statements queue adds in one implicit transaction after
// the fence: one round trip, and nothing is written unless l holds the lease
// (see the package comment and Store.do for retries).
func (s *Store) fenced(ctx context.Context, what string, l store.Lease, queue func(b *pgx.Batch)) error {
	if err := checkHolder(l); err != nil {
		return err
	}
	return s.do(ctx, what, func(ctx context.Context, _ int) error {
		b := &pgx.Batch{}
		b.Queue(s.sql("SELECT {s}.fence($1, $2, $3, $4, $5)"), l.Key.Environment, l.Key.Stack, l.Key.Scope, l.Holder, l.Token)
		queue(b)
		err := s.pool.SendBatch(ctx, b).Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == fenceState {
			return store.Lost(l.Key, pe.Message)
		}
		return err
	})
}

// checkHolder refuses a lease that no grant can have made before asking the
// database: no holder, or one the database cannot even store.
func checkHolder(l store.Lease) error {
	if l.Holder == "" {
		return store.Lost(l.Key, "the lease has no holder")
	}
	if !storable(l.Holder) {
		return store.Lost(l.Key, "no lease is granted to a holder with NUL or invalid UTF-8")
	}
	return nil
}

// storable reports whether a text column can hold v.
func storable(v string) bool { return utf8.ValidString(v) && !strings.ContainsRune(v, 0) }

func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// describe names a connection for messages: user, server and database,
// never the password.
func describe(c *pgx.ConnConfig) string {
	if strings.HasPrefix(c.Host, "/") {
		return fmt.Sprintf("postgres://%s@/%s?host=%s", c.User, c.Database, c.Host)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// redactDSN shows a DSN without its password: URLs as storeurl.Redact does,
// key/value strings with password=... blanked.
func redactDSN(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			if u.User != nil {
				u.User = url.User(u.User.Username())
			}
			return u.String()
		}
		return "(an unparsable postgres:// URL)"
	}
	return kvPassword().ReplaceAllString(dsn, "password=xxxxx")
}

// scrub returns err's text with the DSN's password removed, whatever the
// driver put into it.
func scrub(err error, dsn string) string {
	msg := err.Error()
	var pw []string
	if u, perr := url.Parse(dsn); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			pw = append(pw, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	for _, m := range kvPassword().FindAllStringSubmatch(dsn, -1) {
		pw = append(pw, strings.Trim(m[1], "'"))
	}
	if i := strings.Index(dsn, "://"); i >= 0 {
		if at := strings.LastIndex(dsn, "@"); at > i {
			if c := strings.Index(dsn[i+3:at], ":"); c >= 0 {
				pw = append(pw, dsn[i+3+c+1:at])
			}
		}
	}
	for _, p := range pw {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	return msg
}
