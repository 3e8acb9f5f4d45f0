// Package objectstore is the store over a bucket of objects that the S3,
// GCS and Azure stores share: leases, receipts, ownership parts, records
// and encrypted Terraform state as objects under a prefix, fenced by the
// conditional write of one pointer per scope. Each of those stores keeps
// only its object operations (Bucket), its layout check and its opener,
// and composes a Store of this package with them. Layout, under PREFIX
// (<scope> is <S>/<name>, S the stack's segment; see scopeID):
//
//	@layout.json                        {"layout": 3}: the layout version (the store's layout check)
//	<env>/.leases/<scope>.json          the scope's pointer: lease and current bodies
//	<env>/<scope>/receipts/<runId>.<nonce>.json   receipt bodies (one kept per run)
//	<env>/<scope>/owners/<nonce>.json   the scope's part of the ownership index
//	<env>/<scope>/state/<nonce>.tfstate.sealed    state bodies (.tfstate if plaintext)
//	<env>/<scope>/records/<name>.<nonce>.json     sponson_scope's records
//	<env>/<scope>/quarantine/<runId>.tfstate[.sealed]  states a lost run could not write
//	<env>/.owners.log.json              the ownership log: scopes whose ownership changed (changelog.go)
//	<env>/.owners.bin.gz                a cache of the ownership parts of env, for Owners
//	<env>/.index.json.gz                a cache of the pointers and receipts of env, for List
//
// Design (docs/design.md §5.5 "S3"; §2.8 "Fenced write"):
//
//   - One pointer per scope. The pointer holds the lease (holder, token,
//     expiry) and the object keys of the scope's current receipt, ownership
//     part, state and records. It is only ever replaced conditionally on the
//     version (ETag, generation) it was read with (created only if absent),
//     so two writers can never both move it, and every body carries a fresh
//     nonce so that two equal documents still have different versions.
//   - Bodies first. Receipts, ownership parts, states and records are written
//     as new objects under fresh names before the pointer moves; the fenced
//     write is the one conditional PUT of the pointer. Bodies the pointer no
//     longer names are deleted after it moved, and bodies of a refused write
//     are deleted at once: a crash in between leaves garbage (unreferenced
//     objects, which `sponson gc` may remove), never a pointer to something
//     missing.
//   - Fencing. A fenced write reads the pointer, checks that it names the
//     writer's holder and token and that the lease has not expired by the
//     server's clock (the Date of that response), and replaces it
//     conditionally. A refused condition (someone moved the pointer
//     meanwhile, perhaps our own renewal) re-reads and re-checks.
//   - The server's clock. Date has a resolution of one second and is rounded
//     down, so a lease is taken over only once Date is at least ExpiresAt
//     plus TakeoverMargin (one second): a holder always gets its full TTL.
//     Its own writes stop at ExpiresAt.
//   - Unknown outcomes. A pointer PUT whose answer was lost is resolved by
//     the Bucket reading the pointer again (PutIf's landed): our nonce means
//     it landed, the old version means it did not (and is retried), anything
//     else is someone else's.
//   - List reads the environment from a bounded number of requests: one
//     listing of <env>/.leases/ (1,000 pointers and their versions a page),
//     a cached index when this process's own cache is cold, and one GET per
//     pointer whose version changed since (renewals and writes of running
//     scopes). The index is only a cache: each entry is valid exactly while
//     its pointer still has the version it was read with.
//   - Owners, in a prefix whose layout logs (Layout.Logged), does not list:
//     every pointer write that changes a scope's ownership part is
//     bracketed by two conditional writes of the environment's ownership
//     log (begin: the scope under the next sequence number, marked pending;
//     end: the mark cleared once the PUT's outcome is known), and Owners
//     reads the log, then the pointers of the scopes changed since its cache
//     last read it and of those pending (changelog.go says why this is as
//     strong as listing). A cache the log no longer reaches back to starts
//     from the stored index, else lists. A cold check turns into strings
//     only the entries asked for (ownedPart): decoding every entry cost
//     several times as much.
package objectstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/statecrypt"
)

var _ store.Store = (*Store)(nil)

// TakeoverMargin is added to a lease's expiry before another holder may
// take it over: the server's Date is rounded down to the second.
const TakeoverMargin = time.Second

// Outcomes of an object operation that the Store handles itself; a Bucket
// returns them as they are (errors.Is), never wrapped in a store error.
var (
	// ErrNotFound is a read of a key that does not exist.
	ErrNotFound = errors.New("no such object")
	// ErrPrecondition is a conditional write whose condition failed.
	ErrPrecondition = errors.New("precondition failed")
	// ErrNotModified is a read of a key whose version is still the one given.
	ErrNotModified = errors.New("not modified")
)

// Object is a body read from the bucket with what the server said about it.
type Object struct {
	Data []byte
	// ETag is the object's version: what a conditional write is conditional
	// on (the ETag on S3 and Azure, the generation in decimal on GCS).
	ETag string
	Date time.Time // the server's clock at the answer
	At   time.Time // when this version was written (Last-Modified)
}

// Listed is one object of a listing.
type Listed struct {
	Key  string
	ETag string
	At   time.Time
}

// Reader reads objects. Each operation retries what may pass within the
// store's budget, and gives what cannot a store error (errcode).
type Reader interface {
	// Get reads key; ErrNotFound if it does not exist, with the server's
	// clock in Date (an absent pointer still gives the server's clock).
	Get(ctx context.Context, key string) (Object, error)
	// GetIfChanged reads key unless its version is still etag
	// (ErrNotModified); "" reads it whatever its version.
	GetIfChanged(ctx context.Context, key, etag string) (Object, error)
}

// Lister lists objects.
type Lister interface {
	// List returns every object under prefix.
	List(ctx context.Context, prefix string) ([]Listed, error)
}

// Writer writes and deletes objects.
type Writer interface {
	// Put writes a new body under a fresh name, without a condition:
	// nobody else writes that name, so retrying after a lost answer is
	// harmless.
	Put(ctx context.Context, key string, data []byte) error
	// PutIf writes key only if its version is still ifMatch, or only if it
	// does not exist when ifMatch is "", and returns the new version;
	// ErrPrecondition when the condition failed. The document carries a
	// fresh nonce: after a lost answer, landed reports whether what is
	// there now is ours (then the write succeeded), and the version tells
	// whether nothing happened (then it is sent again) or someone else's
	// write came first (ErrPrecondition).
	PutIf(ctx context.Context, key string, data []byte, ifMatch string, landed func([]byte) bool) (string, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// Layout is the store's check of its prefix's layout (docs/design.md §5.6),
// which each store makes its own way.
type Layout interface {
	// Ready checks the prefix's layout before an operation (a write when
	// write is set): the first write of a new prefix records its marker, a
	// read leaves it unwritten.
	Ready(ctx context.Context, write bool) error
	// Logged reports whether ownership writes of the prefix go through the
	// ownership log (changelog.go): prefixes of layout 3 on. A prefix of
	// layout 2 may still be written by a sponson that does not log, so its
	// readers list.
	Logged() bool
}

// Bucket is what a store over objects provides: its object operations and
// its layout check.
type Bucket interface {
	Reader
	Lister
	Writer
	Layout
}

// Config is what a store tells the Store it composes.
type Config struct {
	// Name names the store in messages: "S3" for "the S3 store".
	Name string
	// Scheme and Bucket name an object in messages: Scheme://Bucket/KEY
	// (Bucket is ACCOUNT/CONTAINER on Azure).
	Scheme, Bucket string
	Prefix         string // "" or ending in "/"
	// Display is the store's URL as printed.
	Display string

	// StateKey seals state (statecrypt.KeySize bytes); without it state is
	// refused unless PlaintextState allows it.
	StateKey       []byte
	PlaintextState bool
	// Hints are what to do when the key is missing or wrong, or a body is
	// damaged; Hints.Key is also the hint of a state refused for want of
	// a key.
	Hints statecrypt.Hints

	// Budget is how long a fenced write retries a pointer that keeps
	// moving.
	Budget time.Duration
	// Now is the time used where no server clock answered.
	Now func() time.Time
}

// Store is a store over the objects of a Bucket. It is safe for
// concurrent use; any number of Stores in any number of processes may share
// one bucket and prefix.
type Store struct {
	objects Bucket
	name    string
	scheme  string
	bucket  string
	prefix  string
	display string

	key   []byte
	plain bool
	hints statecrypt.Hints

	budget time.Duration
	now    func() time.Time

	mu   sync.Mutex
	envs map[string]*envCache
}

// New composes the Store of cfg over objects. A state key of the wrong
// size is a USAGE error.
func New(cfg Config, objects Bucket) (*Store, error) {
	if cfg.StateKey != nil && len(cfg.StateKey) != statecrypt.KeySize {
		return nil, errcode.New(errcode.Usage, "the state key has %d bytes; it must have %d", len(cfg.StateKey), statecrypt.KeySize).WithHint(cfg.Hints.Key)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{
		objects: objects, name: cfg.Name, scheme: cfg.Scheme, bucket: cfg.Bucket, prefix: cfg.Prefix, display: cfg.Display,
		key: cfg.StateKey, plain: cfg.PlaintextState, hints: cfg.Hints,
		budget: cfg.Budget, now: cfg.Now,
		envs: map[string]*envCache{},
	}, nil
}

// Display returns the store's URL without credentials.
func (s *Store) Display() string { return s.display }

// URL is the URL that opens this store again.
func (s *Store) URL() string { return s.display }

// Close does nothing: the store keeps idle connections only.
func (s *Store) Close() error { return nil }

// url names key in messages: s3://BUCKET/KEY.
func (s *Store) url(key string) string { return s.scheme + "://" + s.bucket + "/" + key }

// scopeID is the one place a Key becomes a path below its environment:
// <S>/<scope>, S being the stack encoded by store.StackSegment ("_" for the
// parent leases every stack shares). The pointer is
// <env>/.leases/<scopeID>.json and the bodies live under <env>/<scopeID>/.
// keyOf is its inverse.
func scopeID(k store.Key) string { return store.StackSegment(k.Stack) + "/" + k.Scope }

// keyOf returns the Key of a scope id listed under env's pointers.
func keyOf(env, id string) (store.Key, bool) {
	seg, scope, ok := strings.Cut(id, "/")
	if !ok || strings.Contains(scope, "/") {
		return store.Key{}, false
	}
	stack, ok := store.StackOf(seg)
	if !ok {
		return store.Key{}, false
	}
	k := store.Key{Stack: stack, Environment: env, Scope: scope}
	return k, store.CheckKey(k) == nil
}

// LeasesDir is where the pointers of env are: <prefix><env>/.leases/.
func LeasesDir(prefix, env string) string { return prefix + env + "/.leases/" }

func (s *Store) leasesPrefix(env string) string { return LeasesDir(s.prefix, env) }
func (s *Store) pointerKey(k store.Key) string {
	return s.leasesPrefix(k.Environment) + scopeID(k) + ".json"
}
func (s *Store) scopeDir(k store.Key) string {
	return s.prefix + k.Environment + "/" + scopeID(k) + "/"
}

// nonce returns 16 random hex digits.
func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes instead
	return hex.EncodeToString(b[:])
}

// ContextError is the error of a ctx that ended: STORE_CONTENDED for a
// deadline, INTERRUPTED for a cancellation, with ctx.Err() in the chain.
func ContextError(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errcode.Wrap(errcode.StoreContended, ctx.Err(), "gave up waiting to %s", what)
	}
	return errcode.Wrap(errcode.Interrupted, ctx.Err(), "interrupted before %s", what)
}
