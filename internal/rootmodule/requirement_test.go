package rootmodule

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUnrequiredSponson: a sponson_* block under the default local name
// without `sponson` in any required_providers is named; the requirement in
// any file, a provider argument, or no sponson block at all names none.
func TestUnrequiredSponson(t *testing.T) {
	t.Parallel()
	const scope = "resource \"sponson_scope\" \"this\" {}\n"
	const required = "terraform {\n  required_providers {\n    sponson = { source = \"sponson/sponson\" }\n  }\n}\n"
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing", map[string]string{"main.tf": scope}, "sponson_scope.this (main.tf:1)"},
		{"data source, other terraform block", map[string]string{"main.tf": "terraform {\n  required_version = \">= 1.6\"\n}\ndata \"sponson_context\" \"c\" {}\n"}, "data.sponson_context.c (main.tf:4)"},
		{"required in another file", map[string]string{"main.tf": scope, "versions.tf": required}, ""},
		{"required in JSON", map[string]string{"main.tf": scope, "versions.tf.json": `{"terraform": {"required_providers": {"sponson": {"source": "sponson/sponson"}}}}`}, ""},
		{"another local name", map[string]string{"main.tf": "resource \"sponson_scope\" \"this\" {\n  provider = sp\n}\n"}, ""},
		{"no sponson block", map[string]string{"main.tf": "resource \"terraform_data\" \"a\" {}\n"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			files, err := Files(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := UnrequiredSponson(files)
			if got != tt.want {
				t.Errorf("UnrequiredSponson = %q, want %q", got, tt.want)
			}
		})
	}
}
