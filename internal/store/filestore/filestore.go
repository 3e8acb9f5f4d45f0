// Package filestore is the embedded store backend (`file://DIR`, by default
// .sponson/ under the configuration): leases, receipts and Terraform state as
// files in a local directory, one directory per environment, stack and
// scope (S is the stack encoded by store.StackSegment, "_" for the parent
// leases that every stack shares):
//
//	<root>/@layout.json                 {"layout": 2}: the layout version (see Layout)
//	<root>/@stacks/<env>/<S>/<scope>/.mutex             flock target, never replaced or deleted
//	<root>/@stacks/<env>/<S>/<scope>/lease.json         the lease record (store.LeaseInfo)
//	<root>/@stacks/<env>/<S>/<scope>/latest.json        the scope's latest receipt (a hard link of its run's)
//	<root>/@stacks/<env>/<S>/<scope>/receipts/<runId>.json  every run's own receipt
//	<root>/@stacks/<env>/<S>/<scope>/terraform.tfstate  the scope's Terraform state
//	<root>/@stacks/<env>/<S>/<scope>/records/<name>.json  small fenced documents (sponson_scope)
//	<root>/@stacks/<env>/<S>/<scope>/quarantine/<runId>.tfstate  states a lost run could not write
//	<root>/@stacks/<env>/.owners/<S>/<scope>.json        the scope's part of the ownership index
//
// "@" never occurs in an environment name, so nothing of the layout before
// stacks (<root>/<env>/<scope>/..., layout 1) can be mistaken for this one:
// Open refuses such a store with STORE_LAYOUT_OLD until Migrate moved it
// (migrate.go), rather than reading it as empty.
//
// This is the design measured in shared/reference/store-notes.md §1 (zero
// violations in multi-process races, where the naive O_EXCL design failed on
// every run):
//
//   - Per-scope mutex. Every mutation (Acquire, Renew, Release and the fenced
//     writes) runs under flock(LOCK_EX) on .mutex. The file is never replaced
//     or deleted: a lock on a file that a rename or unlink has detached
//     excludes nobody, so replacing it would let two writers in at once.
//     flock belongs to the open file description, so every operation opens
//     its own descriptor (O_CLOEXEC, so an engine started meanwhile does not
//     inherit it); goroutines of one process then exclude each other exactly
//     as processes do.
//   - Atomic documents. Documents are written to a temporary file in the same
//     directory, fsynced, renamed over the target, and the directory is
//     fsynced, so a reader sees the old or the new document, never half of
//     one, and a crash never leaves an empty one. Reads therefore need no
//     mutex.
//   - Fencing. A write is accepted only if, inside the mutex, lease.json still
//     names the writer's holder and token and has not expired by the store's
//     clock. A run that lost its lease can write nothing (docs/design.md §2.8,
//     "Fenced write").
//   - Tokens survive release. Release keeps lease.json with an empty holder
//     and the same token, so the next grant is token+1 and a token is never
//     handed out twice. An unreadable lease.json is therefore an error, never
//     an absent lease: treating it as absent would grant token 1 again.
//
// A receipt's bytes are written once: latest.json is a hard link of the
// run's own receipt file, so an earlier run's receipt never changes with the
// latest. The mutex is held for one write only, so a wait for it that lasts
// a minute (patience) meets a process stopped or hung inside a write, which
// no store can break: it ends with STORE_CONTENDED rather than lasting as
// long as the holder. Index parts are kept parsed with the bytes they came
// from (parts.go) and parsed again only when the bytes differ (file times
// cannot tell two parts written within one clock tick apart): a run reads
// every part twice, and a large part's parse was a large share of
// sponson's own CPU (docs/design.md §5.2).
//
// Expiry uses the local wall clock, which is sound on one machine; network
// filesystems (emulated flock, one clock per client) are not supported.
package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

var _ store.Store = (*Store)(nil)

// Names of the files of a scope directory.
const (
	mutexFile   = ".mutex"
	leaseFile   = "lease.json"
	latestFile  = "latest.json"
	receiptsDir = "receipts"
	stateFile   = "terraform.tfstate"
	recordsDir  = "records"
	ownersDir   = ".owners" // per environment: <scope>.json, the ownership index
	quarantine  = "quarantine"
)

// Permissions: state holds sensitive values, so nothing is readable by others.
const (
	dirPerm  = 0o700
	filePerm = 0o600
)

// Polling bounds while another writer holds the mutex. flock has no timeout,
// so waiting polls with LOCK_NB to be able to give up when ctx is done.
const (
	minPoll = 100 * time.Microsecond
	maxPoll = 10 * time.Millisecond
)

// Layout is the version of the directory layout this package writes and
// reads. 1 was the layout before stacks; Open refuses a newer one.
const Layout = 2

// Names of the layout's top-level entries.
const (
	layoutFile = "@layout.json"
	stacksDir  = "@stacks"
)

// Store is the file store. It keeps no open files and no in-memory state
// between calls, so any number of Stores, in any number of processes, may
// share one root.
type Store struct {
	root      string
	now       func() time.Time
	oldLayout bool // WithOldLayout: skip the layout check (migration only)
	// patience is how long an operation waits for a scope's mutex before
	// it takes the holder for stopped or hung (WithMutexPatience).
	patience time.Duration
	parts    partCache // the ownership-index parts read or written (parts.go)
}

// Option configures Open.
type Option func(*Store)

// WithClock makes the store read the time from now instead of time.Now. Lease
// expiry is decided by this clock alone, never by the caller's clock.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// WithOldLayout opens a store whatever its layout, for Migrate alone.
func WithOldLayout() Option { return func(s *Store) { s.oldLayout = true } }

// WithMutexPatience sets how long an operation waits for a scope's mutex (a
// minute by default, whatever the lease's TTL: a 15-minute TTL must not
// mean a 15-minute hang) before it gives up on its holder as stopped or
// hung.
func WithMutexPatience(d time.Duration) Option { return func(s *Store) { s.patience = d } }

// Open returns the store rooted at root, creating the directory if needed.
// A store in the layout before stacks is STORE_LAYOUT_OLD and one in a
// newer layout STORE_LAYOUT_NEWER: neither is ever read as empty.
func Open(root string, opts ...Option) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, errcode.Wrap(errcode.StoreUnavailable, err, "resolve the store directory %s", root)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, fsError("create the store directory", abs, err)
	}
	s := &Store{root: abs, now: time.Now, patience: time.Minute}
	for _, o := range opts {
		o(s)
	}
	if !s.oldLayout {
		if err := s.checkLayout(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Acquire grants the lease of key to holder for ttl. A live lease gives
// *store.HeldError, also when it is holder's own: a holder id names one run,
// and a run asking twice is a bug that a silent re-grant would hide. An
// expired lease is taken over and reported in Grant.Preempted.
//
// A done ctx is refused up front: a lease granted to a run that is being
// interrupted would block the scope for a whole TTL. The other mutations
// only give up on ctx while waiting for the mutex, so cleanup with a
// cancelled context still releases the lease.
func (s *Store) Acquire(ctx context.Context, key store.Key, holder string, ttl time.Duration) (store.Grant, error) {
	if err := store.CheckKey(key); err != nil {
		return store.Grant{}, err
	}
	if ctx.Err() != nil {
		return store.Grant{}, waitError(ctx, s.scopeDir(key))
	}
	if holder == "" {
		return store.Grant{}, errcode.New(errcode.Usage, "a lease needs a holder")
	}
	if ttl <= 0 {
		return store.Grant{}, errcode.New(errcode.Usage, "lease TTL must be positive, got %s", ttl)
	}
	dir := s.scopeDir(key)
	if err := ensureDir(dir, s.root); err != nil {
		return store.Grant{}, err
	}
	unlock, err := lockPatiently(ctx, dir, true, s.patience)
	if err != nil {
		return store.Grant{}, err
	}
	defer unlock()

	cur, _, err := readLease(filepath.Join(dir, leaseFile))
	if err != nil {
		return store.Grant{}, err
	}
	now := s.clock()
	if cur.Live(now) {
		return store.Grant{}, &store.HeldError{Key: key, Lease: cur}
	}
	next := store.LeaseInfo{Holder: holder, Token: cur.Token + 1, AcquiredAt: now, ExpiresAt: now.Add(ttl), About: store.HolderFrom(ctx)}
	if err := writeJSON(dir, leaseFile, next); err != nil {
		return store.Grant{}, err
	}
	g := store.Grant{Lease: store.Lease{Key: key, Holder: holder, Token: next.Token, ExpiresAt: next.ExpiresAt}}
	if cur.Holder != "" {
		g.Preempted = &cur
	}
	return g, nil
}

// Renew extends l to ttl from now (the store's clock) if l still holds the
// lease; store.ErrLeaseLost otherwise.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckKey(l.Key); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, errcode.New(errcode.Usage, "lease TTL must be positive, got %s", ttl)
	}
	var out store.Lease
	err := s.fenced(ctx, l, func(dir string, cur store.LeaseInfo, now time.Time) error {
		cur.ExpiresAt = now.Add(ttl)
		if err := writeJSON(dir, leaseFile, cur); err != nil {
			return err
		}
		out = l
		out.ExpiresAt = cur.ExpiresAt
		return nil
	})
	return out, err
}

// Release frees the lease if l still holds it. The record stays with an empty
// holder and the same token (tokens survive release, so the next grant is
// token+1); its ExpiresAt becomes the time of release.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	return s.fenced(ctx, l, func(dir string, cur store.LeaseInfo, now time.Time) error {
		cur.Holder, cur.About = "", store.HolderInfo{}
		cur.ExpiresAt = now
		return writeJSON(dir, leaseFile, cur)
	})
}

// ReadLease returns the lease record of key, the zero LeaseInfo if the scope
// never had one.
func (s *Store) ReadLease(ctx context.Context, key store.Key) (store.LeaseInfo, error) {
	if err := store.CheckKey(key); err != nil {
		return store.LeaseInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.LeaseInfo{}, err
	}
	info, _, err := readLease(filepath.Join(s.scopeDir(key), leaseFile))
	return info, err
}

// WriteReceipt stores r as receipts/<runId>.json and then as latest.json,
// fenced by l, both in one hold of the mutex. r must name l's environment and
// scope and read back with receipt.Parse: the store never writes a receipt it
// would later report as corrupt.
func (s *Store) WriteReceipt(ctx context.Context, l store.Lease, r *receipt.Receipt) error {
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	data, _, err := store.EncodeReceipt(l.Key, r)
	if err != nil {
		return err
	}
	// The documents do not depend on the lease record, so they are written
	// and fsynced before taking the mutex; inside it only the fence check and
	// the renames remain. A refused write removes them again.
	dir, err := s.leasedDir(l.Key)
	if err != nil {
		return err
	}
	rdir := filepath.Join(dir, receiptsDir)
	if err := os.Mkdir(rdir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return fsError("create", rdir, err)
	}
	runTmp, err := writeTemp(rdir, r.RunID+".json", data)
	if err != nil {
		return err
	}
	latestTmp, err := linkTemp(runTmp, dir, latestFile, data)
	if err != nil {
		os.Remove(runTmp)
		return err
	}
	odir := s.ownersDir(l.Key)
	if err := os.MkdirAll(odir, dirPerm); err != nil {
		os.Remove(runTmp)
		os.Remove(latestTmp)
		return fsError("create", odir, err)
	}
	idxPath := filepath.Join(odir, l.Key.Scope+".json")
	err = s.fenced(ctx, l, func(dir string, _ store.LeaseInfo, now time.Time) error {
		// The index is built inside the mutex: an identity keeps the time
		// the store first recorded it for this scope (store.Owner.Since).
		idx, doc, err := s.encodeOwners(idxPath, l.Key, r, now)
		if err != nil {
			return err
		}
		if idx != nil {
			idxTmp, err := writeTemp(odir, l.Key.Scope+".json", idx)
			if err != nil {
				return err
			}
			// The next read of the part finds what this store encoded.
			s.parts.put(idxPath, idx, doc)
			// The index goes first: a crash before latest.json leaves it
			// ahead of the receipt, claiming more rather than less.
			if err := commit(idxTmp, idxPath); err != nil {
				os.Remove(idxTmp)
				return err
			}
		}
		if err := commit(runTmp, filepath.Join(rdir, r.RunID+".json")); err != nil {
			return err
		}
		return commit(latestTmp, filepath.Join(dir, latestFile))
	})
	if err != nil {
		os.Remove(runTmp)
		os.Remove(latestTmp)
	}
	return err
}

// ownersDoc is a scope's part of the ownership index: the identities of its
// latest ledger, without the rest of the receipt, so reading a whole
// environment stays cheap.
type ownersDoc struct {
	RunID   string        `json:"runId"`
	Entries []store.Owner `json:"entries"`
}

// encodeOwners renders the scope's part of the index for r, nil when the
// part at prevPath already holds it (store.SameOwners): it is then not
// written again. doc is the part rendered.
func (s *Store) encodeOwners(prevPath string, k store.Key, r *receipt.Receipt, now time.Time) (data []byte, doc ownersDoc, err error) {
	// An unreadable part only loses its Since times.
	prev, err := s.readPart(prevPath)
	read := err == nil
	doc = ownersDoc{RunID: r.RunID, Entries: store.OwnersOf(k, r, prev.Entries, now)}
	if read && store.SameOwners(prev.Entries, doc.Entries) {
		return nil, doc, nil
	}
	data, err = json.Marshal(doc)
	if err != nil {
		return nil, doc, errcode.Wrap(errcode.Internal, err, "encode the ownership index of %s", k)
	}
	return data, doc, nil
}

// Owners reads the ownership index of env across every stack: one file per
// stack and scope in <env>/.owners/<S>/, each written by that scope's fenced
// receipt writes.
func (s *Store) Owners(ctx context.Context, env string, identities []string) ([]store.Owner, error) {
	if err := store.CheckName("environment", env); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var want map[string]bool
	if identities != nil {
		want = make(map[string]bool, len(identities))
		for _, id := range identities {
			want[id] = true
		}
	}
	root := filepath.Join(s.root, stacksDir, env, ownersDir)
	stacks, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return []store.Owner{}, nil
	}
	if err != nil {
		return nil, fsError("list", root, err)
	}
	out := []store.Owner{}
	for _, se := range stacks {
		stack, ok := store.StackOf(se.Name())
		if !ok || !se.IsDir() {
			continue
		}
		odir := filepath.Join(root, se.Name())
		entries, err := os.ReadDir(odir)
		if err != nil {
			return nil, fsError("list", odir, err)
		}
		for _, e := range entries {
			scope, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || store.CheckName("scope", scope) != nil {
				continue
			}
			doc, err := s.readPart(filepath.Join(odir, e.Name()))
			if err != nil {
				return nil, err
			}
			for _, o := range doc.Entries {
				if want == nil || want[o.Identity] {
					// The directory names the stack and scope: an entry
					// cannot claim another's.
					o.Stack, o.Scope = stack, scope
					out = append(out, o)
				}
			}
		}
	}
	return out, nil
}

// LatestReceipt returns the scope's latest receipt, nil if it has none. A
// latest.json that does not parse is an error (RECEIPT_CORRUPT or
// RECEIPT_VERSION from receipt.Parse), never an empty scope: an empty scope
// would forget every resource of its ledger.
func (s *Store) LatestReceipt(ctx context.Context, key store.Key) (*receipt.Receipt, error) {
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return readReceipt(filepath.Join(s.scopeDir(key), latestFile))
}

// WriteState replaces the scope's Terraform state, fenced by l.
func (s *Store) WriteState(ctx context.Context, l store.Lease, state []byte) error {
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	dir, err := s.leasedDir(l.Key)
	if err != nil {
		return err
	}
	tmp, err := writeTemp(dir, stateFile, state)
	if err != nil {
		return err
	}
	err = s.fenced(ctx, l, func(dir string, _ store.LeaseInfo, _ time.Time) error {
		return commit(tmp, filepath.Join(dir, stateFile))
	})
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// ReadState returns the scope's Terraform state, nil if it has none.
func (s *Store) ReadState(ctx context.Context, key store.Key) ([]byte, error) {
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := filepath.Join(s.scopeDir(key), stateFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("read", p, err)
	}
	return b, nil
}

// WriteRecord stores records/<name>.json, fenced by l.
func (s *Store) WriteRecord(ctx context.Context, l store.Lease, name string, data []byte) error {
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	if err := store.CheckName("record", name); err != nil {
		return err
	}
	dir, err := s.leasedDir(l.Key)
	if err != nil {
		return err
	}
	rdir := filepath.Join(dir, recordsDir)
	if err := os.Mkdir(rdir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return fsError("create", rdir, err)
	}
	tmp, err := writeTemp(rdir, name+".json", data)
	if err != nil {
		return err
	}
	err = s.fenced(ctx, l, func(string, store.LeaseInfo, time.Time) error {
		return commit(tmp, filepath.Join(rdir, name+".json"))
	})
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// ReadRecord returns records/<name>.json, nil if it does not exist.
func (s *Store) ReadRecord(ctx context.Context, key store.Key, name string) ([]byte, error) {
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	if err := store.CheckName("record", name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := filepath.Join(s.scopeDir(key), recordsDir, name+".json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("read", p, err)
	}
	return b, nil
}

// DeleteRecord removes records/<name>.json, fenced by l.
func (s *Store) DeleteRecord(ctx context.Context, l store.Lease, name string) error {
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	if err := store.CheckName("record", name); err != nil {
		return err
	}
	return s.fenced(ctx, l, func(dir string, _ store.LeaseInfo, _ time.Time) error {
		p := filepath.Join(dir, recordsDir, name+".json")
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fsError("remove", p, err)
		}
		return syncDir(filepath.Join(dir, recordsDir))
	})
}

// Quarantine stores quarantine/<runId>.tfstate without a fence: the file is
// named by the run, so it can replace nothing but its own earlier copy.
func (s *Store) Quarantine(ctx context.Context, key store.Key, runID string, state []byte) error {
	if err := store.CheckKey(key); err != nil {
		return err
	}
	if err := store.CheckName("run id", runID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	qdir := filepath.Join(s.scopeDir(key), quarantine)
	if err := os.MkdirAll(qdir, dirPerm); err != nil {
		return fsError("create", qdir, err)
	}
	tmp, err := writeTemp(qdir, runID+".tfstate", state)
	if err != nil {
		return err
	}
	if err := commit(tmp, filepath.Join(qdir, runID+".tfstate")); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// ListQuarantine returns the quarantined states of key, oldest first.
func (s *Store) ListQuarantine(ctx context.Context, key store.Key) ([]store.Quarantined, error) {
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	qdir := filepath.Join(s.scopeDir(key), quarantine)
	entries, err := os.ReadDir(qdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("list", qdir, err)
	}
	var out []store.Quarantined
	for _, e := range entries {
		runID, ok := strings.CutSuffix(e.Name(), ".tfstate")
		if !ok || store.CheckName("run id", runID) != nil {
			continue
		}
		p := filepath.Join(qdir, e.Name())
		info, err := e.Info()
		if err != nil {
			return nil, fsError("stat", p, err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fsError("read", p, err)
		}
		out = append(out, store.Quarantined{RunID: runID, At: info.ModTime().UTC(), State: b})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}

// List returns the scopes of every stack of env that have a lease record or
// a receipt, sorted by stack and scope name. A scope whose lease or latest
// receipt cannot be read fails the whole listing, naming the file, rather
// than being shown as free or empty.
func (s *Store) List(ctx context.Context, env string) ([]store.ScopeSummary, error) {
	if err := store.CheckName("environment", env); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	envDir := filepath.Join(s.root, stacksDir, env)
	stacks, err := os.ReadDir(envDir)
	if errors.Is(err, fs.ErrNotExist) {
		return []store.ScopeSummary{}, nil
	}
	if err != nil {
		return nil, fsError("list", envDir, err)
	}
	out := []store.ScopeSummary{}
	for _, se := range stacks {
		stack, ok := store.StackOf(se.Name())
		if !ok || !se.IsDir() {
			continue // the ownership index, anything a human left behind
		}
		sdir := filepath.Join(envDir, se.Name())
		entries, err := os.ReadDir(sdir)
		if err != nil {
			return nil, fsError("list", sdir, err)
		}
		for _, e := range entries {
			key := store.Key{Stack: stack, Environment: env, Scope: e.Name()}
			if !e.IsDir() || store.CheckKey(key) != nil {
				continue // temporary files, anything a human left behind
			}
			dir := s.scopeDir(key)
			info, hasLease, err := readLease(filepath.Join(dir, leaseFile))
			if err != nil {
				return nil, err
			}
			latest, err := readReceipt(filepath.Join(dir, latestFile))
			if err != nil {
				return nil, err
			}
			if !hasLease && latest == nil {
				continue // a directory whose first Acquire failed
			}
			out = append(out, store.ScopeSummary{Key: key, Lease: info, Latest: latest})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Key.Stack != out[j].Key.Stack {
			return out[i].Key.Stack < out[j].Key.Stack
		}
		return out[i].Key.Scope < out[j].Key.Scope
	})
	return out, nil
}

// Close does nothing: the store holds no resources between calls.
func (s *Store) Close() error { return nil }

// fenced runs write under the scope's mutex if l still holds the lease: the
// record names l's holder and token and has not expired by the store's clock,
// read after the mutex was taken. Otherwise it returns store.ErrLeaseLost and
// write is not called.
func (s *Store) fenced(ctx context.Context, l store.Lease, write func(dir string, cur store.LeaseInfo, now time.Time) error) error {
	if l.Holder == "" {
		return store.Lost(l.Key, "the lease has no holder")
	}
	dir := s.scopeDir(l.Key)
	unlock, err := lockPatiently(ctx, dir, false, s.patience)
	if errors.Is(err, fs.ErrNotExist) {
		return store.Lost(l.Key, "the scope has no lease record")
	}
	if err != nil {
		return err
	}
	defer unlock()

	cur, _, err := readLease(filepath.Join(dir, leaseFile))
	if err != nil {
		return err
	}
	now := s.clock()
	switch {
	case cur.Holder == "" && cur.Token == 0:
		return store.Lost(l.Key, "the scope has no lease record")
	case cur.Holder == "":
		return store.Lost(l.Key, fmt.Sprintf("the lease was released (token %d)", cur.Token))
	case cur.Holder != l.Holder || cur.Token != l.Token:
		return store.Lost(l.Key, fmt.Sprintf("the lease is now %s's with token %d", cur.Holder, cur.Token))
	case !now.Before(cur.ExpiresAt):
		return store.Lost(l.Key, "the lease expired at "+cur.ExpiresAt.Format(time.RFC3339Nano))
	}
	return write(dir, cur, now)
}

// clock returns the store's time without a monotonic reading, in UTC, so the
// times a call returns are equal to the ones read back from the documents.
func (s *Store) clock() time.Time { return s.now().Round(0).UTC() }

func (s *Store) scopeDir(k store.Key) string {
	return filepath.Join(s.root, stacksDir, k.Environment, store.StackSegment(k.Stack), k.Scope)
}

// ownersDir is the directory of the ownership-index parts of k's stack.
func (s *Store) ownersDir(k store.Key) string {
	return filepath.Join(s.root, stacksDir, k.Environment, ownersDir, store.StackSegment(k.Stack))
}

// leasedDir returns the directory of a scope a fenced write is about to
// prepare documents in. A scope without a directory never had a lease, so the
// write is refused there, before anything is created.
func (s *Store) leasedDir(k store.Key) (string, error) {
	dir := s.scopeDir(k)
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", store.Lost(k, "the scope has no lease record")
		}
		return "", fsError("open", dir, err)
	}
	return dir, nil
}

// lockPatiently is lockScope waiting at most patience. The mutex is held for
// a store operation, milliseconds (never a minute, whatever the
// contention): a holder that keeps it longer is stopped (SIGSTOP) or hung
// inside a write, and waiting on it without end would hang this run with
// it. That holds for every wait, not only Acquire's: `sponson unlock`, which
// releases a stopped run's lease, and a run writing under its lease wait
// for the same mutex.
func lockPatiently(ctx context.Context, dir string, create bool, patience time.Duration) (unlock func(), err error) {
	mctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	unlock, err = lockScope(mctx, dir, create)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, errcode.Wrap(errcode.StoreContended, err,
			"the store's mutex of %s was held for longer than %s: a process holding it is stopped or hung inside a store write", dir, patience).
			WithHint("Find the stopped or hung sponson process of this scope (ps) and continue or end it, then run again.")
	}
	return unlock, err
}

// lockScope takes the scope's mutex, waiting until ctx is done. ctx is only
// consulted while waiting, so an uncontended Release still goes through with
// a cancelled context (cleanup after an interrupt). With create false a
// missing scope directory is returned as fs.ErrNotExist (the caller holds no
// lease there).
func lockScope(ctx context.Context, dir string, create bool) (unlock func(), err error) {
	p := filepath.Join(dir, mutexFile)
	fd, err := openMutex(p)
	if err != nil {
		if !create && errors.Is(err, unix.ENOENT) {
			return nil, fs.ErrNotExist
		}
		return nil, fsError("open the mutex", p, &fs.PathError{Op: "open", Path: p, Err: err})
	}
	delay := minPoll
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			unix.Close(fd)
			return nil, fsError("lock the mutex", p, err)
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			unix.Close(fd)
			return nil, waitError(ctx, dir)
		case <-t.C:
		}
		delay = min(2*delay, maxPoll)
	}
	return func() {
		// Unlock before closing: a child forked meanwhile shares the open
		// file description until its exec, and would otherwise keep the
		// mutex held until then.
		_ = unix.Flock(fd, unix.LOCK_UN)
		_ = unix.Close(fd)
	}, nil
}

func openMutex(p string) (int, error) {
	for {
		fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, filePerm)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return fd, err
	}
}

// waitError is the error of a ctx that ended before the mutex of p was
// taken: STORE_CONTENDED for a deadline, INTERRUPTED for a cancellation, with
// ctx.Err() in the chain for errors.Is.
func waitError(ctx context.Context, p string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errcode.Wrap(errcode.StoreContended, ctx.Err(), "gave up waiting for the mutex of %s", p)
	}
	return errcode.Wrap(errcode.Interrupted, ctx.Err(), "interrupted before taking the mutex of %s", p)
}

// readLease reads a lease record. A missing file is the zero record (exists
// false). A file that does not parse is INTERNAL naming the file, never the
// zero record: that would restart the token at 1 (see the package comment).
func readLease(p string) (info store.LeaseInfo, exists bool, err error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return store.LeaseInfo{}, false, nil
	}
	if err != nil {
		return store.LeaseInfo{}, false, fsError("read", p, err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return store.LeaseInfo{}, true, errcode.Wrap(errcode.Internal, err, "lease record %s is unreadable; it keeps the scope's fencing token, so restore it rather than delete it", p).With("path", p)
	}
	if info.Token < 0 || (info.Holder != "" && info.Token == 0) {
		return store.LeaseInfo{}, true, errcode.New(errcode.Internal, "lease record %s has an invalid token %d", p, info.Token).With("path", p)
	}
	return info, true, nil
}

func readReceipt(p string) (*receipt.Receipt, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("read", p, err)
	}
	r, err := receipt.Parse(b)
	if err != nil {
		var e *errcode.Error
		if errors.As(err, &e) {
			// Keep Parse's code and hint; say which file it was.
			return nil, (&errcode.Error{Code: e.Code, Message: p + ": " + e.Message, Hint: e.Hint, Err: e}).With("path", p)
		}
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "%s", p)
	}
	return r, nil
}

// writeJSON replaces dir/name with v as indented JSON, durably.
func writeJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode %s", name)
	}
	tmp, err := writeTemp(dir, name, append(b, '\n'))
	if err != nil {
		return err
	}
	if err := commit(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data to a new hidden temporary file beside dir/name and
// fsyncs it, so that the rename that publishes it can never publish an empty
// or partial document after a crash.
func writeTemp(dir, name string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return "", fsError("create a temporary file in", dir, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fsError("write", tmp, err)
	}
	return tmp, nil
}

// linkTemp gives the file tmp, just written with data, a second temporary
// name in dir, for a second target: the run's receipt and the scope's
// latest are the same bytes, so a receipt write writes and fsyncs them
// once (a checkpoint during a large apply is hundreds of kilobytes, and
// there are many). Each write makes a new file, so the two names never
// share a file that is changed later. Where the link fails (a file
// system without hard links, or the random name taken), it writes a copy.
func linkTemp(tmp, dir, name string, data []byte) (string, error) {
	link := filepath.Join(dir, "."+name+"."+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
	if err := os.Link(tmp, link); err == nil {
		return link, nil
	}
	return writeTemp(dir, name, data)
}

// commit renames tmp over target and fsyncs the directory, which makes the
// rename itself durable.
func commit(tmp, target string) error {
	if err := os.Rename(tmp, target); err != nil {
		return fsError("replace", target, err)
	}
	return syncDir(filepath.Dir(target))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fsError("open", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTSUP) {
		return fsError("sync", dir, err)
	}
	return nil
}

// ensureDir creates dir and its parents up to root, fsyncing each parent in
// which it created an entry, so a new scope directory survives a crash.
func ensureDir(dir, root string) error {
	err := os.Mkdir(dir, dirPerm)
	switch {
	case err == nil:
		return syncDir(filepath.Dir(dir))
	case errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, fs.ErrNotExist) && dir != root && filepath.Dir(dir) != dir:
		if err := ensureDir(filepath.Dir(dir), root); err != nil {
			return err
		}
		return ensureDir(dir, root)
	default:
		return fsError("create", dir, err)
	}
}

// fsError gives a filesystem failure its code: STORE_PERMISSION when access
// is refused, STORE_UNAVAILABLE otherwise (missing directory, full disk, I/O
// error). The message names the path; the cause stays in the chain.
func fsError(op, path string, err error) error {
	code := errcode.StoreUnavailable
	if errors.Is(err, fs.ErrPermission) {
		code = errcode.StorePermission
	}
	cause := err // the path is already in our message: drop it from the cause's
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		cause = pe.Err
	case errors.As(err, &le):
		cause = le.Err
	}
	e := errcode.New(code, "%s %s: %v", op, path, cause).With("path", path)
	e.Err = err
	return e
}
