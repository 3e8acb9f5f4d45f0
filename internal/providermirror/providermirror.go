// Package providermirror writes the sponson provider into a filesystem
// mirror, for running tofu or terraform without the wrapper (air-gapped
// teams, configurations that only use sponson_lease). The wrapper itself
// needs no mirror: it serves the provider from its own process
// (docs/design.md §7.2).
//
// The mirror uses the engines' packed layout,
//
//	DIR/HOST/sponson/sponson/terraform-provider-sponson_VERSION_OS_ARCH.zip
//
// once under each registry host (registry.opentofu.org for OpenTofu,
// registry.terraform.io for Terraform), each zip holding the sponson binary
// under the provider's name. A zip rather than an unpacked directory,
// because only a zip has both hashes an engine's lock file records: h1: over
// its contents and zh: over the archive itself.
package providermirror

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
)

// Hosts are the registry hosts the mirror serves sponson/sponson under.
var Hosts = []string{"registry.opentofu.org", "registry.terraform.io"}

const (
	namespace    = "sponson"
	providerType = "sponson"
)

// zipTime is the modification time of the file in every zip: a fixed time
// makes the zip of one binary always the same bytes, so its zh: hash in a
// lock file does not change when the mirror is written again.
var zipTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Mirror is what Write wrote.
type Mirror struct {
	Dir      string   `json:"dir"`
	Version  string   `json:"version"`
	Platform string   `json:"platform"`
	Archives []string `json:"archives"`
	// Hashes are the lock file's hashes of the package: h1: (what init
	// records from a mirror) and zh: (what it records from a registry).
	Hashes []string `json:"hashes"`
}

// Write copies binary (a sponson executable) into a mirror under dir as
// provider version for platform (GOOS_GOARCH), replacing a zip of the same
// version that is already there.
func Write(dir, binary, version, platform string) (*Mirror, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	m := &Mirror{Dir: dir, Version: version, Platform: platform}
	name := fmt.Sprintf("terraform-provider-%s_%s_%s.zip", providerType, version, platform)
	for _, host := range Hosts {
		pkgDir := filepath.Join(dir, host, namespace, providerType)
		if err := os.MkdirAll(pkgDir, 0o755); err != nil {
			return nil, err
		}
		path := filepath.Join(pkgDir, name)
		if err := writeZip(path, binary, fmt.Sprintf("terraform-provider-%s_v%s", providerType, version)); err != nil {
			return nil, err
		}
		m.Archives = append(m.Archives, path)
	}
	h1, err := dirhash.HashZip(m.Archives[0], dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	zh, err := fileSHA256(m.Archives[0])
	if err != nil {
		return nil, err
	}
	m.Hashes = []string{h1, "zh:" + zh}
	return m, nil
}

// writeZip writes the zip under a temporary name and renames it into place,
// so an engine reading the mirror meanwhile never sees half a zip.
func writeZip(path, binary, entry string) (err error) {
	src, err := os.Open(binary)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".sponson-mirror-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	zw := zip.NewWriter(tmp)
	hdr := &zip.FileHeader{Name: entry, Method: zip.Deflate, Modified: zipTime}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CLIConfig is the provider_installation block of an engine CLI
// configuration that installs sponson/sponson from the mirror in dir and
// every other provider as usual.
func CLIConfig(dir string) string {
	var sources string
	for i, host := range Hosts {
		if i > 0 {
			sources += ", "
		}
		sources += fmt.Sprintf("%q", host+"/"+namespace+"/"+providerType)
	}
	return fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = [%s]
  }
  direct {
    exclude = [%s]
  }
}
`, dir, sources, sources)
}
