package gitstore

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1" // git's object ids, not a security measure
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Objects are written by the store itself, as loose objects of the scratch
// repository: the few small blobs, trees and the commit of one mutation
// would otherwise cost a git process each (7–13 ms per spawn on the machines
// measured, more than the push itself), while zlib and SHA-1 take
// microseconds. Reading stays with git (cat-file --batch), which knows packs.

// Modes of tree entries.
const (
	modeBlob = "100644"
	modeTree = "40000"
)

// entry is one entry of a tree.
type entry struct {
	mode string
	id   string // hex object id
}

// putObject writes an object and returns its id. Writing an object that
// exists already is a no-op, so concurrent writers of the same object are
// harmless: each renames a complete file over the same name.
func (s *Store) putObject(kind string, data []byte) (string, error) {
	header := fmt.Sprintf("%s %d\x00", kind, len(data))
	h := sha1.New()
	h.Write([]byte(header))
	h.Write(data)
	id := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(s.dir, "objects", id[:2])
	path := filepath.Join(dir, id[2:])
	if _, err := os.Stat(path); err == nil {
		return id, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", scratchError("create", dir, err)
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return "", scratchError("create an object in", dir, err)
	}
	zw := zlib.NewWriter(f)
	_, err = zw.Write([]byte(header))
	if err == nil {
		_, err = zw.Write(data)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", scratchError("write object", path, err)
	}
	return id, nil
}

func scratchError(op, path string, err error) error {
	code := errcode.StoreUnavailable
	if errors.Is(err, fs.ErrPermission) {
		code = errcode.StorePermission
	}
	return errcode.Wrap(code, err, "git store scratch repository: %s %s", op, path)
}

// encodeTree renders entries in git's order: by name, a tree's name compared
// as if it ended in "/".
func encodeTree(entries map[string]entry) ([]byte, error) {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sortKey := func(n string) string {
		if entries[n].mode == modeTree {
			return n + "/"
		}
		return n
	}
	sort.Slice(names, func(i, j int) bool { return sortKey(names[i]) < sortKey(names[j]) })
	var b bytes.Buffer
	for _, n := range names {
		e := entries[n]
		raw, err := hex.DecodeString(e.id)
		if err != nil || len(raw) != sha1.Size {
			return nil, errcode.New(errcode.Internal, "tree entry %s has a bad object id %q", n, e.id)
		}
		b.WriteString(e.mode)
		b.WriteByte(' ')
		b.WriteString(n)
		b.WriteByte(0)
		b.Write(raw)
	}
	return b.Bytes(), nil
}

// parseTree reads a raw tree object.
func parseTree(data []byte) (map[string]entry, error) {
	out := map[string]entry{}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+1+sha1.Size {
			return nil, errcode.New(errcode.ReceiptCorrupt, "a tree object of the store does not parse")
		}
		mode, name := string(data[:sp]), string(data[sp+1:nul])
		out[name] = entry{mode: mode, id: hex.EncodeToString(data[nul+1 : nul+1+sha1.Size])}
		data = data[nul+1+sha1.Size:]
	}
	return out, nil
}

// identity signs the store's commits. Git needs no configured user for them:
// the store writes the commit object itself.
const identity = "Sponson <sponson@localhost>"

// encodeCommit renders a commit object; parent is empty for the first commit
// of a branch.
func encodeCommit(tree, parent string, when time.Time, msg string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "tree %s\n", tree)
	if parent != "" {
		fmt.Fprintf(&b, "parent %s\n", parent)
	}
	stamp := fmt.Sprintf("%d +0000", when.Unix())
	fmt.Fprintf(&b, "author %s %s\ncommitter %s %s\n\n%s", identity, stamp, identity, stamp, msg)
	if !strings.HasSuffix(msg, "\n") {
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// commitTree returns the tree id of a raw commit object.
func commitTree(data []byte) (string, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	id, ok := strings.CutPrefix(string(line), "tree ")
	if !ok || len(id) != 2*sha1.Size {
		return "", errcode.New(errcode.ReceiptCorrupt, "a commit of the store does not name its tree")
	}
	return id, nil
}
