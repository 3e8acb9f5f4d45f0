package objectstore

import (
	"bytes"
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/statecrypt"
)

var _ Bucket = (*memBucket)(nil)

// memBucket is a Bucket in memory for the tests of this package: versions
// are counters, the server's clock is now (to the second, as an HTTP Date),
// and every condition holds as on a conforming server. The stores' own
// tests run the Store over their emulators.
type memBucket struct {
	now    func() time.Time
	layout int // Logged from 3

	mu   sync.Mutex
	seq  int
	objs map[string]memObject
}

type memObject struct {
	data []byte
	etag string
	at   time.Time
}

func newMemBucket(now func() time.Time) *memBucket {
	if now == nil {
		now = time.Now
	}
	return &memBucket{now: now, layout: 3, objs: map[string]memObject{}}
}

func (m *memBucket) date() time.Time { return m.now().UTC().Truncate(time.Second) }

func (m *memBucket) Get(ctx context.Context, key string) (Object, error) {
	return m.GetIfChanged(ctx, key, "")
}

func (m *memBucket) GetIfChanged(_ context.Context, key, etag string) (Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	switch {
	case !ok:
		return Object{Date: m.date()}, ErrNotFound
	case etag != "" && o.etag == etag:
		return Object{}, ErrNotModified
	}
	return Object{Data: bytes.Clone(o.data), ETag: o.etag, Date: m.date(), At: o.at}, nil
}

func (m *memBucket) List(_ context.Context, prefix string) ([]Listed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Listed
	for k, o := range m.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, Listed{Key: k, ETag: o.etag, At: o.at})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *memBucket) Put(ctx context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write(key, data)
	return nil
}

func (m *memBucket) PutIf(_ context.Context, key string, data []byte, ifMatch string, _ func([]byte) bool) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if (ifMatch == "" && ok) || (ifMatch != "" && (!ok || o.etag != ifMatch)) {
		return "", ErrPrecondition
	}
	return m.write(key, data), nil
}

func (m *memBucket) write(key string, data []byte) string {
	m.seq++
	etag := strconv.Itoa(m.seq)
	m.objs[key] = memObject{data: bytes.Clone(data), etag: etag, at: m.date()}
	return etag
}

func (m *memBucket) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, key)
	return nil
}

// objects is every object under prefix, by its key without the prefix.
func (m *memBucket) objects(prefix string) map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for k, o := range m.objs {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = o.data
		}
	}
	return out
}

func (m *memBucket) Ready(context.Context, bool) error { return nil }
func (m *memBucket) Logged() bool                      { return m.layout >= 3 }

var key32 = bytes.Repeat([]byte{7}, 32)

var k1 = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}

// open is a Store over m under the prefix p/, sealing state, with the
// changes edits make to its Config.
func open(t *testing.T, m *memBucket, edits ...func(*Config)) *Store {
	t.Helper()
	cfg := Config{
		Name: "test", Scheme: "mem", Bucket: "b", Prefix: "p/", Display: "mem://b/p/",
		StateKey: key32, Hints: statecrypt.Hints{Key: "set the key"}, Budget: 5 * time.Second, Now: m.now,
	}
	for _, e := range edits {
		e(&cfg)
	}
	s, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
