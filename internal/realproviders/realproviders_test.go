package realproviders

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeSources writes a shared directory and a cache holding small stand-ins
// for every provider, and returns them with each provider's content.
func fakeSources(t *testing.T) (Sources, map[string]string) {
	t.Helper()
	s := Sources{Shared: t.TempDir(), Cache: t.TempDir()}
	content := map[string]string{}
	var sums strings.Builder
	for _, p := range Providers {
		content[p.Name] = "#!/bin/sh\necho " + p.Name + "\n"
		f := s.file(p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		b := []byte(content[p.Name])
		if !p.Built {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			if _, err := zw.Write(b); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			b = gz.Bytes()
			fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(b), filepath.Base(f))
		}
		if err := os.WriteFile(f, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Shared, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return s, content
}

func TestWrite(t *testing.T) {
	t.Parallel()
	s, content := fakeSources(t)
	dir := filepath.Join(t.TempDir(), "mirror")

	m, err := Write(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != dir || len(m.Include) != 2*len(Providers) {
		t.Errorf("mirror %+v", m)
	}
	if diff := cmp.Diff(mirrorAt(dir), m); diff != "" {
		t.Errorf("mirrorAt differs from what Write returns (-at +write):\n%s", diff)
	}
	for _, p := range Providers {
		var infos []os.FileInfo
		for _, host := range Hosts {
			bin := filepath.Join(dir, host, "hashicorp", p.Name, p.Version, "linux_amd64", "terraform-provider-"+p.Name+"_v"+p.Version)
			fi, err := os.Stat(bin)
			if err != nil {
				t.Errorf("%s: %v", p.Name, err)
				continue
			}
			if fi.Mode()&0o100 == 0 {
				t.Errorf("%s is not executable: %v", bin, fi.Mode())
			}
			if got := string(readFile(t, bin)); got != content[p.Name] {
				t.Errorf("%s holds %q, want %q (unpacked)", bin, got, content[p.Name])
			}
			infos = append(infos, fi)
		}
		// One file on disk for both hosts (a temporary directory can link).
		if len(infos) == 2 && !os.SameFile(infos[0], infos[1]) {
			t.Errorf("%s: the hosts' binaries are two files, not one linked", p.Name)
		}
	}
}

func TestWriteRefusesAChecksumMismatch(t *testing.T) {
	t.Parallel()
	s, _ := fakeSources(t)
	// Another build of random, same name: SHA256SUMS no longer matches.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("other"))
	_ = zw.Close()
	bad := s.file(Providers[2])
	if err := os.WriteFile(bad, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	_, err := Write(filepath.Join(t.TempDir(), "mirror"), s)
	var missing *MissingError
	if err == nil || errors.As(err, &missing) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "SHA256SUMS says") {
		t.Fatalf("Write with a damaged %s: %v", bad, err)
	}
}

func TestWriteRefusesAFileSHA256SUMSDoesNotList(t *testing.T) {
	t.Parallel()
	s, _ := fakeSources(t)
	sums := readFile(t, filepath.Join(s.Shared, "SHA256SUMS"))
	var kept []string
	for _, l := range strings.Split(string(sums), "\n") {
		if !strings.Contains(l, "tls") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Shared, "SHA256SUMS"), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(filepath.Join(t.TempDir(), "mirror"), s); err == nil || !strings.Contains(err.Error(), "no line for terraform-provider-tls_v4.2.1.gz") {
		t.Fatalf("Write without tls's line: %v", err)
	}
}

func TestCheckNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	s, _ := fakeSources(t)
	if err := s.Check(); err != nil {
		t.Fatalf("complete sources: %v", err)
	}
	if err := os.Remove(s.file(Providers[4])); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.file(Providers[0])); err != nil {
		t.Fatal(err)
	}
	var missing *MissingError
	if err := s.Check(); !errors.As(err, &missing) {
		t.Fatalf("Check = %v, want a *MissingError", err)
	}
	if diff := cmp.Diff([]string{s.file(Providers[0]), s.file(Providers[4])}, missing.Files); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if msg := missing.Error(); !strings.Contains(msg, EnvDir) || !strings.Contains(msg, "build-tool.sh time-provider") {
		t.Errorf("the message does not say how to get them: %s", msg)
	}
}

func TestDefaultSources(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Sources
	}{
		{"defaults", map[string]string{"HOME": "/home/u"}, Sources{Shared: "/work/shared/providers", Cache: "/home/u/.cache/sponson"}},
		{"set", map[string]string{"HOME": "/home/u", EnvDir: "/p", "XDG_CACHE_HOME": "/c"}, Sources{Shared: "/p", Cache: "/c/sponson"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, DefaultSources("/work/main", env(tc.env))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadSums(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "SHA256SUMS")
	a, b := strings.Repeat("a", 64), strings.Repeat("B", 64)
	if err := os.WriteFile(path, []byte(a+"  one.gz\n\n"+b+" *two.gz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readSums(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"one.gz": a, "two.gz": strings.ToLower(b)}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := os.WriteFile(path, []byte("abc  one.gz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSums(path); err == nil {
		t.Error("a short sum was accepted")
	}
}

// TestInstall installs the real providers (or skips, saying why, unless
// SPONSON_REQUIRE_REAL_PROVIDERS=1): every one is in the mirror, and a
// second call reuses it.
func TestInstall(t *testing.T) {
	m := Install(t)
	for _, p := range Providers {
		bin := filepath.Join(m.Path, Hosts[0], "hashicorp", p.Name, p.Version, Platform, p.Binary())
		if _, err := os.Stat(bin); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	if again := Install(t); again.Path != m.Path {
		t.Errorf("a second Install wrote another mirror: %s, then %s", m.Path, again.Path)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
