package fixtureprovider

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidName(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		name    string
		wantErr bool
	}{
		"plain":          {name: "app-pr-42"},
		"all characters": {name: "A.b_c-9"},
		"inner dots":     {name: "a..b"},
		"longest":        {name: strings.Repeat("a", MaxNameLength)},
		"empty":          {name: "", wantErr: true},
		"too long":       {name: strings.Repeat("a", MaxNameLength+1), wantErr: true},
		"dot":            {name: ".", wantErr: true},
		"dot dot":        {name: "..", wantErr: true},
		"hidden":         {name: ".a", wantErr: true},
		"slash":          {name: "a/b", wantErr: true},
		"traversal":      {name: "../a", wantErr: true},
		"space":          {name: "a b", wantErr: true},
		"backslash":      {name: `a\b`, wantErr: true},
		"non-ASCII":      {name: "é", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if err := validName(tt.name); (err != nil) != tt.wantErr {
				t.Errorf("validName(%q) = %v, want error %v", tt.name, err, tt.wantErr)
			}
		})
	}
}

func TestObjectFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	value := "v1"

	if _, err := ReadObject(dir, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadObject of a missing object = %v, want fs.ErrNotExist", err)
	}
	first := Object{ID: newID(), Name: "a", Value: &value}
	if err := createObject(dir, first); err != nil {
		t.Fatalf("createObject: %v", err)
	}
	second := Object{ID: newID(), Name: "a"}
	if err := createObject(dir, second); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("createObject of a taken name = %v, want fs.ErrExist", err)
	}
	got, err := ReadObject(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("the failed create changed the object (-want +got):\n%s", diff)
	}

	if err := writeObject(dir, second); err != nil {
		t.Fatalf("writeObject: %v", err)
	}
	got, err = ReadObject(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(second, got); diff != "" {
		t.Errorf("object after writeObject (-want +got):\n%s", diff)
	}

	if err := removeObject(dir, "a"); err != nil {
		t.Fatalf("removeObject: %v", err)
	}
	if err := removeObject(dir, "a"); err != nil {
		t.Fatalf("removeObject of a missing object = %v, want nil", err)
	}
	assertNoTempFiles(t, filepath.Join(dir, "objects"))
}

func TestObjectFileFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	value := "v"

	if err := createObject(dir, Object{ID: "id-1", Name: "a", Value: &value}); err != nil {
		t.Fatal(err)
	}
	if err := createObject(dir, Object{ID: "id-2", Name: "b"}); err != nil {
		t.Fatal(err)
	}

	for name, want := range map[string]string{
		"a": "{\n  \"id\": \"id-1\",\n  \"name\": \"a\",\n  \"value\": \"v\"\n}\n",
		"b": "{\n  \"id\": \"id-2\",\n  \"name\": \"b\",\n  \"value\": null\n}\n",
	} {
		b, err := os.ReadFile(filepath.Join(dir, "objects", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, string(b)); diff != "" {
			t.Errorf("objects/%s.json (-want +got):\n%s", name, diff)
		}
	}
}

// TestCreateObjectConcurrently checks that of many creators of one name
// exactly one succeeds, which a check followed by a rename would not ensure.
func TestCreateObjectConcurrently(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const creators = 20

	errs := make([]error, creators)
	var wg sync.WaitGroup
	for i := range creators {
		wg.Go(func() { errs[i] = createObject(dir, Object{ID: newID(), Name: "contested"}) })
	}
	wg.Wait()

	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("createObject = %v, want nil or fs.ErrExist", err)
		}
	}
	if created != 1 {
		t.Errorf("%d creators succeeded, want exactly 1", created)
	}
	assertNoTempFiles(t, filepath.Join(dir, "objects"))
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()

	got, err := ReadList(dir, "vars")
	if err != nil {
		t.Fatalf("ReadList of a missing list: %v", err)
	}
	if diff := cmp.Diff([]string{}, got); diff != "" {
		t.Errorf("missing list (-want +got):\n%s", diff)
	}

	add := func(e string) func([]string) []string {
		return func(entries []string) []string { return append(entries, e) }
	}
	for _, e := range []string{"a", "b"} {
		if _, err := modifyList(ctx, dir, "vars", 0, add(e)); err != nil {
			t.Fatal(err)
		}
	}
	written, err := modifyList(ctx, dir, "vars", 0, func(entries []string) []string {
		return slices.DeleteFunc(entries, func(e string) bool { return e == "a" })
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b"}, written); diff != "" {
		t.Errorf("modifyList result (-want +got):\n%s", diff)
	}
	got, err = ReadList(dir, "vars")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b"}, got); diff != "" {
		t.Errorf("list after add, add, remove (-want +got):\n%s", diff)
	}
	assertNoTempFiles(t, filepath.Join(dir, "lists"))

	if err := os.WriteFile(ListPath(dir, "broken"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadList(dir, "broken"); err == nil {
		t.Error("ReadList of a malformed list succeeded, want an error")
	}
	if _, err := modifyList(ctx, dir, "broken", 0, add("x")); err == nil {
		t.Error("modifyList of a malformed list succeeded, want an error")
	}
}

// TestModifyListLosesConcurrentUpdates checks the behaviour the list models:
// two writers inside one delay window both read the old list, and the later
// write drops the earlier writer's entry.
func TestModifyListLosesConcurrentUpdates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := modifyList(ctx, dir, "vars", 0, func([]string) []string { return []string{"kept"} }); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for _, e := range []string{"a", "b"} {
		wg.Go(func() {
			if _, err := modifyList(ctx, dir, "vars", 300*time.Millisecond, func(entries []string) []string {
				return append(entries, e)
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	got, err := ReadList(dir, "vars")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"kept", "a"}) && !slices.Equal(got, []string{"kept", "b"}) {
		t.Errorf("list after two concurrent adds = %q, want one of the two entries lost", got)
	}
}

func TestModifyListCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)

	start := time.Now()
	_, err := modifyList(ctx, dir, "vars", time.Minute, func(entries []string) []string { return append(entries, "a") })

	if !errors.Is(err, context.Canceled) {
		t.Errorf("modifyList = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("modifyList returned after %v, want soon after the cancellation", elapsed)
	}
	if _, err := os.Stat(ListPath(dir, "vars")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cancelled modifyList wrote the list (stat: %v)", err)
	}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	uuidV4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		id := newID()
		if !uuidV4.MatchString(id) {
			t.Fatalf("newID() = %q, not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("newID() returned %q twice", id)
		}
		seen[id] = true
	}
}

// assertNoTempFiles fails t when dir holds a leftover temporary file.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}
