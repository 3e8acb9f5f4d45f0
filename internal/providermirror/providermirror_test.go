package providermirror_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/providermirror"
)

func fakeBinary(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sponson")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWriteLayout: one zip per registry host in the packed layout, holding
// the binary under the provider's name, executable.
func TestWriteLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := fakeBinary(t, "the sponson binary")
	m, err := providermirror.Write(dir, bin, "1.2.3", "linux_arm64")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "registry.opentofu.org/sponson/sponson/terraform-provider-sponson_1.2.3_linux_arm64.zip"),
		filepath.Join(dir, "registry.terraform.io/sponson/sponson/terraform-provider-sponson_1.2.3_linux_arm64.zip"),
	}
	if diff := cmp.Diff(want, m.Archives); diff != "" {
		t.Fatalf("archives (-want +got):\n%s", diff)
	}
	for _, a := range m.Archives {
		zr, err := zip.OpenReader(a)
		if err != nil {
			t.Fatal(err)
		}
		if len(zr.File) != 1 || zr.File[0].Name != "terraform-provider-sponson_v1.2.3" || zr.File[0].Mode().Perm() != 0o755 {
			t.Errorf("%s holds %v, want only terraform-provider-sponson_v1.2.3 with mode 0755", a, zr.File)
		}
		r, err := zr.File[0].Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		zr.Close()
		if string(b) != "the sponson binary" {
			t.Errorf("%s holds %q, not the binary", a, b)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(m.Archives[0]))
	if len(entries) != 1 {
		t.Errorf("the package directory holds %v: a temporary file was left", entries)
	}
}

// TestWriteHashes computes both lock file hashes independently: h1: is the
// SHA-256 of the lines "<sha256 hex>  <name>\n" of the zip's files (the Go
// module hash the engines use), zh: the SHA-256 of the zip file.
func TestWriteHashes(t *testing.T) {
	t.Parallel()
	content := "another binary"
	m, err := providermirror.Write(t.TempDir(), fakeBinary(t, content), "0.4.0", "darwin_amd64")
	if err != nil {
		t.Fatal(err)
	}
	summary := fmt.Sprintf("%x  terraform-provider-sponson_v0.4.0\n", sha256.Sum256([]byte(content)))
	sum := sha256.Sum256([]byte(summary))
	zipBytes, err := os.ReadFile(m.Archives[0])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"h1:" + base64.StdEncoding.EncodeToString(sum[:]), fmt.Sprintf("zh:%x", sha256.Sum256(zipBytes))}
	if diff := cmp.Diff(want, m.Hashes); diff != "" {
		t.Errorf("hashes (-want +got):\n%s", diff)
	}
	other, _ := os.ReadFile(m.Archives[1])
	if !bytes.Equal(zipBytes, other) {
		t.Errorf("the zips of the two hosts differ, so one zh: hash cannot match both")
	}
}

// TestWriteIsReproducible: writing the mirror again gives the same zip, so a
// lock file's zh: hash survives it.
func TestWriteIsReproducible(t *testing.T) {
	t.Parallel()
	bin := fakeBinary(t, "same binary")
	a, err := providermirror.Write(t.TempDir(), bin, "1.0.0", "linux_amd64")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(bin, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	b, err := providermirror.Write(t.TempDir(), bin, "1.0.0", "linux_amd64")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.Hashes, b.Hashes); diff != "" {
		t.Errorf("hashes changed between two writes (-first +second):\n%s", diff)
	}
}

func TestCLIConfig(t *testing.T) {
	t.Parallel()
	want := `provider_installation {
  filesystem_mirror {
    path    = "/opt/mirror"
    include = ["registry.opentofu.org/sponson/sponson", "registry.terraform.io/sponson/sponson"]
  }
  direct {
    exclude = ["registry.opentofu.org/sponson/sponson", "registry.terraform.io/sponson/sponson"]
  }
}
`
	if diff := cmp.Diff(want, providermirror.CLIConfig("/opt/mirror")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
