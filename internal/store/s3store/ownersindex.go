package s3store

import (
	"bufio"
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

func decodeOwnersIndex(data []byte) (ownersIndex, error) {
	var doc ownersIndex
	err := decodeIndex(data, func(r io.Reader) (err error) {
		doc, err = readOwnersIndex(bufio.NewReader(r))
		return err
	})
	return doc, err
}

func readOwnersIndex(r *bufio.Reader) (ownersIndex, error) {
	magic := make([]byte, len(ownersMagic))
	if _, err := io.ReadFull(r, magic); err != nil || (string(magic) != ownersMagic && string(magic) != ownersMagicLog) {
		return ownersIndex{}, errBadIndex
	}
	ir := &indexReader{r: r, buf: make([]byte, 0, 256)}
	var log logState
	if string(magic) == ownersMagicLog {
		log = ir.logState()
	}
	scopes := ir.count()
	if ir.err != nil {
		return ownersIndex{}, ir.err
	}
	doc := ownersIndex{Version: indexVersion, Scopes: make(map[string]ownersRow, scopes), Log: log}
	for range scopes {
		id := ir.str()
		row := ir.scopeRow()
		if ir.err != nil {
			return ownersIndex{}, ir.err
		}
		doc.Scopes[id] = row
	}
	return doc, nil
}

// indexReader reads the owners index's fields, keeping the first error:
// once one read failed every later one returns a zero value, and the
// caller checks err where a bad count would make it loop or allocate.
type indexReader struct {
	r   *bufio.Reader
	buf []byte
	err error
}

func (ir *indexReader) fail(err error) {
	if ir.err == nil {
		ir.err = err
	}
}

func (ir *indexReader) uv() uint64 {
	if ir.err != nil {
		return 0
	}
	n, err := binary.ReadUvarint(ir.r)
	ir.fail(err)
	return n
}

func (ir *indexReader) varint() int64 {
	if ir.err != nil {
		return 0
	}
	n, err := binary.ReadVarint(ir.r)
	ir.fail(err)
	return n
}

// count reads a length that the index bounds, so damage cannot make the
// reader loop or allocate without end.
func (ir *indexReader) count() uint64 {
	n := ir.uv()
	if n > 1<<24 {
		ir.fail(errBadIndex)
		return 0
	}
	return n
}

func (ir *indexReader) str() string {
	n := ir.uv()
	if n > maxString {
		ir.fail(errBadIndex)
	}
	if ir.err != nil {
		return ""
	}
	ir.buf = ir.buf[:n]
	if _, err := io.ReadFull(ir.r, ir.buf); err != nil {
		ir.fail(err)
		return ""
	}
	return string(ir.buf)
}

// logState reads the state of the ownership log an index of the second
// form is as of.
func (ir *indexReader) logState() logState {
	log := logState{ok: true, epoch: ir.str()}
	log.seq = ir.varint()
	n := ir.count()
	if ir.err == nil && log.epoch == "" {
		ir.fail(errBadIndex)
	}
	for range n {
		log.pending = append(log.pending, ir.str())
	}
	return log
}

// scopeRow reads one scope's row after its id.
func (ir *indexReader) scopeRow() ownersRow {
	row := ownersRow{ETag: ir.str(), Key: ir.str(), RunID: ir.str()}
	n := ir.count()
	if ir.err != nil {
		return row
	}
	row.Entries = make([]ownerRow, n)
	for i := range row.Entries {
		e := ownerRow{Identity: ir.str(), Address: ir.str(), CreatedBy: ir.str(), RunID: ir.str()}
		e.Since = ir.varint()
		row.Entries[i] = e
	}
	return row
}
