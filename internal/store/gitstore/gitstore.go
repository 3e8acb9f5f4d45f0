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
//     refused authentication or authorization is STORE_PERMISSION. The
//     remote's credentials reach git only through its environment and are
//     scrubbed from every message.
package gitstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
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

// Acquire grants the lease of key to holder for ttl. A live lease gives
// *store.HeldError, also when it is holder's own; an expired lease is taken
// over and reported in Grant.Preempted. A done ctx is refused up front: a
// lease granted to a run that is being interrupted would block the scope
// for a whole TTL.
func (s *Store) Acquire(ctx context.Context, key store.Key, holder string, ttl time.Duration) (store.Grant, error) {
	if err := checkKey(key); err != nil {
		return store.Grant{}, err
	}
	if ctx.Err() != nil {
		return store.Grant{}, ctxError(ctx, "acquiring the lease of "+key.String())
	}
	if holder == "" {
		return store.Grant{}, errcode.New(errcode.Usage, "a lease needs a holder")
	}
	if ttl <= 0 {
		return store.Grant{}, errcode.New(errcode.Usage, "lease TTL must be positive, got %s", ttl)
	}
	var g store.Grant
	err := s.mutate(ctx, key, func(cur *snapshot, now time.Time) (*change, error) {
		if cur.lease.Live(now) {
			return nil, &store.HeldError{Key: key, Lease: cur.lease}
		}
		next := store.LeaseInfo{Holder: holder, Token: cur.lease.Token + 1, AcquiredAt: now, ExpiresAt: now.Add(ttl)}
		grant := store.Grant{Lease: store.Lease{Key: key, Holder: holder, Token: next.Token, ExpiresAt: next.ExpiresAt}}
		if cur.lease.Holder != "" {
			p := cur.lease
			grant.Preempted = &p
		}
		files := map[string][]byte{leaseFile: encodeLease(next)}
		if _, ok := cur.root[readmeFile]; !ok {
			files[readmeFile] = readme(key)
		}
		return &change{files: files, msg: fmt.Sprintf("acquire %s for %s, token %d", key, holder, next.Token), done: func() { g = grant }}, nil
	})
	if err != nil {
		return store.Grant{}, err
	}
	return g, nil
}

// Renew extends l to ttl from now if l still holds the lease;
// store.ErrLeaseLost otherwise.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := checkKey(l.Key); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, errcode.New(errcode.Usage, "lease TTL must be positive, got %s", ttl)
	}
	var out store.Lease
	err := s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		next := cur.lease
		next.ExpiresAt = now.Add(ttl)
		renewed := l
		renewed.ExpiresAt = next.ExpiresAt
		return &change{files: map[string][]byte{leaseFile: encodeLease(next)}, msg: fmt.Sprintf("renew %s for %s, token %d", l.Key, l.Holder, l.Token), done: func() { out = renewed }}, nil
	})
	if err != nil {
		return store.Lease{}, err
	}
	return out, nil
}

// Release frees the lease if l still holds it. The record stays with an empty
// holder and the same token; its ExpiresAt becomes the time of release.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		next := cur.lease
		next.Holder = ""
		next.ExpiresAt = now
		return &change{files: map[string][]byte{leaseFile: encodeLease(next)}, msg: fmt.Sprintf("release %s by %s, token %d", l.Key, l.Holder, l.Token)}, nil
	})
}

// ReadLease returns the lease record of key, the zero LeaseInfo if the scope
// never had one.
func (s *Store) ReadLease(ctx context.Context, key store.Key) (store.LeaseInfo, error) {
	if err := checkKey(key); err != nil {
		return store.LeaseInfo{}, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return store.LeaseInfo{}, err
	}
	return snap.lease, nil
}

// WriteReceipt stores r as receipts/<runId>.json and latest.json, and the
// scope's part of the ownership index, in one commit fenced by l. r must name
// l's environment and scope and read back with receipt.Parse.
func (s *Store) WriteReceipt(ctx context.Context, l store.Lease, r *receipt.Receipt) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	data, _, err := store.EncodeReceipt(l.Key, r)
	if err != nil {
		return err
	}
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		// The index is built on the tip the push swaps: an identity keeps
		// the time the store first recorded it for this scope.
		prev, _, err := s.readFile(cur, ownersFile)
		if err != nil {
			return nil, err
		}
		idx, err := encodeOwners(prev, l.Key, r, now)
		if err != nil {
			return nil, err
		}
		return &change{
			files: map[string][]byte{receiptsDir + "/" + r.RunID + ".json": data, latestFile: data, ownersFile: idx},
			msg:   fmt.Sprintf("receipt %s of run %s (%s), token %d", l.Key, r.RunID, r.Status, l.Token),
			keep:  &kept{what: "receipt", name: r.RunID + ".json", data: data},
		}, nil
	})
}

// LatestReceipt returns the scope's latest receipt, nil if it has none. A
// latest.json that does not parse is an error, never an empty scope.
func (s *Store) LatestReceipt(ctx context.Context, key store.Key) (*receipt.Receipt, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	return s.latest(key, snap)
}

// WriteState replaces the scope's Terraform state, sealed, fenced by l.
func (s *Store) WriteState(ctx context.Context, l store.Lease, state []byte) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	payload, name, other, err := s.sealState(l.Key, "state", state)
	if err != nil {
		return err
	}
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		files := map[string][]byte{name: payload}
		if _, ok := cur.root[other]; ok {
			files[other] = nil
		}
		return &change{
			files: files,
			msg:   fmt.Sprintf("state %s by %s, token %d", l.Key, l.Holder, l.Token),
			keep:  &kept{what: "state", name: fmt.Sprintf("%s-token%d.%s", l.Holder, l.Token, name), data: payload},
		}, nil
	})
}

// ReadState returns the scope's Terraform state, nil if it has none.
func (s *Store) ReadState(ctx context.Context, key store.Key) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	if data, ok, err := s.readFile(snap, stateSealed); err != nil || ok {
		if err != nil {
			return nil, err
		}
		return unseal(s.key, sealContext(key, "state"), "the state of "+key.String(), data)
	}
	data, _, err := s.readFile(snap, statePlain)
	return data, err
}

// WriteRecord stores records/<name>.json, fenced by l.
func (s *Store) WriteRecord(ctx context.Context, l store.Lease, name string, data []byte) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	if err := checkName("record", name); err != nil {
		return err
	}
	data = append([]byte(nil), data...)
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		return &change{
			files: map[string][]byte{recordsDir + "/" + name + ".json": data},
			msg:   fmt.Sprintf("record %s of %s by %s, token %d", name, l.Key, l.Holder, l.Token),
			keep:  &kept{what: "record", name: fmt.Sprintf("record-%s-%s.json", name, l.Holder), data: data},
		}, nil
	})
}

// ReadRecord returns records/<name>.json, nil if it does not exist.
func (s *Store) ReadRecord(ctx context.Context, key store.Key, name string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := checkName("record", name); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	data, _, err := s.readFile(snap, recordsDir+"/"+name+".json")
	return data, err
}

// DeleteRecord removes records/<name>.json, fenced by l. Removing a record
// that does not exist changes nothing, but still needs the lease as read
// from the remote.
func (s *Store) DeleteRecord(ctx context.Context, l store.Lease, name string) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	if err := checkName("record", name); err != nil {
		return err
	}
	path := recordsDir + "/" + name + ".json"
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		if _, ok, err := s.readFile(cur, path); err != nil || !ok {
			return nil, err
		}
		return &change{files: map[string][]byte{path: nil}, msg: fmt.Sprintf("delete record %s of %s by %s, token %d", name, l.Key, l.Holder, l.Token)}, nil
	})
}

// quarantineMeta records when a state was quarantined and in which file.
type quarantineMeta struct {
	RunID string    `json:"runId"`
	At    time.Time `json:"at"`
	File  string    `json:"file"`
}

// Quarantine stores quarantine/<runId>.tfstate(.enc) without a fence: the
// file is named by the run, so it can replace nothing but its own earlier
// copy. A refused push still only retries this commit's own files on the
// new tip, never anything that depends on a lease.
func (s *Store) Quarantine(ctx context.Context, key store.Key, runID string, state []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkName("run id", runID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return ctxError(ctx, "quarantining a state of "+key.String())
	}
	payload, name, _, err := s.sealState(key, quarantineDir+"/"+runID, state)
	if err != nil {
		return err
	}
	file := runID + strings.TrimPrefix(name, "terraform") // <runId>.tfstate(.enc)
	meta, err := json.MarshalIndent(quarantineMeta{RunID: runID, At: s.clock(), File: file}, "", "  ")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode quarantine metadata")
	}
	return s.mutate(ctx, key, func(cur *snapshot, now time.Time) (*change, error) {
		files := map[string][]byte{
			quarantineDir + "/" + runID + ".json": append(meta, '\n'),
			quarantineDir + "/" + file:            payload,
		}
		if _, ok := cur.root[readmeFile]; !ok {
			files[readmeFile] = readme(key)
		}
		return &change{files: files, msg: fmt.Sprintf("quarantine a state of run %s in %s", runID, key), keep: &kept{what: "quarantined state", name: "quarantine-" + file, data: payload}}, nil
	})
}

// ListQuarantine returns the quarantined states of key, oldest first.
func (s *Store) ListQuarantine(ctx context.Context, key store.Key) ([]store.Quarantined, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	dir, ok := snap.root[quarantineDir]
	if !ok || dir.mode != modeTree {
		return nil, nil
	}
	entries, err := s.tree(dir.id)
	if err != nil {
		return nil, err
	}
	var out []store.Quarantined
	for n := range entries {
		runID, isMeta := strings.CutSuffix(n, ".json")
		if !isMeta || checkName("run id", runID) != nil {
			continue
		}
		b, _, err := s.readFile(snap, quarantineDir+"/"+n)
		if err != nil {
			return nil, err
		}
		var m quarantineMeta
		if err := json.Unmarshal(b, &m); err != nil || m.RunID != runID || strings.Contains(m.File, "/") {
			return nil, errcode.New(errcode.ReceiptCorrupt, "%s:%s/%s does not parse", branchOf(key), quarantineDir, n)
		}
		data, ok, err := s.readFile(snap, quarantineDir+"/"+m.File)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errcode.New(errcode.ReceiptCorrupt, "%s:%s/%s names %s, which is missing", branchOf(key), quarantineDir, n, m.File)
		}
		if strings.HasSuffix(m.File, ".enc") {
			if data, err = unseal(s.key, sealContext(key, quarantineDir+"/"+runID), "the quarantined state of run "+runID+" in "+key.String(), data); err != nil {
				return nil, err
			}
		}
		out = append(out, store.Quarantined{RunID: runID, At: m.At, State: data})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}

// Owners reads the ownership index of env: owners.json of every scope
// branch, in one ls-remote, at most one fetch, and pipelined reads through
// the one cat-file process (docs/design.md §8: from an index, not N reads).
func (s *Store) Owners(ctx context.Context, env string, identities []string) ([]store.Owner, error) {
	if err := checkName("environment", env); err != nil {
		return nil, err
	}
	scopes, err := s.readEnv(ctx, env)
	if err != nil {
		return nil, err
	}
	var want map[string]bool
	if identities != nil {
		want = make(map[string]bool, len(identities))
		for _, id := range identities {
			want[id] = true
		}
	}
	// Index parts are content-addressed: a part whose blob this store
	// decoded before (the scope has not written since) is not decoded again.
	var ids []string
	var at []int
	parts := make([][]store.Owner, len(scopes))
	s.mu.Lock()
	for i, sc := range scopes {
		e, ok := sc.snap.root[ownersFile]
		if !ok || e.mode != modeBlob {
			continue
		}
		if cached, ok := s.owners[e.id]; ok {
			parts[i] = cached
			continue
		}
		ids, at = append(ids, e.id), append(at, i)
	}
	s.mu.Unlock()
	objs, err := s.cat.getMany(ids)
	if err != nil {
		return nil, err
	}
	decoded := map[string][]store.Owner{}
	for j, o := range objs {
		sc := scopes[at[j]]
		var doc ownersDoc
		if !o.ok || o.kind != "blob" {
			return nil, errcode.New(errcode.ReceiptCorrupt, "%s:%s is missing or not a file", sc.ref, ownersFile)
		}
		if err := json.Unmarshal(o.data, &doc); err != nil {
			return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "the ownership index %s:%s does not parse", sc.ref, ownersFile)
		}
		parts[at[j]], decoded[ids[j]] = doc.Entries, doc.Entries
	}
	s.mu.Lock()
	if len(s.owners)+len(decoded) > maxCachedOwners {
		s.owners = map[string][]store.Owner{}
	}
	for id, entries := range decoded {
		s.owners[id] = entries
	}
	s.mu.Unlock()
	out := []store.Owner{}
	for i, entries := range parts {
		for _, o := range entries {
			if want == nil || want[o.Identity] {
				// The branch names the stack and scope: an entry
				// cannot claim another's.
				o.Stack, o.Scope = scopes[i].stack, scopes[i].scope
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// List returns the scopes of env that have a lease record or a receipt,
// sorted by scope name, from one ls-remote and at most one fetch, like
// Owners. A scope whose lease or latest receipt cannot be read fails the
// whole listing.
func (s *Store) List(ctx context.Context, env string) ([]store.ScopeSummary, error) {
	if err := checkName("environment", env); err != nil {
		return nil, err
	}
	scopes, err := s.readEnv(ctx, env)
	if err != nil {
		return nil, err
	}
	leases, err := s.readFiles(scopes, leaseFile)
	if err != nil {
		return nil, err
	}
	latests, err := s.readFiles(scopes, latestFile)
	if err != nil {
		return nil, err
	}
	out := []store.ScopeSummary{}
	for i, sc := range scopes {
		key := store.Key{Stack: sc.stack, Environment: env, Scope: sc.scope}
		if leases[i] == nil && latests[i] == nil {
			continue // a branch holding only quarantined states
		}
		sum := store.ScopeSummary{Key: key}
		if leases[i] != nil {
			if sum.Lease, err = parseLease(sc.ref, leases[i]); err != nil {
				return nil, err
			}
		}
		if latests[i] != nil {
			if sum.Latest, err = parseLatest(key, latests[i]); err != nil {
				return nil, err
			}
		}
		out = append(out, sum)
	}
	return out, nil
}

// snapshot is one tip of a scope's branch as the store has read it.
type snapshot struct {
	tip      string // "" when the branch does not exist
	root     map[string]entry
	lease    store.LeaseInfo
	hasLease bool
}

// change is what a mutation writes: files by path (nil deletes), the commit
// subject, the copy to keep if the remote refuses it, and what to do once the
// commit is on the remote.
type change struct {
	files map[string][]byte
	msg   string
	keep  *kept
	done  func()
}

// kept is the document a mutation keeps locally if the remote refuses it.
type kept struct {
	what string
	name string
	data []byte
}

// errMissing says an object is not in the scratch repository (yet).
var errMissing = errors.New("object not in the scratch repository")

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

// read returns the current tip of key's branch from the remote.
func (s *Store) read(ctx context.Context, key store.Key) (*snapshot, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, "reading "+key.String())
	}
	if err := s.ensureLayout(ctx, false); err != nil {
		return nil, err
	}
	ks := s.keyState(key)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	snap, err := s.load(ctx, key, ks.snap, s.retrier(ctx, "reading", branchOf(key)))
	if err != nil {
		return nil, err
	}
	ks.snap = snap
	return snap, nil
}

// load reads the tip of key's branch: one ls-remote, and a fetch only when
// the tip is not in the scratch repository yet. cached is reused when the
// tip has not moved; r paces retries within the operation's budget.
func (s *Store) load(ctx context.Context, key store.Key, cached *snapshot, r *retrier) (*snapshot, error) {
	ref := branchOf(key)
	for {
		refs, err := s.lsRemote(ctx, ref)
		if err != nil {
			if err := r.fail(err); err != nil {
				return nil, err
			}
			continue
		}
		tip := refs[ref]
		if tip == "" {
			return &snapshot{}, nil
		}
		if cached != nil && cached.tip == tip {
			return cached, nil
		}
		snap, err := s.parse(ref, tip)
		if errors.Is(err, errMissing) {
			var haves []string
			if cached != nil && cached.tip != "" {
				haves = append(haves, cached.tip)
			}
			if err = s.fetch(ctx, []string{ref}, haves); err == nil {
				snap, err = s.parse(ref, tip)
			}
		}
		var gf *gitFailure
		switch {
		case err == nil:
			return snap, nil
		case errors.Is(err, errMissing) || errors.As(err, &gf) && gf.f == failGone:
			// The branch moved or vanished between ls-remote and fetch.
			if err := r.race(); err != nil {
				return nil, err
			}
		case errors.As(err, &gf):
			if err := r.fail(err); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
}

// scopeSnap is one scope of an environment listing.
type scopeSnap struct {
	stack string
	scope string
	ref   string
	snap  *snapshot
}

// readEnv reads every scope branch of env: one ls-remote of the prefix, one
// fetch of the tips this process does not hold, and pipelined reads of the
// commits and root trees; sorted by scope. The snapshots carry no lease:
// callers read the files they need with readFiles.
func (s *Store) readEnv(ctx context.Context, env string) ([]scopeSnap, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, "listing "+env)
	}
	if err := s.ensureLayout(ctx, false); err != nil {
		return nil, err
	}
	prefix := envPrefix(env)
	r := s.retrier(ctx, "listing", prefix+"*")
	for {
		refs, err := s.lsRemote(ctx, prefix+"*")
		if err != nil {
			if err := r.fail(err); err != nil {
				return nil, err
			}
			continue
		}
		out := scopeBranches(refs, env, prefix)
		tips := make([]string, len(out))
		for i, sc := range out {
			tips[i] = sc.snap.tip
		}
		commits, err := s.cat.getMany(tips)
		if err != nil {
			return nil, err
		}
		var missing []string
		for i, o := range commits {
			if !o.ok {
				missing = append(missing, out[i].ref)
			}
		}
		if len(missing) > 0 {
			if err := s.fetch(ctx, missing, s.knownTips(env)); err != nil {
				var gf *gitFailure
				if errors.As(err, &gf) && gf.f == failGone {
					err = r.race() // a branch vanished since ls-remote
				} else {
					err = r.fail(err)
				}
				if err != nil {
					return nil, err
				}
				continue
			}
			if commits, err = s.cat.getMany(tips); err != nil {
				return nil, err
			}
		}
		moved, err := s.readRoots(out, commits)
		if err != nil {
			return nil, err
		}
		if moved {
			if err := r.race(); err != nil {
				return nil, err
			}
			continue
		}
		return out, nil
	}
}

// scopeBranches lists the scope branches among the refs under prefix (ref
// to tip), <S>/<scope> below it, sorted by stack and scope; refs this store
// did not write are left out.
func scopeBranches(refs map[string]string, env, prefix string) []scopeSnap {
	var out []scopeSnap
	for ref, tip := range refs {
		rest, ok := strings.CutPrefix(ref, prefix)
		if !ok {
			continue
		}
		stackSeg, seg, ok := strings.Cut(rest, "/")
		if !ok || strings.Contains(seg, "/") {
			continue
		}
		stack, okStack := store.StackOf(stackSeg)
		scope, okScope := nameOf(seg)
		if okStack && okScope && store.CheckKey(store.Key{Stack: stack, Environment: env, Scope: scope}) == nil {
			out = append(out, scopeSnap{stack: stack, scope: scope, ref: ref, snap: &snapshot{tip: tip}})
		} // else not a branch this store wrote
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].stack != out[j].stack {
			return out[i].stack < out[j].stack
		}
		return out[i].scope < out[j].scope
	})
	return out
}

// readRoots reads the root tree of each scope's tip commit (commits, in
// the order of out) into its snapshot. moved is set when a tip is missing:
// its branch moved between ls-remote and fetch, and the listing starts
// again.
func (s *Store) readRoots(out []scopeSnap, commits []object) (moved bool, err error) {
	trees := make([]string, len(out))
	for i, o := range commits {
		if !o.ok {
			return true, nil
		}
		if o.kind != "commit" {
			return false, errcode.New(errcode.ReceiptCorrupt, "%s names a %s, not a commit", out[i].ref, o.kind)
		}
		if trees[i], err = commitTree(o.data); err != nil {
			return false, err
		}
	}
	roots, err := s.cat.getMany(trees)
	if err != nil {
		return false, err
	}
	for i, o := range roots {
		if !o.ok || o.kind != "tree" {
			return false, errcode.New(errcode.ReceiptCorrupt, "the tree of %s is missing", out[i].ref)
		}
		if out[i].snap.root, err = parseTree(o.data); err != nil {
			return false, err
		}
	}
	return false, nil
}

// readFiles reads the top-level file name of every snapshot in one
// pipelined batch; nil for a snapshot without it.
func (s *Store) readFiles(scopes []scopeSnap, name string) ([][]byte, error) {
	var ids []string
	var at []int
	for i, sc := range scopes {
		if e, ok := sc.snap.root[name]; ok && e.mode == modeBlob {
			ids = append(ids, e.id)
			at = append(at, i)
		}
	}
	objs, err := s.cat.getMany(ids)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(scopes))
	for j, o := range objs {
		if !o.ok || o.kind != "blob" {
			return nil, errcode.New(errcode.ReceiptCorrupt, "%s:%s is missing or not a file", scopes[at[j]].ref, name)
		}
		out[at[j]] = o.data
	}
	return out, nil
}

// knownTips returns the tips this store holds of env's scopes, as haves for
// a fetch.
func (s *Store) knownTips(env string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, ks := range s.keys {
		if k.Environment != env || !ks.mu.TryLock() {
			continue
		}
		if ks.snap != nil && ks.snap.tip != "" {
			out = append(out, ks.snap.tip)
		}
		ks.mu.Unlock()
	}
	return out
}

// parse reads the commit tip of ref and its lease record.
func (s *Store) parse(ref, tip string) (*snapshot, error) {
	kind, data, ok, err := s.cat.get(tip)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errMissing
	}
	if kind != "commit" {
		return nil, errcode.New(errcode.ReceiptCorrupt, "%s names a %s, not a commit", ref, kind)
	}
	treeID, err := commitTree(data)
	if err != nil {
		return nil, err
	}
	root, err := s.tree(treeID)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{tip: tip, root: root}
	b, ok, err := s.readFile(snap, leaseFile)
	if err != nil || !ok {
		return snap, err
	}
	if snap.lease, err = parseLease(ref, b); err != nil {
		return nil, err
	}
	snap.hasLease = true
	return snap, nil
}

// parseLease reads a lease record. One that does not parse is INTERNAL,
// never the zero record: that would restart the token at 1.
func parseLease(ref string, b []byte) (store.LeaseInfo, error) {
	var l store.LeaseInfo
	if err := json.Unmarshal(b, &l); err != nil {
		return l, errcode.Wrap(errcode.Internal, err, "lease record %s:%s is unreadable; it keeps the scope's fencing token, so restore it from the branch's history rather than delete it", ref, leaseFile).With("branch", ref)
	}
	if l.Token < 0 || (l.Holder != "" && l.Token == 0) {
		return l, errcode.New(errcode.Internal, "lease record %s:%s has an invalid token %d", ref, leaseFile, l.Token).With("branch", ref)
	}
	return l, nil
}

// tree reads a tree object.
func (s *Store) tree(id string) (map[string]entry, error) {
	kind, data, ok, err := s.cat.get(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errMissing
	}
	if kind != "tree" {
		return nil, errcode.New(errcode.ReceiptCorrupt, "object %s is a %s, not a tree", id, kind)
	}
	return parseTree(data)
}

// readFile reads path ("name" or "dir/name") of a snapshot.
func (s *Store) readFile(snap *snapshot, path string) ([]byte, bool, error) {
	entries := snap.root
	dir, name, nested := strings.Cut(path, "/")
	if nested {
		e, ok := entries[dir]
		if !ok || e.mode != modeTree {
			return nil, false, nil
		}
		var err error
		if entries, err = s.tree(e.id); err != nil {
			return nil, false, err
		}
	} else {
		name = dir
	}
	e, ok := entries[name]
	if !ok {
		return nil, false, nil
	}
	kind, data, ok, err := s.cat.get(e.id)
	if err != nil {
		return nil, false, err
	}
	if !ok || kind != "blob" {
		return nil, false, errcode.New(errcode.ReceiptCorrupt, "%s of commit %s is missing or not a file", path, snap.tip)
	}
	return data, true, nil
}

func (s *Store) latest(key store.Key, snap *snapshot) (*receipt.Receipt, error) {
	b, ok, err := s.readFile(snap, latestFile)
	if err != nil || !ok {
		return nil, err
	}
	return parseLatest(key, b)
}

// parseLatest reads a latest receipt. One that does not parse is an error
// naming the branch (RECEIPT_CORRUPT or RECEIPT_VERSION), never an empty
// scope: an empty scope would forget every resource of its ledger.
func parseLatest(key store.Key, b []byte) (*receipt.Receipt, error) {
	r, err := receipt.Parse(b)
	if err != nil {
		where := branchOf(key) + ":" + latestFile
		var e *errcode.Error
		if errors.As(err, &e) {
			return nil, (&errcode.Error{Code: e.Code, Message: where + ": " + e.Message, Hint: e.Hint, Err: e}).With("branch", branchOf(key))
		}
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "%s", where)
	}
	return r, nil
}

// mutate is the one write path: decide on the tip, commit, push with
// compare-and-swap; on a refused push read the tip again and decide again.
// A decision made on the remembered tip that refuses (HeldError,
// ErrLeaseLost) or writes nothing is confirmed on a fresh read first.
func (s *Store) mutate(ctx context.Context, key store.Key, decide func(cur *snapshot, now time.Time) (*change, error)) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := s.ensureLayout(ctx, true); err != nil {
		return err
	}
	ks := s.keyState(key)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ref := branchOf(key)
	r := s.retrier(ctx, "writing", ref)
	snap, fresh := ks.snap, false
	attempts := map[string]*change{} // commits pushed without a clear answer
	refusals := 0
	for {
		if snap == nil {
			var err error
			if snap, err = s.load(ctx, key, ks.snap, r); err != nil {
				ks.snap = nil
				return err
			}
			ks.snap, fresh = snap, true
			if ch, ok := attempts[snap.tip]; ok {
				// An earlier push whose outcome was unclear did land.
				if ch.done != nil {
					ch.done()
				}
				return nil
			}
		}
		ch, err := decide(snap, s.clock())
		if (err != nil || ch == nil) && !fresh {
			snap = nil // confirm on the remote's current tip
			continue
		}
		if err != nil || ch == nil {
			return err
		}
		commit, next, err := s.commit(key, snap, ch)
		if err != nil {
			return err
		}
		outcome, reason, err := s.push(ctx, ref, snap.tip, commit)
		switch outcome {
		case pushed:
			ks.snap = next
			if ch.done != nil {
				ch.done()
			}
			return nil
		case raced:
			ks.snap = nil
			if fresh {
				if err := r.race(); err != nil {
					return err
				}
			}
		case refused:
			// A hook may refuse for a moment (a flaky policy service):
			// try a few times, then keep the document and say so.
			ks.snap = nil
			if refusals++; refusals >= maxRefusals {
				return s.refusedError(key, ch, reason)
			}
			if ok, err := r.wait(); !ok {
				if err != nil {
					return err
				}
				return s.refusedError(key, ch, reason)
			}
		case failed:
			ks.snap = nil
			attempts[commit] = ch
			if err := r.fail(err); err != nil {
				return err
			}
		}
		snap, fresh = nil, false
	}
}

// commit writes the objects of ch on top of snap and returns the commit and
// the snapshot it makes.
func (s *Store) commit(key store.Key, snap *snapshot, ch *change) (string, *snapshot, error) {
	root, err := s.applyFiles(snap.root, ch.files)
	if err != nil {
		return "", nil, err
	}
	tb, err := encodeTree(root)
	if err != nil {
		return "", nil, err
	}
	treeID, err := s.putObject("tree", tb)
	if err != nil {
		return "", nil, err
	}
	msg := "sponson: " + ch.msg + "\n"
	if !s.noNonce {
		var n [16]byte
		_, _ = rand.Read(n[:]) // crypto/rand.Read never fails; it crashes instead
		msg += "\nSponson-Nonce: " + hex.EncodeToString(n[:]) + "\n"
	}
	commitID, err := s.putObject("commit", encodeCommit(treeID, snap.tip, s.clock(), msg))
	if err != nil {
		return "", nil, err
	}
	next := &snapshot{tip: commitID, root: root, lease: snap.lease, hasLease: snap.hasLease}
	if b, ok := ch.files[leaseFile]; ok && b != nil {
		var li store.LeaseInfo
		if err := json.Unmarshal(b, &li); err != nil {
			return "", nil, errcode.Wrap(errcode.Internal, err, "re-read the lease record written for %s", key)
		}
		next.lease, next.hasLease = li, true
	}
	return commitID, next, nil
}

// applyFiles returns root with files written (nil content deletes), writing
// the new blobs and subtrees.
func (s *Store) applyFiles(root map[string]entry, files map[string][]byte) (map[string]entry, error) {
	out := make(map[string]entry, len(root)+len(files))
	for n, e := range root {
		out[n] = e
	}
	sub := map[string]map[string][]byte{}
	for p, data := range files {
		dir, name, nested := strings.Cut(p, "/")
		if nested {
			if sub[dir] == nil {
				sub[dir] = map[string][]byte{}
			}
			sub[dir][name] = data
			continue
		}
		if data == nil {
			delete(out, p)
			continue
		}
		id, err := s.putObject("blob", data)
		if err != nil {
			return nil, err
		}
		out[p] = entry{mode: modeBlob, id: id}
	}
	for dir, fs := range sub {
		entries := map[string]entry{}
		if e, ok := out[dir]; ok && e.mode == modeTree {
			var err error
			if entries, err = s.tree(e.id); err != nil {
				return nil, err
			}
		}
		for name, data := range fs {
			if data == nil {
				delete(entries, name)
				continue
			}
			id, err := s.putObject("blob", data)
			if err != nil {
				return nil, err
			}
			entries[name] = entry{mode: modeBlob, id: id}
		}
		if len(entries) == 0 {
			delete(out, dir)
			continue
		}
		tb, err := encodeTree(entries)
		if err != nil {
			return nil, err
		}
		id, err := s.putObject("tree", tb)
		if err != nil {
			return nil, err
		}
		out[dir] = entry{mode: modeTree, id: id}
	}
	return out, nil
}

// refusedError is STORE_REJECTED for a push the remote refused, after
// keeping the document locally.
func (s *Store) refusedError(key store.Key, ch *change, reason string) error {
	ref := branchOf(key)
	e := errcode.New(errcode.StoreRejected, "the remote %s refused the push to %s: %s", s.display, ref, s.scrub(reason)).
		WithHint("Allow pushes to sponson-receipts/* in the remote's hooks and branch rules (or give the job a token that may push there), then run again.").
		With("remote", s.display).With("branch", ref)
	if ch.keep == nil {
		return e
	}
	dir := filepath.Join(s.fallback, key.Environment, key.Scope)
	path := filepath.Join(dir, ch.keep.name)
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = os.WriteFile(path, ch.keep.data, 0o600)
	}
	if err != nil {
		e.Message += fmt.Sprintf("; keeping the %s locally failed too: %v", ch.keep.what, err)
		return e
	}
	e.Message += fmt.Sprintf("; the %s is kept at %s", ch.keep.what, path)
	return e.With("keptAt", path)
}

// retrier paces the retries of one operation within the store's budget:
// delay = 12.5 ms + rand·min(2 s, 25 ms·2^attempt), as the original tool
// measured it to spread contenders without starving them.
type retrier struct {
	s        *Store
	ctx      context.Context
	op, ref  string
	start    time.Time
	attempts int
}

func (s *Store) retrier(ctx context.Context, op, ref string) *retrier {
	return &retrier{s: s, ctx: ctx, op: op, ref: ref, start: s.budgetClock()}
}

// elapsed is how much of the budget the operation has used.
func (r *retrier) elapsed() time.Duration { return r.s.budgetClock().Sub(r.start) }

// race waits before the next attempt after someone else moved the branch;
// STORE_CONTENDED once the budget is spent.
func (r *retrier) race() error {
	if ok, err := r.wait(); !ok {
		if err != nil {
			return err
		}
		return errcode.New(errcode.StoreContended, "gave up %s %s on %s after %d attempts in %s: other writers kept moving it (budget %s)",
			r.op, r.ref, r.s.display, r.attempts, r.elapsed().Round(time.Millisecond), r.s.budget).
			With("branch", r.ref).With("remote", r.s.display).With("attempts", r.attempts).
			With("elapsedMs", r.elapsed().Milliseconds()).With("budgetMs", r.s.budget.Milliseconds())
	}
	return nil
}

// fail decides on a failed git command: permission and permanent failures
// are returned at once, transient ones are retried within the budget.
func (r *retrier) fail(err error) error {
	var gf *gitFailure
	if !errors.As(err, &gf) {
		return err
	}
	if gf.f != failTransient {
		return r.s.remoteError(gf.op, r.ref, gf.stderr, gf.f, gf.err)
	}
	if ok, werr := r.wait(); !ok {
		if werr != nil {
			return werr
		}
		return r.s.remoteError(gf.op, r.ref, gf.stderr, gf.f, gf.err).With("attempts", r.attempts).With("budgetMs", r.s.budget.Milliseconds())
	}
	return nil
}

// wait sleeps the next backoff delay; ok is false when the budget would be
// exceeded (err nil) or ctx ended (err set).
func (r *retrier) wait() (ok bool, err error) {
	r.attempts++
	n := min(r.attempts, 16)
	d := 12500*time.Microsecond + mrand.N(min(2*time.Second, 25*time.Millisecond<<n))
	if r.elapsed()+d > r.s.budget {
		return false, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return false, ctxError(r.ctx, r.op+" "+r.ref)
	case <-t.C:
		return true, nil
	}
}

// fence checks, on the tip a write is decided on, that l still holds the
// lease: the record names l's holder and token and has not expired by the
// store's clock. The push's compare-and-swap then makes the check and the
// write one atomic step.
func fence(l store.Lease, cur *snapshot, now time.Time) error {
	if l.Holder == "" {
		return store.Lost(l.Key, "the lease has no holder")
	}
	c := cur.lease
	switch {
	case !cur.hasLease || c.Holder == "" && c.Token == 0:
		return store.Lost(l.Key, "the scope has no lease record")
	case c.Holder == "":
		return store.Lost(l.Key, fmt.Sprintf("the lease was released (token %d)", c.Token))
	case c.Holder != l.Holder || c.Token != l.Token:
		return store.Lost(l.Key, fmt.Sprintf("the lease is now %s's with token %d", c.Holder, c.Token))
	case !now.Before(c.ExpiresAt):
		return store.Lost(l.Key, "the lease expired at "+c.ExpiresAt.Format(time.RFC3339Nano))
	}
	return nil
}

// clock returns the store's time without a monotonic reading, in UTC, so the
// times a call returns are equal to the ones read back from the documents.
func (s *Store) clock() time.Time { return s.now().Round(0).UTC() }

// sealState prepares a state document: sealed under the key, or plaintext
// when explicitly allowed. It returns the payload, the file name to write and
// the name of the other form, which the write removes.
func (s *Store) sealState(key store.Key, doc string, state []byte) (payload []byte, name, other string, err error) {
	switch {
	case s.key != nil:
		payload, err = seal(s.key, sealContext(key, doc), state)
		return payload, stateSealed, statePlain, err
	case s.plain:
		return append([]byte(nil), state...), statePlain, stateSealed, nil
	default:
		return nil, "", "", errcode.New(errcode.Usage, "the git store does not write state unencrypted: anyone who can read the repository could read it, secrets included").WithHint(keyHint)
	}
}

// sealContext binds a sealed document to its stack, scope and place, so
// that it does not open when copied elsewhere (another stack's branch
// included). The layout before stacks bound it to environment and scope
// only; Migrate seals those documents again.
func sealContext(key store.Key, doc string) string {
	if key.Stack == "" {
		return key.Environment + "/" + key.Scope + "/" + doc
	}
	return store.StackSegment(key.Stack) + "//" + key.Environment + "/" + key.Scope + "/" + doc
}

func encodeLease(l store.LeaseInfo) []byte {
	b, _ := json.MarshalIndent(l, "", "  ") // a struct of strings, ints and times always encodes
	return append(b, '\n')
}

// ownersDoc is a scope's part of the ownership index, as in the file store.
type ownersDoc struct {
	RunID   string        `json:"runId"`
	Entries []store.Owner `json:"entries"`
}

// encodeOwners builds the index part of r; prev is the part it replaces,
// whose Since times are kept for the identities r still lists.
func encodeOwners(prev []byte, k store.Key, r *receipt.Receipt, now time.Time) ([]byte, error) {
	var old ownersDoc
	if prev != nil {
		_ = json.Unmarshal(prev, &old) // an unreadable part only loses its Since times
	}
	doc := ownersDoc{RunID: r.RunID, Entries: store.OwnersOf(k, r, old.Entries, now)}
	// Compact, unlike the documents people read: every foreign check
	// decodes the index part of every scope of the environment.
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "encode the ownership index of %s", k)
	}
	return append(b, '\n'), nil
}

// readme is the README.md of a scope's branch.
func readme(k store.Key) []byte {
	stack := k.Stack
	if stack == "" {
		stack = "(none: a parent lease, shared by every stack)"
	}
	return []byte(fmt.Sprintf(`# Sponson store: %[1]s / %[2]s

This branch is written by Sponson, not by people. It is the git store of the
scope %[2]q of environment %[1]q of the stack %[3]s: its lease (lease.json), its receipts
(latest.json, receipts/), its part of the ownership index (owners.json),
small records (records/), quarantined states (quarantine/) and its
Terraform/OpenTofu state (terraform.tfstate.enc, AES-256-GCM with the key in
SPONSON_STATE_KEY; terraform.tfstate only where plaintext was explicitly
allowed). Every change is one commit whose push is the store's
compare-and-swap, so never edit, rebase or force-push it.

Deleting this branch is safe only when the scope owns nothing any more (the
latest receipt says "destroyed" or its ledger is empty) and no run holds the
lease (lease.json has no holder, or its expiresAt has passed). Before that, the
state and the ledger in it are the only record of what the scope created:
deleting the branch would leave those resources without an owner.
`, k.Environment, k.Scope, stack))
}
