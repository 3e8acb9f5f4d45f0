// Package gitstore is the git store backend (`--store git`, `git+URL`): every
// (environment, stack, scope) keeps its lease, receipts, ownership index,
// records, quarantined states and encrypted Terraform state on its own
// orphan branch of a remote the CI job can already push to, so no new
// service is needed (docs/design.md §5.3, §5.6). S is the stack encoded by
// store.StackSegment ("_" for parent leases):
//
//	refs/heads/sponson-layout/2          the layout version (layout.go)
//	refs/heads/sponson-stacks/<env>/<S>/<scope>
//	  README.md                  what the branch is and when deleting it is safe
//	  lease.json                 the lease record (store.LeaseInfo)
//	  latest.json                the scope's latest receipt
//	  receipts/<runId>.json      every run's own receipt
//	  owners.json                the scope's part of the ownership index
//	  terraform.tfstate.enc      the state, AES-256-GCM (terraform.tfstate if plaintext was allowed)
//	  records/<name>.json        small fenced documents (sponson_scope)
//	  quarantine/<runId>.json    when a lost run's state was kept, and in which file
//	  quarantine/<runId>.tfstate.enc
//
// This is the design measured in shared/reference/store-notes.md §2:
//
//   - Compare-and-swap. Every mutation reads the tip, decides, builds a new
//     tree and a commit whose parent is that tip, and publishes it with
//     `git push --porcelain --force-with-lease=<ref>:<tip>` (a new branch
//     with `--force-with-lease=<ref>:`, "must not exist"). The lease and the
//     documents live in the same tree, so a fenced write is fenced by the
//     push itself: if anyone moved the branch since the tip the decision was
//     made on, the push is refused, the store reads the branch again and
//     decides again (a write whose lease is gone then fails with
//     store.ErrLeaseLost); it never retries a write blindly.
//   - Identical commits. If two writers build byte-identical commits (same
//     tree, parent, message and second), git reports the loser's push as
//     "up to date" and exits 0 even though its lease was stale: the
//     up-to-date check runs before the lease check. Measured without a
//     nonce, a counter race lost 22 of 40 acknowledged writes. Every commit
//     message therefore carries a random nonce, so "up to date" can only
//     mean that this very commit of ours is on the remote.
//   - No working tree, few processes. A private bare scratch repository
//     (under os.TempDir, removed by Close) holds objects only. The store
//     writes blobs, trees and commits itself as loose objects and reads
//     through one long-running `git cat-file --batch`; the remote is reached
//     by `ls-remote`, `fetch --depth=1` (only when a tip is not known yet;
//     history is never read) and `push`. The tip this process last wrote or
//     read is remembered: a mutation decides on it and lets the push's
//     compare-and-swap confirm it, and only a refused push or a refusal
//     decided on remembered state costs a fresh read. Mutations of one scope
//     within one Store take turns, so a run's renewals and writes do not
//     race each other.
//   - Tokens survive release, as in every store: Release keeps lease.json
//     with an empty holder and the same token. Deleting the branch restarts
//     the token at 1, but fencing compares holder and token, and holders
//     are unique run ids, so a run whose branch was deleted or rewound can
//     write nothing more.
//   - Hand edits. Every push of the store is a fast-forward, so the remote
//     may (and should) refuse force-pushes and deletions of
//     sponson-receipts/** (branch rules, receive.denyNonFastForwards,
//     receive.denyDeletes). Without that protection a branch deleted or
//     rewound once still never lets two runs both succeed: the run whose
//     lease record vanished or changed can write nothing more. Only a
//     branch rewound twice, back onto a run's own live lease after another
//     run finished in between, is beyond what a client can detect.
//   - Expiry uses the client's clock (WithClock in tests): git has no server
//     clock. Runners' clocks must agree to well within the lease TTL (15
//     minutes by default); NTP-synchronised CI machines do.
//   - Listing an environment (List, Owners) is one `ls-remote` of the
//     environment's prefix, one fetch of the tips not held yet, and
//     pipelined reads through the one cat-file process; decoded index parts
//     are kept by blob id, so a scope that did not change is not decoded
//     again.
//   - Names. Environment and scope become ref components one to one (see
//     refSegment); names that could escape their ref are refused with
//     USAGE before git runs.
//   - State is sealed with AES-256-GCM under a key from SPONSON_STATE_KEY
//     (FromEnv): anyone who can read the repository can read the branches.
//     Without a key, WriteState and Quarantine refuse with USAGE unless
//     plaintext was explicitly allowed (SPONSON_STATE_PLAINTEXT=1, unsafe).
//     Receipts, records and the lease are not encrypted: they never hold
//     sensitive values.
//   - Failures. A contended branch is retried with jittered backoff within
//     a budget (SPONSON_STORE_BUDGET, default 60 s), then STORE_CONTENDED;
//     a push refused by a hook or branch rule is STORE_REJECTED and keeps a
//     copy of the document in a local fallback directory named by the error;
//     refused authentication or authorization is STORE_PERMISSION. A push
//     the remote refuses because the ref's lock file exists (`Unable to
//     create '….lock': File exists`) is retried like a race: a live push
//     holds that lock for milliseconds. A push that died on the remote's
//     side (on a local remote, killed with its client) leaves the file
//     behind, and the store never removes it (a stopped push would later
//     rename it over a newer tip): when the budget ends, STORE_CONTENDED
//     names the file (docs/design.md §5.3). The
//     remote's credentials reach git only through its environment and are
//     scrubbed from every message.
package gitstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

var _ store.Store = (*Store)(nil)

// Paths of a scope's branch.
const (
	readmeFile    = "README.md"
	leaseFile     = "lease.json"
	latestFile    = "latest.json"
	ownersFile    = "owners.json"
	stateSealed   = "terraform.tfstate.enc"
	statePlain    = "terraform.tfstate"
	receiptsDir   = "receipts"
	recordsDir    = "records"
	quarantineDir = "quarantine"
)

// DefaultBudget is how long contention and transient failures are retried.
const DefaultBudget = 60 * time.Second

// maxRefusals is how many times a push refused by the remote's hooks is
// tried (a hook may fail for a moment) before STORE_REJECTED.
const maxRefusals = 3

// Store is the git store. It is safe for concurrent use; any number of
// Stores, in any number of processes and machines, may share one remote.
type Store struct {
	remote  string // as given: reaches git only through its environment
	display string // remote without credentials, for messages
	dir     string // the scratch repository
	env     []string
	scrub   func(string) string
	now     func() time.Time
	key     []byte
	plain   bool
	budget  time.Duration
	// budgetClock measures the retry budget; time.Now but in tests.
	budgetClock func() time.Time
	fallback    string
	extra       [][2]string
	noNonce     bool // tests only: shows what the nonce prevents

	oldLayout bool        // WithOldLayout: no layout check (Migrate)
	layoutOK  atomic.Bool // the remote's layout was found to be Layout
	layoutMu  sync.Mutex

	cat     *catFile
	fetchMu sync.Mutex
	closed  atomic.Bool

	mu      sync.Mutex
	keys    map[store.Key]*keyState
	owners  map[string][]store.Owner // decoded index parts, by blob id
	spawned map[string]int           // git processes started, by subcommand (for tests)
}

// maxCachedOwners bounds the decoded index parts a Store keeps: an
// environment of a few thousand scopes.
const maxCachedOwners = 5000

// keyState is what one Store knows of one scope: the mutex its mutations
// take turns on, and the last tip it read or wrote.
type keyState struct {
	mu   sync.Mutex
	snap *snapshot
}

// Option configures Open.
type Option func(*Store)

// WithClock makes the store read the time from now instead of time.Now.
// Lease expiry is decided by this clock: git has no server clock.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// WithStateKey sets the 32-byte AES-256-GCM key that seals the state and
// quarantined states (SPONSON_STATE_KEY through FromEnv).
func WithStateKey(key []byte) Option {
	return func(s *Store) { s.key = append([]byte(nil), key...) }
}

// WithPlaintextState lets the store write state unencrypted when it has no
// key. Unsafe: anyone who can read the repository reads the state and every
// secret in it. A key, when set, is always used.
func WithPlaintextState() Option { return func(s *Store) { s.plain = true } }

// WithBudget sets how long contention and transient failures are retried
// before STORE_CONTENDED or STORE_UNAVAILABLE.
func WithBudget(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.budget = d
		}
	}
}

// WithFallbackDir sets where a document the remote refused is kept
// (<dir>/<env>/<scope>/...); the default is sponson-unpushed in os.TempDir.
func WithFallbackDir(dir string) Option { return func(s *Store) { s.fallback = dir } }

// WithGitConfig passes a configuration entry to every git command, through
// the environment: storeurl hands over the credentials configuration of the
// checkout (http.<url>.extraheader as actions/checkout sets it,
// credential.*, url.*.insteadOf) so that the store pushes as `git push`
// would from the checkout.
func WithGitConfig(key, value string) Option {
	return func(s *Store) { s.extra = append(s.extra, [2]string{key, value}) }
}

// Open returns the store on remote, a URL or path git understands, with a
// fresh scratch repository. The remote is not contacted until the first
// call.
func Open(ctx context.Context, remote string, opts ...Option) (*Store, error) {
	if strings.TrimSpace(remote) == "" {
		return nil, errcode.New(errcode.Usage, "the git store needs a remote").WithHint("Use --store git (the remote origin) or --store git+URL.")
	}
	if isLocalPath(remote) && !filepath.IsAbs(remote) {
		// git runs in the scratch repository: a relative path means the
		// working directory of this process, as everywhere on a command line.
		abs, err := filepath.Abs(remote)
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "the git store's remote %q", remote)
		}
		remote = abs
	}
	s := &Store{remote: remote, display: Redact(remote), now: time.Now, budget: DefaultBudget, budgetClock: time.Now, keys: map[store.Key]*keyState{}, owners: map[string][]store.Owner{}, spawned: map[string]int{}}
	for _, o := range opts {
		o(s)
	}
	if s.key != nil && len(s.key) != KeySize {
		return nil, errcode.New(errcode.Usage, "the state key has %d bytes; it must have %d", len(s.key), KeySize).WithHint(keyHint)
	}
	if s.fallback == "" {
		s.fallback = filepath.Join(os.TempDir(), "sponson-unpushed")
	}
	var secrets []string
	for _, kv := range s.extra {
		secrets = append(secrets, kv[1])
	}
	s.scrub = gitcli.Scrubber(remote, secrets...)
	s.env = gitEnv(remote, s.extra)
	sum := sha256.Sum256([]byte(s.display)) // names the directory; never a hash of a password
	dir, err := os.MkdirTemp("", "sponson-git-"+hex.EncodeToString(sum[:6])+"-")
	if err != nil {
		return nil, scratchError("create", os.TempDir(), err)
	}
	s.dir = dir
	if _, stderr, err := s.run(ctx, nil, "init", "--bare", "--quiet", "--template="); err != nil {
		os.RemoveAll(dir)
		var ce *errcode.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, errcode.Wrap(errcode.StoreUnavailable, err, "create the git store's scratch repository: %s", summary(stderr))
	}
	f, err := os.OpenFile(filepath.Join(dir, "config"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString(scratchConfig)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, scratchError("configure", dir, err)
	}
	s.cat = &catFile{s: s}
	return s, nil
}

// Remote returns the remote without credentials.
func (s *Store) Remote() string { return s.display }

// Close stops the store's git process and removes the scratch repository;
// leases are not released.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cat.stop()
	if err := os.RemoveAll(s.dir); err != nil {
		return scratchError("remove", s.dir, err)
	}
	return nil
}

func (s *Store) keyState(k store.Key) *keyState {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks, ok := s.keys[k]
	if !ok {
		ks = &keyState{}
		s.keys[k] = ks
	}
	return ks
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return errcode.New(errcode.Internal, "the git store of %s is closed", s.display)
	}
	return nil
}

// clock returns the store's time without a monotonic reading, in UTC, so the
// times a call returns are equal to the ones read back from the documents.
func (s *Store) clock() time.Time { return s.now().Round(0).UTC() }
