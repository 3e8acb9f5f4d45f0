package installsh

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// The release's signing key and another key, made once per test binary.
var keys struct {
	once             sync.Once
	release, another *openpgp.Entity
	err              error
}

func makeKeys() {
	keys.release, keys.err = openpgp.NewEntity("Sponson Releases", "", "releases@example.invalid", nil)
	if keys.err == nil {
		keys.another, keys.err = openpgp.NewEntity("Someone Else", "", "else@example.invalid", nil)
	}
}

func releaseKey(t *testing.T) *openpgp.Entity {
	t.Helper()
	keys.once.Do(makeKeys)
	if keys.err != nil {
		t.Fatal(keys.err)
	}
	return keys.release
}

func anotherKey(t *testing.T) *openpgp.Entity {
	t.Helper()
	releaseKey(t)
	return keys.another
}

// signFile writes path.sig, a binary detached signature as `gpg
// --detach-sign` makes it.
func signFile(t *testing.T, e *openpgp.Entity, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sig bytes.Buffer
	if err := openpgp.DetachSign(&sig, e, bytes.NewReader(data), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".sig", sig.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// publicKeyFile writes e's public key, armored as `gpg --armor --export`
// prints it.
func publicKeyFile(t *testing.T, e *openpgp.Entity) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "release.asc")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// withGPG adds gpg, gpgv and what the signature check uses to a tool dir.
func withGPG(t *testing.T, tools string) {
	t.Helper()
	for _, tool := range []string{"gpg", "gpgv", "grep", "tr"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed", tool)
		}
		if err := os.Symlink(p, filepath.Join(tools, tool)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSignature: with gpg and the release's key the checksum file's
// signature is checked by gpgv and required; a signature of another key, a
// checksum file changed after signing, or a missing signature refuse the
// install; without the key, or without gpg, install.sh says the signature
// was not checked (the checksum still is).
func TestSignature(t *testing.T) {
	t.Parallel()
	root := writeReleases(t)
	good := publicKeyFile(t, releaseKey(t))
	other := publicKeyFile(t, anotherKey(t))
	dir := filepath.Join(root, "download", "v"+release)
	sums := filepath.Join(dir, "terraform-provider-sponson_"+release+"_SHA256SUMS")

	// Releases whose signature is wrong in one way each.
	changed, unsigned := "2.0.0", "3.0.0"
	for _, v := range []string{changed, unsigned} {
		vdir := filepath.Join(root, "download", "v"+v)
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			t.Fatal(err)
		}
		archive := "sponson_" + release + "_linux_amd64.tar.gz"
		b, err := os.ReadFile(filepath.Join(dir, archive))
		if err != nil {
			t.Fatal(err)
		}
		name := "sponson_" + v + "_linux_amd64.tar.gz"
		if err := os.WriteFile(filepath.Join(vdir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		lines, _ := os.ReadFile(sums)
		var mine string
		for _, l := range strings.Split(string(lines), "\n") {
			if strings.HasSuffix(l, archive) {
				mine = strings.Replace(l, archive, name, 1) + "\n"
			}
		}
		vsums := filepath.Join(vdir, "terraform-provider-sponson_"+v+"_SHA256SUMS")
		if err := os.WriteFile(vsums, []byte(mine), 0o644); err != nil {
			t.Fatal(err)
		}
		if v == changed {
			signFile(t, releaseKey(t), vsums)
			// A line added after signing, as a compromised mirror would.
			if err := os.WriteFile(vsums, []byte(mine+strings.Repeat("0", 64)+"  extra\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, tc := range []struct {
		name, version, key string
		gpg                bool
		code               int
		says               string
	}{
		{"release key", release, good, true, 0, "the signature of terraform-provider-sponson_" + release + "_SHA256SUMS verifies with"},
		{"release key, tampered archive", tampered, good, true, 1, "checksum mismatch"},
		{"another key", release, other, true, 1, "does not verify with"},
		{"changed after signing", changed, good, true, 1, "does not verify with"},
		{"no signature", unsigned, good, true, 1, "has no signature terraform-provider-sponson_" + unsigned + "_SHA256SUMS.sig"},
		{"no key", release, "", true, 0, "is not checked: the release's public key is not known"},
		{"no gpg", release, "", false, 0, "is not checked: gpg is not installed"},
		{"key without gpg", release, good, false, 1, "gpg (with gpgv) is not installed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tools, _ := toolDir(t, "curl", "Linux", "x86_64")
			if tc.gpg {
				withGPG(t, tools)
			}
			args := []string{"--version", tc.version, "--base-url", "file://" + root}
			if tc.key != "" {
				args = append(args, "--gpg-key", tc.key)
			}
			r := install(t, tools, t.TempDir(), args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
				t.Fatalf("exit %d, want %d with %q:\n%s", r.code, tc.code, tc.says, r.stderr)
			}
			if got := installed(t, r.prefix); (got != "") != (tc.code == 0) {
				t.Errorf("exit %d and installed %q", r.code, got)
			}
		})
	}
}

// TestMirrorOnDisk: a release mirrored on disk installs from a file:// URL
// and from a plain directory; it has no latest redirect, so it needs
// --version; a version it lacks is refused like a missing release.
func TestMirrorOnDisk(t *testing.T) {
	t.Parallel()
	root := writeReleases(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"file URL", []string{"--version", release, "--base-url", "file://" + root}, 0, ""},
		{"file URL of localhost", []string{"--version", release, "--base-url", "file://localhost" + root + "/"}, 0, ""},
		{"directory", []string{"--version", release, "--base-url", root}, 0, ""},
		{"latest", []string{"--base-url", root}, 2, "has no latest redirect; pass --version"},
		{"unknown version", []string{"--version", "9.9.9", "--base-url", "file://" + root}, 2, "there is no release 9.9.9"},
		{"not a directory", []string{"--version", release, "--base-url", filepath.Join(root, "nowhere")}, 2, "is not a directory"},
		{"file URL of a host", []string{"--version", release, "--base-url", "file://mirror/releases"}, 2, "a file URL names a local path"},
		{"tampered", []string{"--version", tampered, "--base-url", root}, 1, "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tools, _ := toolDir(t, "curl", "Linux", "x86_64")
			r := install(t, tools, t.TempDir(), tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
				t.Fatalf("exit %d, want %d with %q:\n%s", r.code, tc.code, tc.says, r.stderr)
			}
			if tc.code == 0 {
				if got, want := installed(t, r.prefix), fakeBinary(release, "linux_amd64"); got != want {
					t.Errorf("installed %q, want %q", got, want)
				}
			}
		})
	}
}
