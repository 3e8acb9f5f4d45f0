package engine_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// fakeInfo is the part of fs.FileInfo Locate looks at.
type fakeInfo struct {
	mode fs.FileMode
}

func (f fakeInfo) Name() string       { return "tofu" }
func (f fakeInfo) Size() int64        { return 1 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return nil }

// fakeLookup answers from maps: env for Getenv, path (name → resolved path)
// for LookPath and files (path → mode) for Stat.
func fakeLookup(env, path map[string]string, files map[string]fs.FileMode) engine.Lookup {
	return engine.Lookup{
		Getenv: func(k string) string { return env[k] },
		LookPath: func(name string) (string, error) {
			if p, ok := path[name]; ok {
				return p, nil
			}
			return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
		},
		Stat: func(p string) (os.FileInfo, error) {
			if m, ok := files[p]; ok {
				return fakeInfo{mode: m}, nil
			}
			return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
		},
	}
}

const (
	xdgCached  = "/xdg/sponson/tofu/" + engine.PinnedTofuVersion + "/tofu"
	homeCached = "/home/u/.cache/sponson/tofu/" + engine.PinnedTofuVersion + "/tofu"
)

func TestLocateOrder(t *testing.T) {
	t.Parallel()
	both := map[string]string{"tofu": "/usr/bin/tofu", "terraform": "/usr/bin/terraform", "/opt/tf": "/opt/tf", "/env/tofu": "/env/tofu"}
	tests := []struct {
		name  string
		flag  string
		env   map[string]string
		path  map[string]string
		files map[string]fs.FileMode
		want  string
	}{
		{
			name: "flag beats everything",
			flag: "/opt/tf",
			env:  map[string]string{engine.EnvEngine: "/env/tofu", "XDG_CACHE_HOME": "/xdg"},
			path: both, files: map[string]fs.FileMode{xdgCached: 0o755},
			want: "/opt/tf",
		},
		{
			name: "flag is resolved through LookPath",
			flag: "terraform",
			path: both,
			want: "/usr/bin/terraform",
		},
		{
			name: "SPONSON_ENGINE beats PATH",
			env:  map[string]string{engine.EnvEngine: "/env/tofu"},
			path: both,
			want: "/env/tofu",
		},
		{
			name: "tofu on PATH beats terraform",
			path: both,
			want: "/usr/bin/tofu",
		},
		{
			name: "terraform on PATH",
			path: map[string]string{"terraform": "/usr/bin/terraform"},
			want: "/usr/bin/terraform",
		},
		{
			name:  "PATH beats the cached build",
			env:   map[string]string{"XDG_CACHE_HOME": "/xdg"},
			path:  map[string]string{"terraform": "/usr/bin/terraform"},
			files: map[string]fs.FileMode{xdgCached: 0o755},
			want:  "/usr/bin/terraform",
		},
		{
			name:  "cached build under XDG_CACHE_HOME",
			env:   map[string]string{"XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"},
			files: map[string]fs.FileMode{xdgCached: 0o755, homeCached: 0o755},
			want:  xdgCached,
		},
		{
			name:  "cached build under HOME/.cache",
			env:   map[string]string{"HOME": "/home/u"},
			files: map[string]fs.FileMode{homeCached: 0o700},
			want:  homeCached,
		},
		{
			name:  "cached build executable by others only",
			env:   map[string]string{"HOME": "/home/u"},
			files: map[string]fs.FileMode{homeCached: 0o001},
			want:  homeCached,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := engine.Locate(tt.flag, fakeLookup(tt.env, tt.path, tt.files))
			if err != nil {
				t.Fatalf("Locate: %v", err)
			}
			if got != tt.want {
				t.Errorf("Locate = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLocateNotFound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		flag  string
		env   map[string]string
		path  map[string]string
		files map[string]fs.FileMode
		// explicit is the value whose error must be named in the message.
		explicit string
	}{
		{name: "nothing anywhere", env: map[string]string{"HOME": "/home/u"}},
		{name: "no HOME and no XDG_CACHE_HOME"},
		{
			name:  "cached build not executable",
			env:   map[string]string{"HOME": "/home/u"},
			files: map[string]fs.FileMode{homeCached: 0o644},
		},
		{
			name:  "cached build is a directory",
			env:   map[string]string{"HOME": "/home/u"},
			files: map[string]fs.FileMode{homeCached: fs.ModeDir | 0o755},
		},
		{
			name:  "cached build only under HOME while XDG_CACHE_HOME is set",
			env:   map[string]string{"XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"},
			files: map[string]fs.FileMode{homeCached: 0o755},
		},
		{
			// An explicit engine that does not exist is an error, not a
			// reason to fall back to another binary.
			name:     "bad flag does not fall back",
			flag:     "/no/such/tofu",
			env:      map[string]string{"HOME": "/home/u", engine.EnvEngine: "/env/tofu"},
			path:     map[string]string{"tofu": "/usr/bin/tofu", "/env/tofu": "/env/tofu"},
			files:    map[string]fs.FileMode{homeCached: 0o755},
			explicit: "/no/such/tofu",
		},
		{
			name:     "bad SPONSON_ENGINE does not fall back",
			env:      map[string]string{"HOME": "/home/u", engine.EnvEngine: "/no/such/terraform"},
			path:     map[string]string{"tofu": "/usr/bin/tofu"},
			files:    map[string]fs.FileMode{homeCached: 0o755},
			explicit: "/no/such/terraform",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := engine.Locate(tt.flag, fakeLookup(tt.env, tt.path, tt.files))
			if err == nil {
				t.Fatalf("Locate = %q, want ENGINE_NOT_FOUND", got)
			}
			if got != "" {
				t.Errorf("Locate returned %q with an error", got)
			}
			if !errcode.Is(err, errcode.EngineNotFound) {
				t.Fatalf("Locate error = %v, want ENGINE_NOT_FOUND", err)
			}
			e := errcode.As(err)
			if tt.explicit != "" {
				if !strings.Contains(e.Message, tt.explicit) {
					t.Errorf("message %q does not name %q", e.Message, tt.explicit)
				}
				if !errors.Is(err, exec.ErrNotFound) {
					t.Errorf("error %v does not keep the LookPath cause", err)
				}
				return
			}
			// A user of the released binary reads first how to get an
			// engine; `make tools` is for Sponson's own checkout (issue 52).
			if !strings.HasPrefix(e.Hint, "Install OpenTofu") || !strings.Contains(e.Hint, "--engine PATH") {
				t.Errorf("hint %q does not start with how to install an engine", e.Hint)
			}
			if !strings.Contains(e.Hint, "Working on Sponson itself? `make tools`") {
				t.Errorf("hint %q does not name `make tools` for Sponson's own checkout", e.Hint)
			}
			if !strings.Contains(e.Hint, engine.PinnedTofuVersion) {
				t.Errorf("hint %q does not name the pinned version %s", e.Hint, engine.PinnedTofuVersion)
			}
		})
	}
}

func TestCachedTofuPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"XDG_CACHE_HOME", map[string]string{"XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"}, xdgCached},
		{"HOME", map[string]string{"HOME": "/home/u"}, homeCached},
		{"neither", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := engine.CachedTofuPath(func(k string) string { return tt.env[k] }); got != tt.want {
				t.Errorf("CachedTofuPath = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLocateRealExecutables runs Locate against the process environment and
// real files; it changes PATH, so it cannot run in parallel.
func TestLocateRealExecutables(t *testing.T) {
	root := t.TempDir()
	bothDir := filepath.Join(root, "both")
	tfDir := filepath.Join(root, "tfonly")
	emptyDir := filepath.Join(root, "empty")
	cache := filepath.Join(root, "cache")
	cached := filepath.Join(cache, "sponson", "tofu", engine.PinnedTofuVersion, "tofu")
	plain := filepath.Join(root, "plain", "tofu") // not executable
	for _, d := range []string{bothDir, tfDir, emptyDir, filepath.Dir(cached), filepath.Dir(plain)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := []byte("#!/bin/sh\nexit 0\n")
	for _, p := range []string{filepath.Join(bothDir, "tofu"), filepath.Join(bothDir, "terraform"), filepath.Join(tfDir, "terraform")} {
		if err := os.WriteFile(p, script, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(plain, script, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		flag      string
		path      string
		envEngine string
		cachedMod fs.FileMode // 0: no cached build
		want      string      // "": ENGINE_NOT_FOUND
	}{
		{name: "tofu and terraform on PATH", path: bothDir, want: filepath.Join(bothDir, "tofu")},
		{name: "terraform on PATH", path: tfDir, want: filepath.Join(tfDir, "terraform")},
		{name: "second PATH entry", path: emptyDir + string(os.PathListSeparator) + tfDir, want: filepath.Join(tfDir, "terraform")},
		{name: "flag path", flag: filepath.Join(tfDir, "terraform"), path: bothDir, want: filepath.Join(tfDir, "terraform")},
		{name: "flag name on PATH", flag: "terraform", path: bothDir, want: filepath.Join(bothDir, "terraform")},
		{name: "SPONSON_ENGINE", envEngine: filepath.Join(tfDir, "terraform"), path: bothDir, want: filepath.Join(tfDir, "terraform")},
		{name: "flag not executable", flag: plain, path: bothDir},
		{name: "SPONSON_ENGINE not executable", envEngine: plain, path: bothDir},
		{name: "cached build", path: emptyDir, cachedMod: 0o755, want: cached},
		{name: "cached build not executable", path: emptyDir, cachedMod: 0o644},
		{name: "nothing", path: emptyDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			t.Setenv(engine.EnvEngine, tt.envEngine)
			t.Setenv("XDG_CACHE_HOME", cache)
			os.Remove(cached)
			if tt.cachedMod != 0 {
				if err := os.WriteFile(cached, script, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(cached, tt.cachedMod); err != nil {
					t.Fatal(err)
				}
			}
			got, err := engine.Locate(tt.flag, engine.ProcessLookup())
			if tt.want == "" {
				if !errcode.Is(err, errcode.EngineNotFound) {
					t.Fatalf("Locate = %q, %v; want ENGINE_NOT_FOUND", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Locate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Locate (-want +got):\n%s", diff)
			}
		})
	}
}
