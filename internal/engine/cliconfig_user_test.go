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
		name   string
		engine string
		files  layout
		env    map[string]string // values may start with "ROOT/"
		want   []string          // under the temporary root
		json   []string
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
			files, json := engine.UserCLIConfig("/usr/bin/"+tc.engine, func(k string) string { return env[k] })
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
			if diff := cmp.Diff(tc.json, rel(json)); diff != "" {
				t.Errorf("json (-want +got):\n%s", diff)
			}
		})
	}
}

// A CLI configuration file the user names but that does not exist becomes
// an empty one (the engine would read nothing, and warn on stdout); an
// existing one, or none named, is left alone.
func TestMissingCLIConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "own.tfrc")
	if err := os.WriteFile(existing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		empty bool
	}{
		{"none named", nil, false},
		{"an existing file", map[string]string{"TF_CLI_CONFIG_FILE": existing}, false},
		{"a missing file", map[string]string{"TF_CLI_CONFIG_FILE": filepath.Join(dir, "gone.tfrc")}, true},
		{"a missing TERRAFORM_CONFIG", map[string]string{"TERRAFORM_CONFIG": filepath.Join(dir, "gone.tfrc")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, warning, err := engine.MissingCLIConfig(t.TempDir(), func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if !tc.empty {
				if env != nil || warning != "" {
					t.Fatalf("got %v %q, want nothing", env, warning)
				}
				return
			}
			if len(env) != 1 || !strings.HasPrefix(env[0], "TF_CLI_CONFIG_FILE=") || !strings.Contains(warning, "does not exist") {
				t.Fatalf("got %v %q, want an empty file in TF_CLI_CONFIG_FILE and a warning", env, warning)
			}
			if b, err := os.ReadFile(strings.TrimPrefix(env[0], "TF_CLI_CONFIG_FILE=")); err != nil || len(b) != 0 {
				t.Fatalf("the stand-in: %q %v", b, err)
			}
		})
	}
}
