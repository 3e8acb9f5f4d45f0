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
	var rerr error
	uv := func() uint64 {
		n, err := binary.ReadUvarint(r)
		if err != nil && rerr == nil {
			rerr = err
		}
		return n
	}
	buf := make([]byte, 0, 256)
	str := func() string {
		n := uv()
		if rerr != nil || n > maxString {
			if rerr == nil {
				rerr = errBadIndex
			}
			return ""
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			rerr = err
			return ""
		}
		return string(buf)
	}
	var log logState
	if string(magic) == ownersMagicLog {
		log.ok, log.epoch = true, str()
		seq, err := binary.ReadVarint(r)
		if err != nil {
			return ownersIndex{}, err
		}
		log.seq = seq
		n := uv()
		if rerr != nil || n > 1<<24 || log.epoch == "" {
			return ownersIndex{}, errBadIndex
		}
		for range n {
			log.pending = append(log.pending, str())
		}
	}
	scopes := uv()
	if rerr != nil || scopes > 1<<24 {
		return ownersIndex{}, errBadIndex
	}
	doc := ownersIndex{Version: indexVersion, Scopes: make(map[string]ownersRow, scopes), Log: log}
	for range scopes {
		id := str()
		row := ownersRow{ETag: str(), Key: str(), RunID: str()}
		n := uv()
		if rerr != nil || n > 1<<24 {
			return ownersIndex{}, errBadIndex
		}
		row.Entries = make([]ownerRow, n)
		for i := range row.Entries {
			e := ownerRow{Identity: str(), Address: str(), CreatedBy: str(), RunID: str()}
			since, err := binary.ReadVarint(r)
			if err != nil {
				return ownersIndex{}, err
			}
			e.Since = since
			row.Entries[i] = e
		}
		if rerr != nil {
			return ownersIndex{}, rerr
		}
		doc.Scopes[id] = row
	}
	return doc, nil
}
