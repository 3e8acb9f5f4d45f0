package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
)

const mirrorVersion = "0.1.0"

var sources = []string{"registry.opentofu.org/sponson/sponson", "registry.terraform.io/sponson/sponson"}

// writeConfig calls WriteCLIConfig in a new directory for a provider binary
// that exists.
func writeConfig(t *testing.T, userConfig string) (*engine.CLIConfig, string, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "sponson")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var user []string
	if userConfig != "" {
		user = []string{userConfig}
	}
	cfg, err := engine.WriteCLIConfig(dir, bin, mirrorVersion, user)
	if err != nil {
		t.Fatalf("WriteCLIConfig: %v", err)
	}
	return cfg, dir, bin
}

func readText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mirrorFile(dir, host string) string {
	return filepath.Join(dir, "mirror", host, "sponson", "sponson", mirrorVersion, runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-sponson_v"+mirrorVersion)
}

// countBlocks counts the lines that open a provider_installation block
// (temporary paths may contain the word itself).
func countBlocks(text string) int {
	return len(regexp.MustCompile(`(?m)^\s*provider_installation\s*\{`).FindAllString(text, -1))
}

func TestWriteCLIConfigFiles(t *testing.T) {
	t.Parallel()
	cfg, dir, bin := writeConfig(t, "")
	if cfg.Dir != dir {
		t.Errorf("Dir = %q, want %q", cfg.Dir, dir)
	}
	if filepath.Dir(cfg.File) != dir {
		t.Errorf("File = %q, not in %q", cfg.File, dir)
	}
	if cfg.Warning != "" {
		t.Errorf("Warning = %q without a user configuration", cfg.Warning)
	}

	link := filepath.Join(dir, "plugins", "terraform-provider-sponson")
	fi, err := os.Lstat(link)
	if err != nil {
		t.Fatalf("provider link: %v", err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is %v, want a symlink", link, fi.Mode())
	}
	if target, err := os.Readlink(link); err != nil || target != bin {
		t.Errorf("Readlink(%s) = %q, %v; want %q", link, target, err, bin)
	}

	for _, host := range engine.ProviderHosts {
		p := mirrorFile(dir, host)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Errorf("mirror placeholder for %s: %v", host, err)
			continue
		}
		if !fi.Mode().IsRegular() {
			t.Errorf("%s is %v, want a regular file (not the provider binary)", p, fi.Mode())
		}
		if fi.Size() == 0 {
			t.Errorf("%s is empty", p)
		}
	}
	if diff := cmp.Diff([]string{"registry.opentofu.org", "registry.terraform.io"}, engine.ProviderHosts); diff != "" {
		t.Errorf("ProviderHosts (-want +got):\n%s", diff)
	}
}

// TestWriteCLIConfigPlaceholderStable: the lock file records the hash of the
// mirror package, so it must not change between runs or provider builds.
func TestWriteCLIConfigPlaceholderStable(t *testing.T) {
	t.Parallel()
	_, dir1, _ := writeConfig(t, "")
	_, dir2, _ := writeConfig(t, "")
	want := readText(t, mirrorFile(dir1, engine.ProviderHosts[0]))
	for _, p := range []string{mirrorFile(dir1, engine.ProviderHosts[1]), mirrorFile(dir2, engine.ProviderHosts[0]), mirrorFile(dir2, engine.ProviderHosts[1])} {
		if diff := cmp.Diff(want, readText(t, p)); diff != "" {
			t.Errorf("placeholder %s differs (-first +this):\n%s", p, diff)
		}
	}
}

func TestWriteCLIConfigText(t *testing.T) {
	t.Parallel()
	cfg, dir, _ := writeConfig(t, "")
	text := readText(t, cfg.File)
	plugins := filepath.Join(dir, "plugins")
	mirror := filepath.Join(dir, "mirror")
	quoted := fmt.Sprintf("%q, %q", sources[0], sources[1])

	wantLines := []string{
		"provider_installation {",
		"dev_overrides {",
		fmt.Sprintf("%q = %q", sources[0], plugins),
		fmt.Sprintf("%q = %q", sources[1], plugins),
		"filesystem_mirror {",
		fmt.Sprintf("path    = %q", mirror),
		"include = [" + quoted + "]",
		"direct {",
		"exclude = [" + quoted + "]",
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, w := range wantLines {
		if !lines[w] {
			t.Errorf("config has no line %q:\n%s", w, text)
		}
	}
	if n := countBlocks(text); n != 1 {
		t.Errorf("config has %d provider_installation blocks, want 1:\n%s", n, text)
	}
	if o, c := strings.Count(text, "{"), strings.Count(text, "}"); o != c {
		t.Errorf("config has %d '{' and %d '}':\n%s", o, c, text)
	}
	// The blocks nest in this order: dev_overrides, then the mirror, then
	// direct, all inside provider_installation.
	idx := func(s string) int { return strings.Index(text, s) }
	inOrder := idx("provider_installation {") < idx("dev_overrides {") && idx("dev_overrides {") < idx("filesystem_mirror {") && idx("filesystem_mirror {") < idx("direct {")
	if !inOrder {
		t.Errorf("blocks out of order:\n%s", text)
	}
	fi, err := os.Stat(cfg.File)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("config file mode %v, want private to the user", perm)
	}
}

func TestWriteCLIConfigUserConfig(t *testing.T) {
	t.Parallel()
	const withoutBlock = `plugin_cache_dir = "/home/u/.terraform.d/plugin-cache"
credentials "app.terraform.io" {
  token = "abc"
}
`
	const withBlock = `plugin_cache_dir = "/home/u/.terraform.d/plugin-cache"

provider_installation {
  # a private mirror { with a brace in a comment
  network_mirror {
    url = "https://mirror.example.com/{x}"
    include = ["example.com/*/*"]
  }
  dev_overrides {
    "example.com/me/thing" = "/home/u/bin"
  }
  direct {
    exclude = ["example.com/*/*"]
  }
}

disable_checkpoint = true
`
	const indentedBlock = `  provider_installation{
    direct {}
  }
credentials "app.terraform.io" { token = "abc" }
`
	tests := []struct {
		name string
		user string   // "" means: no file at the given path
		keep []string // text of the user's configuration that must survive
		want []string // lines (trimmed) the merged configuration must have
	}{
		{name: "missing file"},
		{name: "no provider_installation", user: withoutBlock, keep: []string{withoutBlock}},
		{
			name: "provider_installation merged",
			user: withBlock,
			keep: []string{`plugin_cache_dir = "/home/u/.terraform.d/plugin-cache"`, "disable_checkpoint = true", `url = "https://mirror.example.com/{x}"`, `"example.com/me/thing" = "/home/u/bin"`},
			want: []string{
				"network_mirror {",
				`exclude = ["registry.opentofu.org/sponson/sponson", "registry.terraform.io/sponson/sponson"]`,
				`exclude = ["registry.opentofu.org/sponson/sponson", "registry.terraform.io/sponson/sponson", "example.com/*/*"]`,
			},
		},
		{
			name: "indented block without a space",
			user: indentedBlock,
			keep: []string{`credentials "app.terraform.io" { token = "abc" }`},
			want: []string{"direct {", `exclude = ["registry.opentofu.org/sponson/sponson", "registry.terraform.io/sponson/sponson"]}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			user := filepath.Join(t.TempDir(), "user.tfrc")
			if tt.user != "" {
				if err := os.WriteFile(user, []byte(tt.user), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, dir, _ := writeConfig(t, user)
			text := readText(t, cfg.File)
			if cfg.Warning != "" {
				t.Errorf("unexpected warning %q", cfg.Warning)
			}
			if n := countBlocks(text); n != 1 {
				t.Errorf("%d provider_installation blocks, want 1:\n%s", n, text)
			}
			if o, c := strings.Count(text, "{"), strings.Count(text, "}"); o != c {
				t.Errorf("config has %d '{' and %d '}':\n%s", o, c, text)
			}
			for _, k := range tt.keep {
				if !strings.Contains(text, k) {
					t.Errorf("%q of the user's configuration was lost:\n%s", k, text)
				}
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(text, "\n") {
				lines[strings.TrimSpace(l)] = true
			}
			for _, w := range append(tt.want, fmt.Sprintf("%q = %q", sources[0], filepath.Join(dir, "plugins"))) {
				if !lines[w] {
					t.Errorf("merged configuration has no line %q:\n%s", w, text)
				}
			}
			if tt.user != "" {
				if diff := cmp.Diff(tt.user, readText(t, user)); diff != "" {
					t.Errorf("the user's file was changed (-before +after):\n%s", diff)
				}
			}
		})
	}
}

func TestWriteCLIConfigJSONUserConfigIsNotMerged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	user := filepath.Join(dir, "user.tfrc.json")
	if err := os.WriteFile(user, []byte(`{"plugin_cache_dir": "/tmp/pc"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := engine.WriteCLIConfig(filepath.Join(dir, "out"), "/bin/true", "0.1.0", []string{user})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(cfg.File)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "plugin_cache_dir") || !strings.HasPrefix(strings.TrimSpace(string(got)), "#") {
		t.Errorf("a JSON user configuration was glued to the generated HCL:\n%s", got)
	}
	if !strings.Contains(cfg.Warning, "JSON") {
		t.Errorf("Warning = %q, want it to say the JSON configuration is not used", cfg.Warning)
	}
}
