package e2e_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// TestE2ECITemplatesGitLabInstall runs the install lines of the GitLab
// template's before_script as a job would, with only the hosts changed: an
// HTTPS server on loopback serves install.sh where raw.githubusercontent.com
// would, and a release of the built sponson where GitHub's release page
// would (SPONSON_BASE_URL). The script's pinned checksum must match, and the
// installed sponson must run.
func TestE2ECITemplatesGitLabInstall(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	p := loadGitLab(t)
	version := p.variables["SPONSON_VERSION"]
	plain := strings.TrimPrefix(version, "v")

	var archive bytes.Buffer
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	bin := readFile(t, h.bin)
	if err := tw.WriteHeader(&tar.Header{Name: "sponson", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("sponson_%s_%s_%s.tar.gz", plain, runtime.GOOS, runtime.GOARCH)
	files := map[string][]byte{
		"/raw/" + version + "/install.sh":                                                       readFile(t, installScript),
		"/releases/download/v" + plain + "/" + name:                                             archive.Bytes(),
		"/releases/download/v" + plain + "/terraform-provider-sponson_" + plain + "_SHA256SUMS": fmt.Appendf(nil, "%x  %s\n", sha256.Sum256(archive.Bytes()), name),
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}

	prefix := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(),
		"CURL_CA_BUNDLE=" + ca,
		"SPONSON_BASE_URL=" + srv.URL + "/releases",
		// The job runs as root into /usr/local; the test installs elsewhere.
		"SPONSON_PREFIX=" + prefix,
	}
	for k, v := range p.variables {
		env = append(env, k+"="+v)
	}
	lines := p.byName["preview"].BeforeScript
	ran := 0
	for _, l := range lines {
		if !strings.Contains(l, "sponson") || strings.Contains(l, "git remote") {
			continue
		}
		l = strings.ReplaceAll(l, "https://raw.githubusercontent.com/sponson/terraform-provider-sponson", srv.URL+"/raw")
		// /tmp/install-sponson.sh is shared by every job on a runner; a
		// test run gets its own.
		l = strings.ReplaceAll(l, "/tmp/install-sponson.sh", filepath.Join(prefix, "install-sponson.sh"))
		cmd := exec.Command("sh", "-e", "-c", l)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", l, err, out)
		}
		ran++
	}
	if ran != 3 {
		t.Fatalf("ran %d install lines of %v, want 3 (download, checksum, install)", ran, lines)
	}
	got, err := exec.Command(filepath.Join(prefix, "bin", "sponson"), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want, err := exec.Command(h.bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the installed sponson says %q, want %q", got, want)
	}

	// The same lines refuse a script that is not the one pinned.
	files["/raw/"+version+"/install.sh"] = append(readFile(t, installScript), []byte("\necho changed\n")...)
	l := strings.ReplaceAll(lines[0], "https://raw.githubusercontent.com/sponson/terraform-provider-sponson", srv.URL+"/raw")
	l = strings.ReplaceAll(l, "/tmp/install-sponson.sh", filepath.Join(prefix, "changed.sh"))
	check := strings.ReplaceAll(lines[1], "/tmp/install-sponson.sh", filepath.Join(prefix, "changed.sh"))
	cmd := exec.Command("sh", "-e", "-c", l+"\n"+check)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("the checksum line accepted a changed install.sh:\n%s", out)
	}

	// With the release's public key in SPONSON_GPG_KEY (a GitLab variable
	// of type File is a path), the same lines check the signature of the
	// checksum file with gpg, and refuse one another key made.
	if _, err := exec.LookPath("gpgv"); err != nil {
		t.Skip("gpgv is not installed: the signature check is not run")
	}
	signer, err := openpgp.NewEntity("Sponson Releases", "", "releases@example.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := openpgp.NewEntity("Someone Else", "", "else@example.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	files["/raw/"+version+"/install.sh"] = readFile(t, installScript)
	sumsPath := "/releases/download/v" + plain + "/terraform-provider-sponson_" + plain + "_SHA256SUMS"
	keyFile := filepath.Join(t.TempDir(), "release.asc")
	var pub bytes.Buffer
	aw, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := signer.Serialize(aw); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pub.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		by     *openpgp.Entity
		ok     bool
		output string
	}{
		{"signed by the release key", signer, true, "verifies with " + keyFile},
		{"signed by another key", other, false, "does not verify with " + keyFile},
	} {
		var sig bytes.Buffer
		if err := openpgp.DetachSign(&sig, tc.by, bytes.NewReader(files[sumsPath]), nil); err != nil {
			t.Fatal(err)
		}
		files[sumsPath+".sig"] = sig.Bytes()
		signedPrefix := t.TempDir()
		var out []byte
		var runErr error
		for _, l := range lines {
			if !strings.Contains(l, "sponson") || strings.Contains(l, "git remote") {
				continue
			}
			l = strings.ReplaceAll(l, "https://raw.githubusercontent.com/sponson/terraform-provider-sponson", srv.URL+"/raw")
			l = strings.ReplaceAll(l, "/tmp/install-sponson.sh", filepath.Join(signedPrefix, "install-sponson.sh"))
			cmd := exec.Command("sh", "-e", "-c", l)
			cmd.Env = append(append([]string{}, env...), "SPONSON_PREFIX="+signedPrefix, "SPONSON_GPG_KEY="+keyFile)
			if out, runErr = cmd.CombinedOutput(); runErr != nil {
				break
			}
		}
		if (runErr == nil) != tc.ok || !strings.Contains(string(out), tc.output) {
			t.Errorf("%s: error %v, want ok %v with %q:\n%s", tc.name, runErr, tc.ok, tc.output, out)
		}
		if _, err := os.Stat(filepath.Join(signedPrefix, "bin", "sponson")); (err == nil) != tc.ok {
			t.Errorf("%s: installed %v, want %v", tc.name, err == nil, tc.ok)
		}
	}
}
