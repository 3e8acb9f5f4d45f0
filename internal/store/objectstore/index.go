package objectstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Reading an environment (Owners, List) never reads every scope: it lists
// the pointers (their ETags come with the listing) and reads only those
// whose ETag differs from what this process, or a cached index in the
// bucket, already holds. An entry is therefore exactly as fresh as a read
// of its pointer would be; the caches only save the reads.
//
// There are two cached indexes per environment, so that the foreign check
// (Owners, in every run) reads no receipts: <env>/.owners.bin.gz holds the
// ownership parts in a compact form, <env>/.index.json.gz the pointers and
// latest receipts for List.
const (
	// fetchers is how many pointers are read at once.
	fetchers = 16
	// saveAfter is how many stale entries one read must have fetched
	// before it writes a cached index back for other processes, and how
	// many make a read consult the cached index first.
	saveAfter = 4
)

// entry is one scope as this process caches it. ETag is the pointer's; what
// else is known is flagged, since an entry may come from either index.
type entry struct {
	ETag      string
	Pointer   *pointer // nil when known from the owners index only
	ownersOK  bool
	OwnersKey string
	Owners    ownedPart
	receiptOK bool
	// ReceiptKey is the body Receipt was read from.
	ReceiptKey string
	Receipt    json.RawMessage
}

// need is what a read of the environment needs of every scope.
type need struct{ owners, receipt bool }

func (e *entry) has(etag string, n need) bool {
	if e == nil || e.ETag != etag {
		return false
	}
	if n.owners && !e.ownersOK {
		return false
	}
	return !n.receipt || (e.Pointer != nil && e.receiptOK)
}

// ownersIndex is <env>/.owners.bin.gz (see encodeOwnersIndex): per scope id its pointer's ETag,
// the ownership part's key and run, and its entries.
type ownersIndex struct {
	Version int                  `json:"v"`
	Scopes  map[string]ownersRow `json:"s"`
	// Log is the state of the ownership log the rows are as of, when
	// they were read through it (not ok: as of their ETags).
	Log logState `json:"-"`
}

type ownersRow struct {
	ETag    string     `json:"e"`
	Key     string     `json:"k"`
	RunID   string     `json:"r"`
	Entries []ownerRow `json:"o"`
	// raw holds the n entries of a row read from a stored index, in its
	// encoding, instead of Entries (decodeOwnersIndex).
	raw []byte
	n   int
}

// ownedPart is a scope's ownership part as the cache holds it: decoded
// (entries), or as a row of the stored owners index holds it (raw, n
// entries of the row's run), decoded only where a read asks for them.
type ownedPart struct {
	entries []store.Owner
	raw     []byte
	n       int
	run     string
}

// each calls f with every entry of the part whose identity want holds
// (every entry when want is nil).
func (p ownedPart) each(want map[string]bool, f func(store.Owner)) {
	if p.raw == nil {
		for _, o := range p.entries {
			if want == nil || want[o.Identity] {
				f(o)
			}
		}
		return
	}
	eachRaw(p.raw, want, func(identity, address, createdBy, run []byte, since int64) {
		f(ownerRow{Identity: string(identity), Address: string(address), CreatedBy: string(createdBy), RunID: string(run), Since: since}.owner(p.run))
	})
}

// row is the part as a row of the stored owners index: as it was read
// when it came from one, else encoded with the run of its first entry
// written once for the row and again only in an entry another run wrote.
func (p ownedPart) row(etag, key string) ownersRow {
	if p.raw != nil {
		return ownersRow{ETag: etag, Key: key, RunID: p.run, raw: p.raw, n: p.n}
	}
	row := ownersRow{ETag: etag, Key: key, Entries: make([]ownerRow, len(p.entries))}
	if len(p.entries) > 0 {
		row.RunID = p.entries[0].RunID
	}
	for i, o := range p.entries {
		r := ownerRow{Identity: o.Identity, Address: o.Address, CreatedBy: o.CreatedBy, Since: o.Since.UnixNano()}
		if o.RunID != row.RunID {
			r.RunID = o.RunID
		}
		row.Entries[i] = r
	}
	return row
}

// owner is the entry of a row whose run is run.
func (r ownerRow) owner(run string) store.Owner {
	if r.RunID != "" {
		run = r.RunID
	}
	return store.Owner{Identity: r.Identity, Address: r.Address, CreatedBy: r.CreatedBy, RunID: run, Since: time.Unix(0, r.Since).UTC()}
}

type ownerRow struct {
	Identity  string `json:"i"`
	Address   string `json:"a"`
	CreatedBy string `json:"c"`
	RunID     string `json:"r,omitempty"` // when not the row's
	Since     int64  `json:"t"`           // Unix nanoseconds
}

// listIndex is <env>/.index.json.gz: per scope id its pointer and latest
// receipt.
type listIndex struct {
	Version int                `json:"version"`
	Scopes  map[string]listRow `json:"scopes"`
}

type listRow struct {
	ETag    string          `json:"etag"`
	Pointer pointer         `json:"pointer"`
	Receipt json.RawMessage `json:"receipt,omitempty"`
}

const indexVersion = 1

// envCache is this process's copy of an environment's index.
type envCache struct {
	mu     sync.Mutex        // one refresh at a time
	etags  map[string]string // of the stored indexes last merged, by object key
	scopes map[string]*entry
	log    logState // of the last refresh through the ownership log
}

func (s *Store) cacheOf(env string) *envCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.envs[env]
	if c == nil {
		c = &envCache{etags: map[string]string{}, scopes: map[string]*entry{}}
		s.envs[env] = c
	}
	return c
}

func (s *Store) ownersIndexKey(env string) string { return s.prefix + env + "/.owners.bin.gz" }
func (s *Store) listIndexKey(env string) string   { return s.prefix + env + "/.index.json.gz" }

// refresh brings env's cache up to date with the bucket for what n needs
// and calls read with its entries by scope id, under the cache's lock.
func (s *Store) refresh(ctx context.Context, env string, n need, read func(map[string]*entry) error) error {
	c := s.cacheOf(env)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.owners && !n.receipt && s.objects.Logged() {
		return s.refreshByLog(ctx, env, c, n, read)
	}
	fetched, err := s.refreshByListing(ctx, env, c, n)
	if err != nil {
		return err
	}
	if fetched >= saveAfter {
		s.saveIndex(ctx, env, c, n)
	}
	return read(c.scopes)
}

// refreshByLog brings the ownership parts of env's cache up to date through
// the ownership log (changelog.go): one conditional GET of the log, then
// the pointers of the scopes changed since the cache last read it, pending
// then or now, or not yet known with their ownership part. A cache that
// never read the log, or that the log no longer reaches back to, starts
// from the stored owners index when that is as of a state of the log the
// log reaches back from, and else lists the environment (after reading
// the log, so the listing is as fresh as the log's state).
func (s *Store) refreshByLog(ctx context.Context, env string, c *envCache, n need, read func(map[string]*entry) error) error {
	var index <-chan gotten
	if !c.log.ok {
		// A cold cache starts from the stored index: it is read while
		// the log is (loggedIndex checks it against the log either way).
		index = s.getAsync(ctx, s.ownersIndexKey(env))
	}
	lr, err := s.readLog(ctx, env, c)
	if err != nil {
		return err
	}
	base, changed := c.log, lr.changed
	listed, fetched := false, 0
	if !base.ok || !lr.covered || lr.doc.Epoch != base.epoch {
		// Cold, or too far behind: the stored index, if it is as of a
		// state of this log that the log still reaches back from; else
		// the listing.
		if index == nil {
			index = s.getAsync(ctx, s.ownersIndexKey(env))
		}
		idx, err := s.loggedIndex(c, lr.doc, <-index)
		if err != nil {
			return err
		}
		if idx.ok {
			base = idx
			changed, _ = lr.doc.since(idx.seq)
		} else {
			if fetched, err = s.refreshByListing(ctx, env, c, n); err != nil {
				return err
			}
			listed = true
		}
	}
	if !listed {
		todo := logTodo(env, c, changed, base.pending, lr.next.pending)
		if fetched, err = s.fetchEntries(ctx, env, c, todo, n); err != nil {
			return err
		}
	}
	c.log = lr.next
	if listed || fetched >= saveAfter {
		s.saveIndex(ctx, env, c, n)
	}
	return read(c.scopes)
}

// logRead is what one conditional GET of the ownership log tells a cache:
// the log (only its Seq and Epoch when it had not changed), the scopes
// changed since the cache last read it, whether the log still reaches back
// that far (covered), and the log state the cache is as of once it has
// read them (next).
type logRead struct {
	doc     ownersLog
	changed []string
	covered bool
	next    logState
}

// readLog reads env's ownership log, conditional on the ETag c last read
// it with.
func (s *Store) readLog(ctx context.Context, env string, c *envCache) (logRead, error) {
	etag := ""
	if c.log.ok {
		etag = c.log.etag
	}
	o, err := s.objects.GetIfChanged(ctx, s.ownersLogKey(env), etag)
	switch {
	case errors.Is(err, ErrNotModified):
		doc := ownersLog{Seq: c.log.seq, Epoch: c.log.epoch}
		next := logState{ok: true, etag: c.log.etag, epoch: doc.Epoch, seq: doc.Seq, pending: c.log.pending}
		return logRead{doc: doc, covered: true, next: next}, nil
	case errors.Is(err, ErrNotFound):
		// No ownership write yet (a log's first write precedes its
		// pointer's): what the listing finds is all there is.
	case err != nil:
		return logRead{}, err
	}
	var doc ownersLog
	if err == nil {
		if err := json.Unmarshal(o.Data, &doc); err != nil {
			return logRead{}, errcode.Wrap(errcode.StoreUnavailable, err, "the ownership log %s does not parse; delete it (readers then list the environment)", s.ownersLogKey(env)).With("store", s.display)
		}
	}
	changed, covered := doc.since(c.log.seq)
	next := logState{ok: true, etag: o.ETag, epoch: doc.Epoch, seq: doc.Seq, pending: pendingScopes(doc)}
	return logRead{doc: doc, changed: changed, covered: covered, next: next}, nil
}

// logTodo lists, once each, the scopes of env whose pointers a cache read
// through the log must read again: those changed since, those pending at
// the last read or now, and those whose ownership part it does not hold.
func logTodo(env string, c *envCache, lists ...[]string) []string {
	var todo []string
	seen := map[string]bool{}
	add := func(id string) {
		if _, ok := keyOf(env, id); ok && !seen[id] {
			seen[id] = true
			todo = append(todo, id)
		}
	}
	for _, ids := range lists {
		for _, id := range ids {
			add(id)
		}
	}
	for id, e := range c.scopes {
		if !e.ownersOK {
			add(id)
		}
	}
	return todo
}

// refreshByListing brings env's cache up to date with a listing of its
// pointers, for what n needs.
func (s *Store) refreshByListing(ctx context.Context, env string, c *envCache, n need) (fetched int, err error) {
	prefix := s.leasesPrefix(env)
	objs, err := s.objects.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	want := map[string]string{} // scope id -> listed ETag
	for _, o := range objs {
		id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefix), ".json")
		if _, valid := keyOf(env, id); ok && valid {
			want[id] = o.ETag
		}
	}
	for id := range c.scopes {
		if _, ok := want[id]; !ok {
			delete(c.scopes, id)
		}
	}
	stale := func() []string {
		var out []string
		for id, etag := range want {
			if !c.scopes[id].has(etag, n) {
				out = append(out, id)
			}
		}
		return out
	}
	todo := stale()
	if len(todo) > saveAfter {
		// Cold or long unread: what another process cached may cover it.
		if err := s.mergeIndex(ctx, env, c, n, want); err != nil {
			return 0, err
		}
		todo = stale()
	}
	return s.fetchEntries(ctx, env, c, todo, n)
}

// gotten is the outcome of a GET made in the background.
type gotten struct {
	key string
	o   Object
	err error
}

// getAsync GETs key in the background; the channel holds the outcome once.
func (s *Store) getAsync(ctx context.Context, key string) <-chan gotten {
	out := make(chan gotten, 1)
	go func() {
		o, err := s.objects.Get(ctx, key)
		out <- gotten{key: key, o: o, err: err}
	}()
	return out
}

// loggedIndex takes every row of the stored owners index (got, read before
// or after doc: an index newer than doc does not match it) if it is as of a
// state of the log doc that doc still reaches back from, and returns that
// state (not ok when it is not, or there is no such index).
func (s *Store) loggedIndex(c *envCache, doc ownersLog, got gotten) (logState, error) {
	key, o, err := got.key, got.o, got.err
	switch {
	case errors.Is(err, ErrNotFound):
		return logState{}, nil
	case err != nil:
		return logState{}, err
	}
	idx, err := decodeOwnersIndex(o.Data)
	if err != nil || !idx.Log.ok || idx.Log.epoch != doc.Epoch {
		return logState{}, nil //nolint:nilerr // a damaged cache is no cache
	}
	if _, ok := doc.since(idx.Log.seq); !ok {
		return logState{}, nil
	}
	c.takeOwners(idx, nil)
	c.etags[key] = o.ETag
	return idx.Log, nil
}

// mergeIndex reads the stored index n needs (unless it is the one already
// merged) and takes every row whose ETag is the listed one. A stored index
// that does not read is ignored: it is only a cache.
func (s *Store) mergeIndex(ctx context.Context, env string, c *envCache, n need, want map[string]string) error {
	key := s.ownersIndexKey(env)
	if n.receipt {
		key = s.listIndexKey(env)
	}
	o, err := s.objects.GetIfChanged(ctx, key, c.etags[key])
	switch {
	case errors.Is(err, ErrNotModified):
		return nil
	case errors.Is(err, ErrNotFound):
		delete(c.etags, key)
		return nil
	case err != nil:
		return err
	}
	if n.receipt {
		var doc listIndex
		err := decodeIndex(o.Data, func(r io.Reader) error { return json.NewDecoder(r).Decode(&doc) })
		if err != nil || doc.Version != indexVersion {
			return nil //nolint:nilerr // a damaged cache is no cache
		}
		c.takeList(doc, want)
	} else {
		doc, err := decodeOwnersIndex(o.Data)
		if err != nil {
			return nil //nolint:nilerr // a damaged cache is no cache
		}
		c.takeOwners(doc, want)
	}
	c.etags[key] = o.ETag
	return nil
}

// entryFor is the cached entry of scope id at its pointer's etag: the one
// held when it has that ETag, else a new empty one in its place.
func (c *envCache) entryFor(id, etag string) *entry {
	e := c.scopes[id]
	if e == nil || e.ETag != etag {
		e = &entry{ETag: etag}
		c.scopes[id] = e
	}
	return e
}

// takeList takes the pointer and receipt of every row of a list index
// whose ETag is the listed one.
func (c *envCache) takeList(doc listIndex, want map[string]string) {
	for id, row := range doc.Scopes {
		if want[id] == row.ETag {
			e, p := c.entryFor(id, row.ETag), row.Pointer
			e.Pointer, e.receiptOK, e.ReceiptKey, e.Receipt = &p, true, p.Receipt, row.Receipt
		}
	}
}

// takeOwners takes the ownership part of every row of an owners index
// whose ETag is the listed one, or of every row when want is nil (an index
// as of a state of the ownership log).
func (c *envCache) takeOwners(doc ownersIndex, want map[string]string) {
	for id, row := range doc.Scopes {
		if want != nil && want[id] != row.ETag {
			continue
		}
		part := ownedPart{raw: row.raw, n: row.n, run: row.RunID}
		if row.raw == nil {
			part = ownedPart{entries: make([]store.Owner, len(row.Entries))}
			for i, r := range row.Entries {
				part.entries[i] = r.owner(row.RunID)
			}
		}
		e := c.entryFor(id, row.ETag)
		e.ownersOK, e.OwnersKey, e.Owners = true, row.Key, part
	}
}

// listIndex is the list index of what the cache knows.
func (c *envCache) listIndex() listIndex {
	doc := listIndex{Version: indexVersion, Scopes: map[string]listRow{}}
	for id, e := range c.scopes {
		if e.Pointer != nil && e.receiptOK {
			doc.Scopes[id] = listRow{ETag: e.ETag, Pointer: *e.Pointer, Receipt: e.Receipt}
		}
	}
	return doc
}

// ownersIndex is the owners index of what the cache knows: a scope's run
// once per row, and again only in an entry another run wrote; the state of
// the ownership log the cache was last brought up to date with, if any.
func (c *envCache) ownersIndex() ownersIndex {
	doc := ownersIndex{Version: indexVersion, Scopes: map[string]ownersRow{}}
	if c.log.ok && c.log.epoch != "" {
		doc.Log = logState{ok: true, epoch: c.log.epoch, seq: c.log.seq, pending: c.log.pending}
	}
	for id, e := range c.scopes {
		if !e.ownersOK {
			continue
		}
		doc.Scopes[id] = e.Owners.row(e.ETag, e.OwnersKey)
	}
	return doc
}

// encodeIndex writes a stored index: what write writes, gzipped for speed
// rather than size (an index is written again whenever a read had to fetch
// several entries). The list index is JSON in it, the owners index its
// binary form (encodeOwnersIndex).
func encodeIndex(write func(io.Writer) error) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := write(zw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeIndex reads a stored index that encodeIndex wrote: read gets the
// uncompressed stream.
func decodeIndex(data []byte, read func(io.Reader) error) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return read(zr)
}

// saveIndex writes the stored index n needs back from the cache, for other
// processes, conditionally on it being the one last merged, so two writers
// never interleave; a refused or failed write is ignored (a read-only
// credential, a race).
func (s *Store) saveIndex(ctx context.Context, env string, c *envCache, n need) {
	key := s.ownersIndexKey(env)
	var data []byte
	var err error
	if n.receipt {
		key = s.listIndexKey(env)
		doc := c.listIndex()
		data, err = encodeIndex(func(w io.Writer) error { return json.NewEncoder(w).Encode(doc) })
	} else {
		data, err = encodeOwnersIndex(c.ownersIndex())
	}
	if err != nil {
		return
	}
	etag, err := s.objects.PutIf(ctx, key, data, c.etags[key], func(b []byte) bool { return bytes.Equal(b, data) })
	if err == nil {
		c.etags[key] = etag
	}
}

// fetchEntries reads the pointers of ids, and what n needs of what they
// name where that changed, fetchers at a time.
func (s *Store) fetchEntries(ctx context.Context, env string, c *envCache, ids []string, n need) (int, error) {
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
				results[i], errs[i] = s.fetchEntry(ctx, k, c.scopes[ids[i]], n)
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
	fetched := 0
	for i, id := range ids {
		if results[i] == nil {
			delete(c.scopes, id) // gone since the listing
			continue
		}
		c.scopes[id] = results[i]
		fetched++
	}
	return fetched, nil
}

// fetchEntry reads one scope's pointer and what n needs of what it names,
// reusing what old already holds of the same bodies. nil when the pointer
// is gone. A body replaced between the reads makes it read again.
func (s *Store) fetchEntry(ctx context.Context, k store.Key, old *entry, n need) (*entry, error) {
	for range 5 {
		o, err := s.objects.Get(ctx, s.pointerKey(k))
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		p, err := decodePointer(k, o.Data)
		if err != nil {
			return nil, err
		}
		if e, err := s.entryOf(ctx, k, o.ETag, p, old, n); e != nil || err != nil {
			return e, err
		}
	}
	return nil, errcode.New(errcode.StoreContended, "the pointer of %s kept moving while it was read", k)
}

// entryOf is the entry of pointer p (whose ETag is etag) with what n needs
// of the bodies it names, taken from old where old holds the same body. nil
// when a body is gone: the pointer moved on after it was read.
func (s *Store) entryOf(ctx context.Context, k store.Key, etag string, p pointer, old *entry, n need) (*entry, error) {
	e := &entry{ETag: etag, Pointer: &p}
	switch {
	case old != nil && old.ownersOK && old.OwnersKey == p.Owners:
		e.ownersOK, e.OwnersKey, e.Owners = true, p.Owners, old.Owners
	case p.Owners == "":
		e.ownersOK = true
	case n.owners:
		data, found, err := s.body(ctx, k, p.Owners)
		if !found || err != nil {
			return nil, err
		}
		var doc ownersDoc
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "the ownership index %s does not parse", s.scopeDir(k)+p.Owners)
		}
		e.ownersOK, e.OwnersKey, e.Owners = true, p.Owners, ownedPart{entries: doc.Entries}
	}
	switch {
	case old != nil && old.receiptOK && old.ReceiptKey == p.Receipt:
		e.receiptOK, e.ReceiptKey, e.Receipt = true, p.Receipt, old.Receipt
	case p.Receipt == "":
		e.receiptOK = true
	case n.receipt:
		data, found, err := s.body(ctx, k, p.Receipt)
		if !found || err != nil {
			return nil, err
		}
		e.receiptOK, e.ReceiptKey, e.Receipt = true, p.Receipt, data
	}
	return e, nil
}

// body reads the body name of k's scope; found is false when it is gone.
func (s *Store) body(ctx context.Context, k store.Key, name string) (data []byte, found bool, err error) {
	b, err := s.objects.Get(ctx, s.scopeDir(k)+name)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b.Data, true, nil
}

// Owners returns the ledger entries of every scope of env whose identity is
// one of identities (all when nil), from the ownership parts the scopes'
// pointers name: each part is written before its pointer moves, in the same
// fenced step as the receipt.
func (s *Store) Owners(ctx context.Context, env string, identities []string) ([]store.Owner, error) {
	if err := s.objects.Ready(ctx, false); err != nil {
		return nil, err
	}
	if err := store.CheckName("environment", env); err != nil {
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
	err := s.refresh(ctx, env, need{owners: true}, func(scopes map[string]*entry) error {
		for id, e := range scopes {
			var k *store.Key // only for a scope with a match: keyOf checks the names
			e.Owners.each(want, func(o store.Owner) {
				if k == nil {
					kk, _ := keyOf(env, id)
					k = &kk
				}
				// The pointer names the stack and scope: an entry
				// cannot claim another's.
				o.Stack, o.Scope = k.Stack, k.Scope
				out = append(out, o)
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Stack != out[j].Stack {
			return out[i].Stack < out[j].Stack
		}
		return out[i].Scope < out[j].Scope
	})
	return out, nil
}

// List returns every scope of env that has a lease record or a receipt,
// sorted by scope name. A receipt that does not parse fails the listing.
func (s *Store) List(ctx context.Context, env string) ([]store.ScopeSummary, error) {
	if err := s.objects.Ready(ctx, false); err != nil {
		return nil, err
	}
	if err := store.CheckName("environment", env); err != nil {
		return nil, err
	}
	out := []store.ScopeSummary{}
	err := s.refresh(ctx, env, need{receipt: true}, func(scopes map[string]*entry) error {
		for id, e := range scopes {
			k, _ := keyOf(env, id)
			sum := store.ScopeSummary{Key: k, Lease: e.Pointer.info()}
			if len(e.Receipt) > 0 {
				r, err := parseReceipt(s.scopeDir(k)+e.ReceiptKey, e.Receipt)
				if err != nil {
					return err
				}
				sum.Latest = r
			}
			out = append(out, sum)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key.Stack != out[j].Key.Stack {
			return out[i].Key.Stack < out[j].Key.Stack
		}
		return out[i].Key.Scope < out[j].Key.Scope
	})
	return out, nil
}
