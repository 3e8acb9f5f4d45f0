// Package realproviders installs HashiCorp's providers into a filesystem
// mirror for the real-provider test tier (wrapper/e2e/e2e_realproviders_test.go),
// on machines without a provider registry.
//
// Four come as gzipped linux/amd64 builds with a SHA256SUMS file from a
// shared directory (SPONSON_REAL_PROVIDERS, by default ../shared/providers
// beside the checkout); the time provider is the build of
// `.ci/build-tool.sh time-provider` (which `make tools` runs) in
// ${XDG_CACHE_HOME:-~/.cache}/sponson/time-provider/. The mirror has the
// engines' unpacked layout,
//
//	MIRROR/HOST/hashicorp/NAME/VERSION/linux_amd64/terraform-provider-NAME_vVERSION
//
// under registry.opentofu.org (OpenTofu) and registry.terraform.io
// (Terraform); fixtureprovider.WriteCLIConfig adds it to the tests' CLI
// configuration.
package realproviders

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
)

// EnvDir names the variable holding the directory of the gzipped builds
// and their SHA256SUMS.
const EnvDir = "SPONSON_REAL_PROVIDERS"

// EnvRequire names the variable that, set to 1 (as CI does), makes a
// missing provider fail the tests that need it instead of skipping them.
const EnvRequire = "SPONSON_REQUIRE_REAL_PROVIDERS"

// Platform is the only platform the shared builds exist for.
const Platform = "linux_amd64"

// Hosts are the registry hosts the mirror serves the providers under.
var Hosts = []string{"registry.opentofu.org", "registry.terraform.io"}

// Provider is one provider of the tier.
type Provider struct {
	Name    string // the type, hashicorp/NAME
	Version string // without a leading v
	// Built is true for the one built by .ci/build-tool.sh rather than
	// taken from the shared directory.
	Built bool
}

// Binary is the plugin's file name in the mirror.
func (p Provider) Binary() string {
	return "terraform-provider-" + p.Name + "_v" + p.Version
}

// Providers are the providers of the tier, at the versions the
// configurations of the tests pin.
var Providers = []Provider{
	{Name: "local", Version: "2.9.0"},
	{Name: "null", Version: "3.3.1"},
	{Name: "random", Version: "3.9.0"},
	{Name: "tls", Version: "4.2.1"},
	{Name: "time", Version: "0.14.2", Built: true},
}

// Sources are where the providers come from.
type Sources struct {
	// Shared is the directory of the gzipped builds and SHA256SUMS.
	Shared string
	// Cache is the directory of .ci/build-tool.sh's builds (the one holding
	// time-provider/).
	Cache string
}

// DefaultSources reads EnvDir, XDG_CACHE_HOME and HOME through getenv;
// checkout is the directory holding go.mod, whose sibling shared/providers
// is the default shared directory.
func DefaultSources(checkout string, getenv func(string) string) Sources {
	s := Sources{Shared: getenv(EnvDir)}
	if s.Shared == "" {
		s.Shared = filepath.Join(filepath.Dir(checkout), "shared", "providers")
	}
	s.Cache = getenv("XDG_CACHE_HOME")
	if s.Cache == "" {
		s.Cache = filepath.Join(getenv("HOME"), ".cache")
	}
	s.Cache = filepath.Join(s.Cache, "sponson")
	return s
}

// file is where p comes from: the gzipped build in the shared directory,
// or the plain binary of the cache.
func (s Sources) file(p Provider) string {
	if p.Built {
		return filepath.Join(s.Cache, p.Name+"-provider", "v"+p.Version, "terraform-provider-"+p.Name)
	}
	return filepath.Join(s.Shared, p.Binary()+".gz")
}

// MissingError lists the providers that are not there, and how to get them.
type MissingError struct {
	Files []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("the real providers are missing: %s (the shared builds come from %s, default ../shared/providers "+
		"beside the checkout; the time provider from `.ci/build-tool.sh time-provider`, which `make tools` runs)",
		strings.Join(e.Files, ", "), EnvDir)
}

// Check returns a *MissingError when a provider is not in s, and nil when
// all are (their contents are checked by Write).
func (s Sources) Check() error {
	var missing []string
	for _, p := range Providers {
		if !exists(s.file(p)) {
			missing = append(missing, s.file(p))
		}
	}
	if sums := filepath.Join(s.Shared, "SHA256SUMS"); !exists(sums) {
		missing = append(missing, sums)
	}
	if len(missing) > 0 {
		return &MissingError{Files: missing}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Write installs every provider of s into a mirror at dir (which must not
// exist yet), for both hosts, after checking each gzipped build against
// SHA256SUMS, and returns the mirror for WriteCLIConfig.
func Write(dir string, s Sources) (fixtureprovider.Mirror, error) {
	if err := s.Check(); err != nil {
		return fixtureprovider.Mirror{}, err
	}
	sums, err := readSums(filepath.Join(s.Shared, "SHA256SUMS"))
	if err != nil {
		return fixtureprovider.Mirror{}, err
	}
	m := fixtureprovider.Mirror{Path: dir}
	for _, p := range Providers {
		b, err := s.binary(p, sums)
		if err != nil {
			return fixtureprovider.Mirror{}, err
		}
		first := ""
		for _, host := range Hosts {
			pkg := filepath.Join(dir, host, "hashicorp", p.Name, p.Version, Platform)
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				return fixtureprovider.Mirror{}, err
			}
			// The hosts share one file where the file system can link:
			// each binary is some 20 MB.
			bin := filepath.Join(pkg, p.Binary())
			if first == "" || os.Link(first, bin) != nil {
				if err := os.WriteFile(bin, b, 0o755); err != nil {
					return fixtureprovider.Mirror{}, err
				}
			}
			if first == "" {
				first = bin
			}
			m.Include = append(m.Include, host+"/hashicorp/"+p.Name)
		}
	}
	return m, nil
}

// binary is p's executable: the built one as it is, a shared one unpacked
// once its gzipped file matches its line of SHA256SUMS.
func (s Sources) binary(p Provider, sums map[string]string) ([]byte, error) {
	f := s.file(p)
	raw, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	if p.Built {
		return raw, nil
	}
	want, ok := sums[filepath.Base(f)]
	if !ok {
		return nil, fmt.Errorf("%s has no line for %s", filepath.Join(s.Shared, "SHA256SUMS"), filepath.Base(f))
	}
	got := sha256.Sum256(raw)
	if hex.EncodeToString(got[:]) != want {
		return nil, fmt.Errorf("%s has SHA-256 %x, but SHA256SUMS says %s: the file is damaged or not the release "+
			"the tests pin; copy it again", f, got, want)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", f, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", f, err)
	}
	return b, nil
}

// readSums reads a sha256sum listing: "HEX  NAME" per line (a "*" before
// the name marks binary mode).
func readSums(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		if !ok || len(sum) != sha256.Size*2 {
			return nil, fmt.Errorf("%s:%d: not a sha256sum line: %q", path, n, line)
		}
		out[strings.TrimPrefix(strings.TrimSpace(name), "*")] = strings.ToLower(sum)
	}
	return out, sc.Err()
}

var (
	installOnce   sync.Once
	installMirror fixtureprovider.Mirror
	installErr    error
)

// Install returns the mirror of the real providers, written once per test
// binary. When a provider is missing the test skips, saying which and how
// to get it, or fails when EnvRequire is 1; a damaged one always fails.
//
// The mirror outlives the test that wrote it, so it goes to a directory
// under os.TempDir named by the sources' contents (written beside it and
// renamed into place, so test binaries running at once never see half a
// mirror), and is reused by later runs.
func Install(t testing.TB) fixtureprovider.Mirror {
	t.Helper()
	if runtime.GOOS+"_"+runtime.GOARCH != Platform {
		skipOrFail(t, fmt.Errorf("the real providers are linux/amd64 builds; this is %s/%s", runtime.GOOS, runtime.GOARCH))
	}
	installOnce.Do(func() { installMirror, installErr = install() })
	var missing *MissingError
	switch {
	case errors.As(installErr, &missing):
		skipOrFail(t, installErr)
	case installErr != nil:
		t.Fatalf("installing the real providers: %v", installErr)
	}
	return installMirror
}

func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%v; %s=1 requires them", err, EnvRequire)
	}
	t.Skipf("real-provider test skipped: %v", err)
}

func install() (fixtureprovider.Mirror, error) {
	checkout, err := moduleRoot()
	if err != nil {
		return fixtureprovider.Mirror{}, err
	}
	s := DefaultSources(checkout, os.Getenv)
	if err := s.Check(); err != nil {
		return fixtureprovider.Mirror{}, err
	}
	key, err := s.key()
	if err != nil {
		return fixtureprovider.Mirror{}, err
	}
	final := filepath.Join(os.TempDir(), "sponson-real-providers-"+key)
	if exists(final) {
		return mirrorAt(final), nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "sponson-real-providers-tmp-")
	if err != nil {
		return fixtureprovider.Mirror{}, err
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // empty after the rename, or a mirror another binary won the race with
	if _, err := Write(filepath.Join(tmp, "mirror"), s); err != nil {
		return fixtureprovider.Mirror{}, err
	}
	if err := os.Rename(filepath.Join(tmp, "mirror"), final); err != nil {
		if !exists(final) {
			return fixtureprovider.Mirror{}, err
		}
	}
	return mirrorAt(final), nil
}

// mirrorAt is the Mirror of a complete mirror at dir.
func mirrorAt(dir string) fixtureprovider.Mirror {
	m := fixtureprovider.Mirror{Path: dir}
	for _, p := range Providers {
		for _, host := range Hosts {
			m.Include = append(m.Include, host+"/hashicorp/"+p.Name)
		}
	}
	return m
}

// key names a mirror by what it is made of: SHA256SUMS and the built
// provider's SHA-256.
func (s Sources) key() (string, error) {
	h := sha256.New()
	sums, err := os.ReadFile(filepath.Join(s.Shared, "SHA256SUMS"))
	if err != nil {
		return "", err
	}
	h.Write(sums)
	for _, p := range Providers {
		if !p.Built {
			continue
		}
		f, err := os.Open(s.file(p))
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close() //nolint:errcheck,gosec // read only
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// moduleRoot is the directory of the nearest go.mod above the working
// directory, which `go test` sets to the package's directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
