package rootmodule_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/rootmodule"
)

// Only the root module's .tf and .tf.json files are read, in name order,
// a broken one as far as it parses; skipped names, other files and
// directories are left out.
func TestFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"b.tf":      `resource "x" "b" {}`,
		"a.tf.json": `{"resource": {"x": {"a": {}}}}`,
		"skip.tf":   `resource "x" "s" {}`,
		"broken.tf": `resource "x" {`,
		"notes.txt": `resource "x" "n" {}`,
		"sub/c.tf":  `resource "x" "c" {}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := rootmodule.Files(dir, "skip.tf")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, string(f.Bytes))
	}
	want := []string{`{"resource": {"x": {"a": {}}}}`, `resource "x" "b" {}`, `resource "x" {`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	if _, err := rootmodule.Files(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory read as an empty module")
	}
}
