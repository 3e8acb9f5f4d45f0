package gitstore

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The ownership index and the listing of an environment: every scope
// branch read with one ls-remote, one fetch and pipelined object reads.

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
		out, again, err := s.readEnvOnce(ctx, env, prefix, r)
		if err != nil || !again {
			return out, err
		}
	}
}

// readEnvOnce is one attempt of readEnv. again says to try again (the
// retrier allowed it: err is nil then); a branch that moved or vanished
// meanwhile is a race, any other failure a failure of the retrier's budget.
func (s *Store) readEnvOnce(ctx context.Context, env, prefix string, r *retrier) (out []scopeSnap, again bool, err error) {
	refs, err := s.lsRemote(ctx, prefix+"*")
	if err != nil {
		return nil, true, r.fail(err)
	}
	out = scopeBranches(refs, env, prefix)
	tips := make([]string, len(out))
	for i, sc := range out {
		tips[i] = sc.snap.tip
	}
	commits, err := s.cat.getMany(tips)
	if err != nil {
		return nil, false, err
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
				return nil, true, r.race() // a branch vanished since ls-remote
			}
			return nil, true, r.fail(err)
		}
		if commits, err = s.cat.getMany(tips); err != nil {
			return nil, false, err
		}
	}
	moved, err := s.readRoots(out, commits)
	if err != nil {
		return nil, false, err
	}
	if moved {
		return nil, true, r.race()
	}
	return out, false, nil
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

// ownersDoc is a scope's part of the ownership index, as in the file store.
type ownersDoc struct {
	RunID   string        `json:"runId"`
	Entries []store.Owner `json:"entries"`
}

// encodeOwners builds the index part of r; prev is the part it replaces,
// whose Since times are kept for the identities r still lists. It returns
// nil when prev already holds the part (store.SameOwners): the commit then
// leaves it as it is.
func encodeOwners(prev []byte, k store.Key, r *receipt.Receipt, now time.Time) ([]byte, error) {
	var old ownersDoc
	read := prev != nil && json.Unmarshal(prev, &old) == nil // an unreadable part only loses its Since times
	doc := ownersDoc{RunID: r.RunID, Entries: store.OwnersOf(k, r, old.Entries, now)}
	if read && store.SameOwners(old.Entries, doc.Entries) {
		return nil, nil
	}
	// Compact, unlike the documents people read: every foreign check
	// decodes the index part of every scope of the environment.
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "encode the ownership index of %s", k)
	}
	return append(b, '\n'), nil
}
