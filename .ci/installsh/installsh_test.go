// Package installsh tests the repository's install.sh the way a user runs
// it: with sh, against an HTTP server on loopback that serves a release laid
// out as on GitHub (download/v<version>/ and the latest redirect), with a
// fake uname for each platform and a fresh HOME and prefix per run. The
// archives hold small shell scripts named sponson, so every platform's
// archive "runs" here and the test can see which one was installed.
//
// It lives under .ci/ because it checks a repository file, not a Go package:
// run it with `go test ./.ci/installsh` (make test's unit tier does).
package installsh

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	script  = "../../install.sh"
	release = "1.2.3"
	// tampered is a release whose SHA256SUMS does not match its archives.
	tampered = "6.6.6"
)

var platforms = []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"}

// fakeBinary is the sponson of an archive: it says which archive it is from.
func fakeBinary(version, platform string) string {
	return fmt.Sprintf("#!/bin/sh\necho \"sponson %s (fake, %s)\"\n", version, platform)
}

func tarGz(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{{"README.md", "# sponson\n"}, {name, content}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serveReleases writes releases `release` and `tampered` under a directory
// and serves it like GitHub's release page.
func serveReleases(t *testing.T) string {
	t.Helper()
	root := writeReleases(t)
	files := http.FileServer(http.Dir(root))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest" {
			http.Redirect(w, r, "/tag/v"+release, http.StatusFound)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/tag/") {
			_, _ = io.WriteString(w, "a release page")
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// writeReleases lays releases `release` and `tampered` out in a directory
// as GitHub's release page does (download/v<version>/), each checksum file
// with its detached signature by releaseKey, as the release job signs it.
func writeReleases(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, v := range []string{release, tampered} {
		dir := filepath.Join(root, "download", "v"+v)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var sums strings.Builder
		for _, p := range platforms {
			name := fmt.Sprintf("sponson_%s_%s.tar.gz", v, p)
			archive := tarGz(t, "sponson", fakeBinary(v, p))
			fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(archive), name)
			if v == tampered {
				archive = tarGz(t, "sponson", "#!/bin/sh\necho tampered\n")
			}
			if err := os.WriteFile(filepath.Join(dir, name), archive, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&sums, "%x  terraform-provider-sponson_%s_linux_amd64.zip\n", sha256.Sum256([]byte("zip")), v)
		sumsPath := filepath.Join(dir, "terraform-provider-sponson_"+v+"_SHA256SUMS")
		if err := os.WriteFile(sumsPath, []byte(sums.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		signFile(t, releaseKey(t), sumsPath)
	}
	return root
}

// toolDir holds the commands install.sh may use, and only those: a fake
// uname, a fake sudo that records being called, and links to the real
// tools, with curl or wget as the downloader.
func toolDir(t *testing.T, downloader, unameS, unameM string) (dir, sudoMarker string) {
	t.Helper()
	dir = t.TempDir()
	sudoMarker = filepath.Join(t.TempDir(), "sudo-was-called")
	for _, tool := range []string{"sh", "tar", "gzip", "sha256sum", "awk", "cut", "mktemp", "rm", "mkdir", "cp", "chmod", "mv", "id", "sed", "cat", "bash", downloader} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed", tool)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	uname := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in -s) echo %q ;; -m) echo %q ;; *) echo %q ;; esac\n", unameS, unameM, unameS)
	sudo := fmt.Sprintf("#!/bin/sh\n: >%q\nexit 1\n", sudoMarker)
	for name, body := range map[string]string{"uname": uname, "sudo": sudo} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, sudoMarker
}

type run struct {
	code   int
	stderr string
	prefix string
}

// install runs install.sh with args, a fresh HOME and only the tools of
// toolDir on PATH. prefix is created by the caller when it needs contents.
func install(t *testing.T, tools, prefix string, args ...string) run {
	t.Helper()
	cmd := exec.Command(filepath.Join(tools, "sh"), append([]string{script, "--prefix", prefix}, args...)...)
	cmd.Env = []string{"PATH=" + tools, "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	r := run{stderr: stderr.String(), prefix: prefix}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func installed(t *testing.T, prefix string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(prefix, "bin", "sponson"))
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leftovers lists what is in prefix/bin besides sponson: an install that
// failed or finished leaves no temporary file there.
func leftovers(t *testing.T, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(prefix, "bin"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != "sponson" {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestPlatforms(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	for _, tc := range []struct {
		unameS, unameM, want string
	}{
		{"Linux", "x86_64", "linux_amd64"},
		{"Linux", "amd64", "linux_amd64"},
		{"Linux", "aarch64", "linux_arm64"},
		{"Linux", "arm64", "linux_arm64"},
		{"Linux", "armv8l", "linux_arm64"},
		{"Darwin", "x86_64", "darwin_amd64"},
		{"Darwin", "arm64", "darwin_arm64"},
	} {
		for _, dl := range []string{"curl", "wget"} {
			t.Run(tc.unameS+"_"+tc.unameM+"_"+dl, func(t *testing.T) {
				t.Parallel()
				tools, sudo := toolDir(t, dl, tc.unameS, tc.unameM)
				r := install(t, tools, t.TempDir(), "--version", "v"+release, "--base-url", base)
				if r.code != 0 {
					t.Fatalf("exit %d:\n%s", r.code, r.stderr)
				}
				if got, want := installed(t, r.prefix), fakeBinary(release, tc.want); got != want {
					t.Errorf("installed %q, want the %s archive's %q", got, tc.want, want)
				}
				if _, err := os.Stat(sudo); err == nil {
					t.Errorf("sudo was called for a writable prefix")
				}
				if l := leftovers(t, r.prefix); len(l) > 0 {
					t.Errorf("left in the prefix: %v", l)
				}
			})
		}
	}
}

func TestUnsupportedPlatform(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	for _, tc := range []struct{ unameS, unameM string }{
		{"FreeBSD", "amd64"},
		{"Linux", "ppc64le"},
		{"Linux", "i686"},
		{"MINGW64_NT-10.0-19045", "x86_64"},
		{"SunOS", "i86pc"},
	} {
		t.Run(tc.unameS+"_"+tc.unameM, func(t *testing.T) {
			t.Parallel()
			tools, _ := toolDir(t, "curl", tc.unameS, tc.unameM)
			r := install(t, tools, t.TempDir(), "--version", release, "--base-url", base)
			if r.code != 2 || !strings.Contains(r.stderr, "unsupported platform "+tc.unameS+"/"+tc.unameM) {
				t.Errorf("exit %d, want 2 with \"unsupported platform %s/%s\":\n%s", r.code, tc.unameS, tc.unameM, r.stderr)
			}
			if got := installed(t, r.prefix); got != "" {
				t.Errorf("installed %q on an unsupported platform", got)
			}
		})
	}
}

func TestUnknownVersion(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	for _, dl := range []string{"curl", "wget"} {
		t.Run(dl, func(t *testing.T) {
			t.Parallel()
			tools, _ := toolDir(t, dl, "Linux", "x86_64")
			r := install(t, tools, t.TempDir(), "--version", "9.9.9", "--base-url", base)
			if r.code != 2 || !strings.Contains(r.stderr, "there is no release 9.9.9") {
				t.Errorf("exit %d, want 2 with \"there is no release 9.9.9\":\n%s", r.code, r.stderr)
			}
			if got := installed(t, r.prefix); got != "" {
				t.Errorf("installed %q", got)
			}
		})
	}
}

func TestLatest(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	tools, _ := toolDir(t, "curl", "Linux", "x86_64")
	r := install(t, tools, t.TempDir(), "--base-url", base)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if got, want := installed(t, r.prefix), fakeBinary(release, "linux_amd64"); got != want {
		t.Errorf("installed %q, want %q (the release /latest redirects to)", got, want)
	}
}

// TestChecksumMismatch: the archive does not match SHA256SUMS; nothing is
// unpacked into the prefix, and the binary already there is untouched.
func TestChecksumMismatch(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	for _, existing := range []string{"", "#!/bin/sh\necho old\n"} {
		t.Run(fmt.Sprintf("existing=%t", existing != ""), func(t *testing.T) {
			t.Parallel()
			tools, _ := toolDir(t, "curl", "Linux", "x86_64")
			prefix := t.TempDir()
			if existing != "" {
				writeBinary(t, prefix, existing)
			}
			r := install(t, tools, prefix, "--version", tampered, "--base-url", base)
			if r.code != 1 || !strings.Contains(r.stderr, "checksum mismatch for sponson_"+tampered+"_linux_amd64.tar.gz") || !strings.Contains(r.stderr, "nothing was installed") {
				t.Errorf("exit %d, want 1 with the checksum mismatch:\n%s", r.code, r.stderr)
			}
			if got := installed(t, prefix); got != existing {
				t.Errorf("prefix holds %q, want %q", got, existing)
			}
			if l := leftovers(t, prefix); len(l) > 0 {
				t.Errorf("left in the prefix: %v", l)
			}
		})
	}
}

func writeBinary(t *testing.T, prefix, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, "bin", "sponson"), []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestReplacesAtomically: an older sponson is replaced by a rename, not
// rewritten in place, so a process that has the old file open (a running
// sponson) keeps reading the old file whole.
func TestReplacesAtomically(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	tools, _ := toolDir(t, "curl", "Linux", "x86_64")
	prefix := t.TempDir()
	old := "#!/bin/sh\necho \"sponson 1.0.0 (old)\"\n"
	writeBinary(t, prefix, old)
	f, err := os.Open(filepath.Join(prefix, "bin", "sponson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	r := install(t, tools, prefix, "--version", release, "--base-url", base)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if got, want := installed(t, prefix), fakeBinary(release, "linux_amd64"); got != want {
		t.Errorf("installed %q, want %q", got, want)
	}
	still, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(still) != old {
		t.Errorf("the open old binary now reads %q: it was overwritten in place, not replaced", still)
	}
	if l := leftovers(t, prefix); len(l) > 0 {
		t.Errorf("left in the prefix: %v", l)
	}
	st, err := os.Stat(filepath.Join(prefix, "bin", "sponson"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", st.Mode().Perm())
	}
}
