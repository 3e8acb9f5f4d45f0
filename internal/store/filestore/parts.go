package filestore

import (
	"bytes"
	"encoding/json"
	"os"
	"sync"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// partCacheBytes is how many bytes of part files a Store keeps parsed: a
// scope of 10,000 resources has a part of about 2.6 MB, so a run's own part
// and its neighbours' fit, while an environment of 10,000 small scopes is
// not held in memory whole.
const partCacheBytes = 32 << 20

// partCache keeps the ownership-index parts a Store read or wrote, parsed.
// A run reads every part of its environment twice (the schemes in use, then
// the foreign check) and its own part again at each receipt write; at
// 10,000 resources each parse of that part cost about 50 ms of sponson's
// own CPU (docs/design.md §8).
//
// An entry answers for the bytes it was parsed from and for no others: a
// part is read whole each time and compared with them, which costs a
// fraction of a millisecond per megabyte. File times and inode numbers
// would not do: the kernel's file times move by clock ticks, and a freed
// inode number is given to the next file, so a part replaced twice within
// one tick could look unchanged.
type partCache struct {
	mu    sync.Mutex
	used  int64
	parts map[string]cachedPart
}

type cachedPart struct {
	data []byte
	doc  ownersDoc
}

func (c *partCache) get(path string, data []byte) (ownersDoc, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.parts[path]
	if !ok || !bytes.Equal(p.data, data) {
		return ownersDoc{}, false
	}
	return p.doc, true
}

// put keeps doc as the part at path, parsed from data, in place of any
// part the path held, and drops other parts as the budget needs: the part
// read or written last is the one a run reads next (its own, at its next
// receipt write). A part larger than the budget is not kept. The caller
// hands data and doc over: neither changes after.
func (c *partCache) put(path string, data []byte, doc ownersDoc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(path)
	if int64(len(data)) > partCacheBytes {
		return
	}
	for other := range c.parts {
		if c.used+int64(len(data)) <= partCacheBytes {
			break
		}
		c.drop(other)
	}
	if c.parts == nil {
		c.parts = map[string]cachedPart{}
	}
	c.used += int64(len(data))
	c.parts[path] = cachedPart{data: data, doc: doc}
}

func (c *partCache) drop(path string) {
	if old, ok := c.parts[path]; ok {
		c.used -= int64(len(old.data))
		delete(c.parts, path)
	}
}

// readPart returns the part at path, parsed once per content. A part that
// cannot be read is a store error (fsError), one that does not parse
// RECEIPT_CORRUPT. The entries returned are shared: callers copy an entry
// before changing it.
func (s *Store) readPart(path string) (ownersDoc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return ownersDoc{}, fsError("read", path, err)
	}
	if doc, ok := s.parts.get(path, data); ok {
		return doc, nil
	}
	var doc ownersDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return ownersDoc{}, errcode.Wrap(errcode.ReceiptCorrupt, err, "the ownership index %s does not parse", path)
	}
	s.parts.put(path, data, doc)
	return doc, nil
}
