package objectstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
)

// The owners index is read by every run's foreign check, at 1,000 scopes ×
// 50 resources 50,000 entries: JSON took hundreds of milliseconds to decode
// there, so it has a compact binary form of its own, gzipped:
//
//	magic, [log state,] uvarint scopes, then per scope: id, etag, key, run,
//	uvarint n, then per entry: identity, address, createdBy, run ("" for
//	the scope's), varint since (Unix nanoseconds)
//
// where every string is a uvarint length and its bytes. The second form
// (ownersMagicLog) is the state of the ownership log the index is as of
// (changelog.go): epoch, varint seq, uvarint n, then n pending scope ids;
// a reader of a logged prefix takes such an index whole and reads only the
// scopes the log names since. An index of the first form is as of the
// ETags in its rows, which a listing validates.
const (
	ownersMagic    = "sponson-owners/1\n"
	ownersMagicLog = "sponson-owners/2\n"
)

func encodeOwnersIndex(doc ownersIndex) ([]byte, error) {
	return encodeIndex(func(zw io.Writer) error {
		// bufio.Writer keeps its first error and Flush returns it.
		w := bufio.NewWriter(zw)
		var tmp [binary.MaxVarintLen64]byte
		uv := func(n uint64) { _, _ = w.Write(tmp[:binary.PutUvarint(tmp[:], n)]) }
		str := func(s string) { uv(uint64(len(s))); _, _ = w.WriteString(s) }
		if doc.Log.ok {
			_, _ = w.WriteString(ownersMagicLog)
			str(doc.Log.epoch)
			_, _ = w.Write(tmp[:binary.PutVarint(tmp[:], doc.Log.seq)])
			uv(uint64(len(doc.Log.pending)))
			for _, id := range doc.Log.pending {
				str(id)
			}
		} else {
			_, _ = w.WriteString(ownersMagic)
		}
		uv(uint64(len(doc.Scopes)))
		for id, row := range doc.Scopes {
			str(id)
			str(row.ETag)
			str(row.Key)
			str(row.RunID)
			if row.raw != nil {
				// As it was read: the same encoding.
				uv(uint64(row.n))
				_, _ = w.Write(row.raw)
				continue
			}
			uv(uint64(len(row.Entries)))
			for _, e := range row.Entries {
				str(e.Identity)
				str(e.Address)
				str(e.CreatedBy)
				str(e.RunID)
				_, _ = w.Write(tmp[:binary.PutVarint(tmp[:], e.Since)])
			}
		}
		return w.Flush()
	})
}

var errBadIndex = errors.New("not an owners index")

// maxString bounds one string of the index, so damage cannot make the
// reader allocate without end.
const maxString = 1 << 20

// decodeOwnersIndex reads an index whole and checks every field of it, but
// keeps each row's entries in their encoding (ownersRow.raw): a cold
// foreign check at 10,000 scopes × 50 resources decoded 500,000 entries
// into strings to use the fifty it asked for (docs/design.md §8).
func decodeOwnersIndex(data []byte) (ownersIndex, error) {
	var doc ownersIndex
	err := decodeIndex(data, func(r io.Reader) error {
		// Room for the last read, which finds the end: a full buffer would
		// grow to twice its size for it.
		plain := bytes.NewBuffer(make([]byte, 0, plainSize(data)+bytes.MinRead))
		if _, err := plain.ReadFrom(r); err != nil {
			return err
		}
		var err error
		doc, err = readOwnersIndex(plain.Bytes())
		return err
	})
	return doc, err
}

// plainSize is the size gzip data says its plain bytes have (its trailer's
// ISIZE), bounded so that damage cannot make the reader allocate without
// end: growing the buffer as it reads cleared and copied hundreds of
// megabytes for an index of tens.
func plainSize(data []byte) int {
	if len(data) < 18 {
		return 0
	}
	return min(int(binary.LittleEndian.Uint32(data[len(data)-4:])), 1<<28)
}

func readOwnersIndex(plain []byte) (ownersIndex, error) {
	magic, rest, _ := bytes.Cut(plain, []byte("\n"))
	m := string(magic) + "\n"
	if m != ownersMagic && m != ownersMagicLog {
		return ownersIndex{}, errBadIndex
	}
	c := &cursor{b: rest}
	var log logState
	if m == ownersMagicLog {
		log = c.logState()
	}
	scopes := c.count()
	if c.err != nil {
		return ownersIndex{}, c.err
	}
	doc := ownersIndex{Version: indexVersion, Scopes: make(map[string]ownersRow, scopes), Log: log}
	for range scopes {
		id := c.str()
		row := c.scopeRow()
		if c.err != nil {
			return ownersIndex{}, c.err
		}
		doc.Scopes[id] = row
	}
	if len(c.b) != 0 {
		return ownersIndex{}, errBadIndex
	}
	return doc, nil
}

// cursor reads the owners index's fields from its plain bytes, keeping the
// first error: once one read failed every later one returns a zero value,
// and the caller checks err where a bad count would make it loop or
// allocate.
type cursor struct {
	b   []byte
	err error
}

func (c *cursor) fail() {
	if c.err == nil {
		c.err = errBadIndex
	}
	c.b = nil
}

func (c *cursor) uv() uint64 {
	n, k := binary.Uvarint(c.b)
	if k <= 0 {
		c.fail()
		return 0
	}
	c.b = c.b[k:]
	return n
}

func (c *cursor) varint() int64 {
	n, k := binary.Varint(c.b)
	if k <= 0 {
		c.fail()
		return 0
	}
	c.b = c.b[k:]
	return n
}

// count reads a length that the index bounds, so damage cannot make the
// reader loop or allocate without end.
func (c *cursor) count() uint64 {
	n := c.uv()
	if n > 1<<24 {
		c.fail()
		return 0
	}
	return n
}

// field reads one string's bytes, without copying them.
func (c *cursor) field() []byte {
	n := c.uv()
	if n > maxString || n > uint64(len(c.b)) {
		c.fail()
	}
	if c.err != nil {
		return nil
	}
	f := c.b[:n:n]
	c.b = c.b[n:]
	return f
}

func (c *cursor) str() string { return string(c.field()) }

// logState reads the state of the ownership log an index of the second
// form is as of.
func (c *cursor) logState() logState {
	log := logState{ok: true, epoch: c.str()}
	log.seq = c.varint()
	n := c.count()
	if c.err == nil && log.epoch == "" {
		c.fail()
	}
	for range n {
		log.pending = append(log.pending, c.str())
	}
	return log
}

// scopeRow reads one scope's row after its id, its entries checked and
// kept in their encoding.
func (c *cursor) scopeRow() ownersRow {
	row := ownersRow{ETag: c.str(), Key: c.str(), RunID: c.str()}
	n := c.count()
	start := c.b
	for range n {
		c.entry()
	}
	if c.err != nil {
		return row
	}
	row.raw, row.n = start[:len(start)-len(c.b):len(start)-len(c.b)], int(n)
	return row
}

// entry reads one entry's fields, without copying them.
func (c *cursor) entry() (identity, address, createdBy, run []byte, since int64) {
	identity, address, createdBy, run = c.field(), c.field(), c.field(), c.field()
	return identity, address, createdBy, run, c.varint()
}

// eachRaw calls f with every entry of raw, an ownersRow's encoded entries
// (checked when they were read), whose identity want holds (every one when
// want is nil); the bytes are raw's own, valid for the call only unless
// copied.
func eachRaw(raw []byte, want map[string]bool, f func(identity, address, createdBy, run []byte, since int64)) {
	c := &cursor{b: raw}
	for len(c.b) > 0 && c.err == nil {
		identity, address, createdBy, run, since := c.entry()
		if c.err == nil && (want == nil || want[string(identity)]) {
			f(identity, address, createdBy, run, since)
		}
	}
}
