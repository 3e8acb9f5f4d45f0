package engine_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
)

func TestUserCLIConfigLocations(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the Unix locations")
	}
	type layout map[string]string // path under the temporary root -> content
	for _, tc := range []struct {
		name    string
		engine  string
		files   layout
		env     map[string]string // values may start with "ROOT/"
		want    []string          // under the temporary root
		skipped []string
	}{
		{"terraform: .terraformrc and the config dir", "terraform",
			layout{"home/.terraformrc": "", "home/.tofurc": "", "home/.terraform.d/b.tfrc": "", "home/.terraform.d/a.tfrc": "", "home/.terraform.d/credentials.tfrc.json": "{}", "home/.terraform.d/x.tfrc.json": "{}"},
			nil, []string{"home/.terraformrc", "home/.terraform.d/a.tfrc", "home/.terraform.d/b.tfrc"}, []string{"home/.terraform.d/x.tfrc.json"}},
		{"opentofu prefers .tofurc", "tofu",
			layout{"home/.terraformrc": "", "home/.tofurc": ""}, nil, []string{"home/.tofurc"}, nil},
		{"opentofu falls back to .terraformrc", "tofu",
			layout{"home/.terraformrc": ""}, nil, []string{"home/.terraformrc"}, nil},
		{"opentofu in XDG_CONFIG_HOME", "tofu",
			layout{"xdg/opentofu/tofurc": "", "xdg/opentofu/extra.tfrc": ""}, map[string]string{"XDG_CONFIG_HOME": "ROOT/xdg"},
			[]string{"xdg/opentofu/tofurc", "xdg/opentofu/extra.tfrc"}, nil},
		{"opentofu ignores XDG when .terraformrc exists", "tofu",
			layout{"home/.terraformrc": "", "xdg/opentofu/tofurc": ""}, map[string]string{"XDG_CONFIG_HOME": "ROOT/xdg"},
			[]string{"home/.terraformrc"}, nil},
		{"TF_CLI_CONFIG_FILE alone", "terraform",
			layout{"home/.terraformrc": "", "home/.terraform.d/a.tfrc": "", "own.tfrc": ""}, map[string]string{"TF_CLI_CONFIG_FILE": "ROOT/own.tfrc"},
			[]string{"own.tfrc"}, nil},
		{"TERRAFORM_CONFIG alone", "tofu",
			layout{"home/.tofurc": "", "own.tfrc": ""}, map[string]string{"TERRAFORM_CONFIG": "ROOT/own.tfrc"},
			[]string{"own.tfrc"}, nil},
		{"nothing", "terraform", layout{}, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "home"), 0o700); err != nil {
				t.Fatal(err)
			}
			for p, content := range tc.files {
				full := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{"HOME": filepath.Join(root, "home")}
			for k, v := range tc.env {
				if len(v) > 5 && v[:5] == "ROOT/" {
					v = filepath.Join(root, v[5:])
				}
				env[k] = v
			}
			files, skipped := engine.UserCLIConfig("/usr/bin/"+tc.engine, func(k string) string { return env[k] })
			rel := func(ps []string) []string {
				var out []string
				for _, p := range ps {
					r, _ := filepath.Rel(root, p)
					out = append(out, r)
				}
				return out
			}
			if diff := cmp.Diff(tc.want, rel(files)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skipped, rel(skipped)); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWriteCLIConfigMergesSeveralFiles: every block of every file of the
// user's reaches the generated configuration, written with mode 0600.
func TestWriteCLIConfigMergesSeveralFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := filepath.Join(dir, "a.tfrc")
	b := filepath.Join(dir, "b.tfrc")
	if err := os.WriteFile(a, []byte("plugin_cache_dir = \"/cache\"\ncredentials_helper \"vault\" {\n  args = []\n}\nhost \"example.com\" {\n  services = {}\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("credentials \"app.terraform.io\" {\n  token = \"t\"\n}\nprovider_installation {\n  filesystem_mirror {\n    path = \"/mirror\"\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := engine.WriteCLIConfig(filepath.Join(dir, "out"), "/bin/true", "0.1.0", []string{a, filepath.Join(dir, "missing.tfrc"), b})
	if err != nil {
		t.Fatal(err)
	}
	text := readText(t, cfg.File)
	for _, want := range []string{`plugin_cache_dir = "/cache"`, `credentials_helper "vault"`, `host "example.com"`, `credentials "app.terraform.io"`, `path = "/mirror"`} {
		if !strings.Contains(text, want) {
			t.Errorf("lost %q:\n%s", want, text)
		}
	}
	if n := countBlocks(text); n != 1 {
		t.Errorf("%d provider_installation blocks:\n%s", n, text)
	}
	if fi, err := os.Stat(cfg.File); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode of %s: %v %v", cfg.File, fi.Mode(), err)
	}
	if fi, err := os.Stat(cfg.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("mode of %s: %v %v", cfg.Dir, fi.Mode(), err)
	}
	if cfg.Warning != "" {
		t.Errorf("warning %q", cfg.Warning)
	}
}
