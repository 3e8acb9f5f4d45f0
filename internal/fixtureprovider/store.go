package fixtureprovider

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// MaxNameLength is the longest object or list name. Names become file names
// (with ".json" appended), and every file system accepts names this long.
const MaxNameLength = 128

// namePattern is what an object or list name may hold: a plain file name. A
// leading '.' is refused as well, which rules out "." and ".." and keeps
// names apart from the hidden temporary files of atomic writes.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-][a-zA-Z0-9._-]*$`)

// Object is one fixture_object as kept in <dir>/objects/<name>.json.
type Object struct {
	ID    string  `json:"id"`
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

// ObjectPath is the file of the object name in dir.
func ObjectPath(dir, name string) string {
	return filepath.Join(dir, "objects", name+".json")
}

// ListPath is the file of the parent list name in dir.
func ListPath(dir, name string) string {
	return filepath.Join(dir, "lists", name+".json")
}

// ReadObject reads the object name from dir. When there is none, the error
// matches fs.ErrNotExist.
func ReadObject(dir, name string) (Object, error) {
	if err := validName(name); err != nil {
		return Object{}, err
	}
	b, err := os.ReadFile(ObjectPath(dir, name))
	if err != nil {
		return Object{}, err
	}
	var o Object
	if err := json.Unmarshal(b, &o); err != nil {
		return Object{}, fmt.Errorf("%s: %w", ObjectPath(dir, name), err)
	}
	return o, nil
}

// ReadList reads the entries of the parent list name from dir, in the order
// they were added. A list that does not exist yet is empty.
func ReadList(dir, name string) ([]string, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(ListPath(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	entries := []string{}
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", ListPath(dir, name), err)
	}
	return entries, nil
}

// createObject writes o as a new object and fails with an error matching
// fs.ErrExist when its name is taken. It writes a temporary file and links
// it to the object's name: a link, unlike a rename, never replaces an
// existing file, so of two concurrent creators exactly one succeeds and the
// file is never seen half written.
func createObject(dir string, o Object) error {
	b, err := encode(o)
	if err != nil {
		return err
	}
	path := ObjectPath(dir, o.Name)
	tmp, err := writeTemp(path, b)
	if err != nil {
		return err
	}
	err = os.Link(tmp, path)
	// The temporary name is only a second link now (or, after a failed
	// link, an orphan); the object's fate is decided by err.
	_ = os.Remove(tmp)
	return err
}

// writeObject writes o, replacing the object of its name if there is one.
func writeObject(dir string, o Object) error {
	b, err := encode(o)
	if err != nil {
		return err
	}
	return writeFileAtomic(ObjectPath(dir, o.Name), b)
}

// removeObject removes the object name; an object already gone is no error.
func removeObject(dir, name string) error {
	err := os.Remove(ObjectPath(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// modifyList rewrites the parent list name with change applied to its
// entries, the way a naive API client updates a list-valued attribute: read
// the whole list, wait delay (FIXTURE_LIST_DELAY, to widen the race window),
// write the whole list back. Nothing locks the list between the read and the
// write, so of two concurrent callers the later write silently drops the
// entry of the earlier one: the lost update a lease prevents. The write
// itself is atomic, so the file is always a valid list. It returns the
// entries written.
func modifyList(ctx context.Context, dir, name string, delay time.Duration, change func([]string) []string) ([]string, error) {
	entries, err := ReadList(dir, name)
	if err != nil {
		return nil, err
	}
	if err := wait(ctx, delay); err != nil {
		return nil, err
	}
	entries = change(entries)
	b, err := encode(entries)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(ListPath(dir, name), b); err != nil {
		return nil, err
	}
	return entries, nil
}

// wait sleeps for d, or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// writeFileAtomic replaces path with b through a temporary file in the same
// directory and a rename, so readers see the old or the new content, never
// a part.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := writeTemp(path, b)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp) // the rename error is the one to report
		return err
	}
	return nil
}

// writeTemp writes b to a new hidden temporary file beside path, creating
// the directory when needed, and returns its name.
func writeTemp(path string, b []byte) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name()) // the write error is the one to report
		return "", err
	}
	return f.Name(), nil
}

// encode is the JSON of v as the files hold it: indented, with a final
// newline, so a failing test prints something readable.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// validName checks that name can be an object or list name.
func validName(name string) error {
	switch {
	case name == "":
		return errors.New("the name is empty")
	case len(name) > MaxNameLength:
		return fmt.Errorf("the name %q is longer than %d characters", name, MaxNameLength)
	case !namePattern.MatchString(name):
		return fmt.Errorf("the name %q is not a plain file name: use letters, digits, '.', '_' and '-', not "+
			"starting with '.'", name)
	}
	return nil
}

// newID returns a random (version 4) UUID.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// objectNameByID finds the object of dir whose id is id.
func objectNameByID(dir, id string) (string, bool) {
	entries, err := os.ReadDir(filepath.Join(dir, "objects"))
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if o, err := ReadObject(dir, name); err == nil && o.ID == id {
			return o.Name, true
		}
	}
	return "", false
}
