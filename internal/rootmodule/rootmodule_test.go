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

func TestHasConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		files []string
		want  bool
	}{
		{nil, false},
		{[]string{"README.md", "x.tfvars", "terraform.tfstate"}, false},
		{[]string{"sponson_backend_override.tf"}, false},
		{[]string{"main.tf"}, true},
		{[]string{"main.tf.json"}, true},
		{[]string{"main.tofu"}, true},
	} {
		dir := t.TempDir()
		for _, f := range tc.files {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(dir, "modules.tf"), 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := rootmodule.HasConfig(dir, "sponson_backend_override.tf")
		if err != nil || got != tc.want {
			t.Errorf("HasConfig with %q: %v, %v; want %v", tc.files, got, err, tc.want)
		}
	}
}
