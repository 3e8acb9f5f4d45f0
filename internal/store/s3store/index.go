package s3store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Reading an environment (Owners, List) never reads every scope: it lists
// the pointers (their ETags come with the listing) and reads only those
// whose ETag differs from what this process, or the cached index in the
// bucket, already holds. An entry is therefore exactly as fresh as a read
// of its pointer would be; the cache only saves the reads.
const (
	// fetchers is how many pointers are read at once.
	fetchers = 16
	// saveAfter is how many stale entries one read must have fetched
	// before it writes the cached index back for other processes.
	saveAfter = 4
)

// entry is one scope as the index caches it: the pointer as read with its
// ETag, the ownership part and the latest receipt it names.
type entry struct {
	ETag    string          `json:"etag"`
	Pointer pointer         `json:"pointer"`
	Owners  []store.Owner   `json:"owners,omitempty"`
	Receipt json.RawMessage `json:"receipt,omitempty"`
}

// indexDoc is the cached index of an environment as stored in the bucket.
type indexDoc struct {
	Version int               `json:"version"`
	Scopes  map[string]*entry `json:"scopes"`
}

const indexVersion = 1

// envCache is this process's copy of an environment's index.
type envCache struct {
	mu        sync.Mutex // one refresh at a time
	indexETag string     // of the stored index the entries were merged with
	scopes    map[string]*entry
}

func (s *Store) cacheOf(env string) *envCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.envs[env]
	if c == nil {
		c = &envCache{scopes: map[string]*entry{}}
		s.envs[env] = c
	}
	return c
}

// refresh brings env's cache up to date with the bucket and returns its
// entries by scope id. The caller must not change them.
func (s *Store) refresh(ctx context.Context, env string) (map[string]*entry, error) {
	c := s.cacheOf(env)
	c.mu.Lock()
	defer c.mu.Unlock()

	prefix := s.leasesPrefix(env)
	objs, err := s.list(ctx, prefix)
	if err != nil {
		return nil, err
	}
	want := map[string]string{} // scope id -> listed ETag
	for _, o := range objs {
		id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefix), ".json")
		if _, valid := keyOf(env, id); ok && valid {
			want[id] = o.ETag
		}
	}
	stale := func() []string {
		var out []string
		for id, etag := range want {
			if e := c.scopes[id]; e == nil || e.ETag != etag {
				out = append(out, id)
			}
		}
		return out
	}
	todo := stale()
	if len(todo) > saveAfter {
		// Cold or long unread: what another process cached may cover it.
		if err := s.mergeIndex(ctx, env, c); err != nil {
			return nil, err
		}
		todo = stale()
	}
	fetched, err := s.fetchEntries(ctx, env, c, todo)
	if err != nil {
		return nil, err
	}
	for id := range c.scopes {
		if _, ok := want[id]; !ok {
			delete(c.scopes, id)
		}
	}
	if fetched >= saveAfter {
		s.saveIndex(ctx, env, c)
	}
	return c.scopes, nil
}

// mergeIndex reads the stored index (unless it is the one already merged)
// and takes every entry newer than what the cache holds. A stored index
// that does not read is ignored: it is only a cache.
func (s *Store) mergeIndex(ctx context.Context, env string, c *envCache) error {
	o, err := s.getIfChanged(ctx, s.indexKey(env), c.indexETag)
	switch {
	case errors.Is(err, errNotModified):
		return nil
	case errors.Is(err, errNotFound):
		c.indexETag = ""
		return nil
	case err != nil:
		return err
	}
	var doc indexDoc
	zr, zerr := gzip.NewReader(bytes.NewReader(o.Data))
	if zerr != nil {
		return nil
	}
	if json.NewDecoder(zr).Decode(&doc) != nil || doc.Version != indexVersion {
		return nil
	}
	c.indexETag = o.ETag
	for id, e := range doc.Scopes {
		if e != nil {
			c.scopes[id] = e
		}
	}
	return nil
}

// saveIndex writes the cache back for other processes, conditionally on the
// stored index being the one merged, so two writers never interleave; a
// refused or failed write is ignored (a read-only credential, a race).
func (s *Store) saveIndex(ctx context.Context, env string, c *envCache) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if json.NewEncoder(zw).Encode(indexDoc{Version: indexVersion, Scopes: c.scopes}) != nil || zw.Close() != nil {
		return
	}
	data := buf.Bytes()
	etag, err := s.putIf(ctx, s.indexKey(env), data, c.indexETag, func(b []byte) bool { return bytes.Equal(b, data) })
	if err == nil {
		c.indexETag = etag
	}
}

// fetchEntries reads the pointers of ids, and the ownership parts and
// receipts they name where those changed, fetchers at a time.
func (s *Store) fetchEntries(ctx context.Context, env string, c *envCache, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	sort.Strings(ids)
	results := make([]*entry, len(ids))
	errs := make([]error, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(fetchers, len(ids)) {
		wg.Go(func() {
			for i := range next {
				k, _ := keyOf(env, ids[i])
				results[i], errs[i] = s.fetchEntry(ctx, k, c.scopes[ids[i]])
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	n := 0
	for i, id := range ids {
		if results[i] == nil {
			delete(c.scopes, id) // gone since the listing
			continue
		}
		c.scopes[id] = results[i]
		n++
	}
	return n, nil
}

// fetchEntry reads one scope's pointer and what it names, reusing the
// bodies of old where the pointer still names the same ones. nil when the
// pointer is gone. A body replaced between the reads makes it read again.
func (s *Store) fetchEntry(ctx context.Context, k store.Key, old *entry) (*entry, error) {
	for range 5 {
		o, err := s.get(ctx, s.pointerKey(k))
		if errors.Is(err, errNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		p, err := decodePointer(k, o.Data)
		if err != nil {
			return nil, err
		}
		e := &entry{ETag: o.ETag, Pointer: p}
		if old != nil && old.Pointer.Owners == p.Owners {
			e.Owners = old.Owners
		} else if p.Owners != "" {
			b, err := s.get(ctx, s.scopeDir(k)+p.Owners)
			if errors.Is(err, errNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			var doc ownersDoc
			if err := json.Unmarshal(b.Data, &doc); err != nil {
				return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "the ownership index %s does not parse", s.scopeDir(k)+p.Owners)
			}
			e.Owners = doc.Entries
		}
		if old != nil && old.Pointer.Receipt == p.Receipt {
			e.Receipt = old.Receipt
		} else if p.Receipt != "" {
			b, err := s.get(ctx, s.scopeDir(k)+p.Receipt)
			if errors.Is(err, errNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			e.Receipt = b.Data
		}
		return e, nil
	}
	return nil, errcode.New(errcode.StoreContended, "the pointer of %s kept moving while it was read", k)
}

// Owners returns the ledger entries of every scope of env whose identity is
// one of identities (all when nil), from the ownership parts the scopes'
// pointers name: each part is written before its pointer moves, in the same
// fenced step as the receipt.
func (s *Store) Owners(ctx context.Context, env string, identities []string) ([]store.Owner, error) {
	if err := store.CheckName("environment", env); err != nil {
		return nil, err
	}
	scopes, err := s.refresh(ctx, env)
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
	out := []store.Owner{}
	for _, e := range scopes {
		for _, o := range e.Owners {
			if want == nil || want[o.Identity] {
				out = append(out, o)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Scope < out[j].Scope })
	return out, nil
}

// List returns every scope of env that has a lease record or a receipt,
// sorted by scope name. A receipt that does not parse fails the listing.
func (s *Store) List(ctx context.Context, env string) ([]store.ScopeSummary, error) {
	if err := store.CheckName("environment", env); err != nil {
		return nil, err
	}
	scopes, err := s.refresh(ctx, env)
	if err != nil {
		return nil, err
	}
	out := []store.ScopeSummary{}
	for id, e := range scopes {
		k, _ := keyOf(env, id)
		sum := store.ScopeSummary{Key: k, Lease: e.Pointer.info()}
		if len(e.Receipt) > 0 {
			r, err := parseReceipt(s.scopeDir(k)+e.Pointer.Receipt, e.Receipt)
			if err != nil {
				return nil, err
			}
			sum.Latest = r
		}
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.Scope < out[j].Key.Scope })
	return out, nil
}
