package e2e_test

import (
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestE2EKeysAreNotBelowSponson (issue 28 item 1): sponson is started with
// state and plan keys in its environment, as CI gives them; a provisioner
// of the configuration walks its ancestors' /proc/PID/environ up to and
// including sponson and finds no key in any of them, sponson's own
// included (it re-executed itself without them).
func TestE2EKeysAreNotBelowSponson(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/keys")
	out := filepath.Join(t.TempDir(), "ancestors.tsv")
	h.mustRunEnv(dir, testKeys, "apply", "--scope", "pr-1", "-var", "out="+out)
	checkAncestors(t, out, os.Geteuid() == 0)
}

// checkAncestors reads the provisioner's walk in out: no ancestor up to
// sponson holds a key variable. rootReader says the walk ran as root, who
// reads every process's environment, so sponson's must have been readable
// (else the zero count proves nothing); as another user the walk must read
// the engine's environment (same user, dumpable) but not sponson's, which
// marks itself non-dumpable.
func checkAncestors(t *testing.T, out string, rootReader bool) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(readFile(t, out))), "\n")
	sawSponson, sawEngine := false, false
	for _, line := range lines {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("ancestor line %q", line)
		}
		if f[2] != "0" {
			t.Errorf("ancestor %s holds %s key variables in its environment", f[0], f[2])
		}
		switch f[0] {
		case "tofu", "terraform":
			sawEngine = true
			if f[1] != "1" {
				t.Errorf("the walk could not read the engine's environment: the check proves nothing\n%s", strings.Join(lines, "\n"))
			}
		case "sponson":
			sawSponson = true
			if rootReader && f[1] != "1" {
				t.Errorf("root could not read sponson's environment: the check proves nothing")
			}
			if !rootReader && f[1] != "0" {
				t.Errorf("a process of the same user read sponson's environment: sponson is dumpable")
			}
		}
		if sawSponson {
			break
		}
	}
	if !sawSponson || !sawEngine {
		t.Fatalf("the provisioner did not find the engine and sponson among its ancestors:\n%s", strings.Join(lines, "\n"))
	}
}

// TestE2EKeysAreNotBelowSponsonNonRoot is the walk of
// TestE2EKeysAreNotBelowSponson as an unprivileged user, as most CI
// runners run jobs: the engine, its providers and provisioners run as the
// same user as sponson, so only sponson's own measures (the re-exec without
// the keys, and being non-dumpable) stand between them and the keys. Run as
// root, the test drops to the user nobody; run as another user, it is that
// user already.
func TestE2EKeysAreNotBelowSponsonNonRoot(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	if os.Geteuid() != 0 {
		dir := h.workdir("testdata/keys")
		out := filepath.Join(t.TempDir(), "ancestors.tsv")
		h.mustRunEnv(dir, testKeys, "apply", "--scope", "pr-1", "-var", "out="+out)
		checkAncestors(t, out, false)
		return
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody to drop to: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	// Everything the unprivileged run needs, in a tree it can read: the
	// test's own temporary directories are root's alone.
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // the test's directory is root's alone
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(base, "bin")
	sponson := copyExecutable(t, h.bin, filepath.Join(bin, "sponson"))
	engine := copyExecutable(t, os.Getenv("SPONSON_TEST_ENGINE"), filepath.Join(bin, filepath.Base(os.Getenv("SPONSON_TEST_ENGINE"))))
	work := filepath.Join(base, "work")
	if err := os.CopyFS(work, os.DirFS(h.workdir("testdata/keys"))); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"home", "tmp", "out"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rc := filepath.Join(base, "empty.tfrc")
	if err := os.WriteFile(rc, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{work, filepath.Join(base, "home"), filepath.Join(base, "tmp"), filepath.Join(base, "out")} {
		if err := chownTree(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(base, "out", "ancestors.tsv")
	env := append([]string{
		"PATH=" + bin + ":/usr/bin:/bin",
		"HOME=" + filepath.Join(base, "home"),
		"TMPDIR=" + filepath.Join(base, "tmp"),
		"TF_CLI_CONFIG_FILE=" + rc,
		"SPONSON_ENGINE=" + engine,
		"SPONSON_STACK=" + e2eStack,
	}, testKeys...)
	cmd := h.guarded(work, env, sponson, "apply", "--scope", "pr-1", "-var", "out="+out)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	stdout, stderr, err := h.runGuarded(cmd)
	if err != nil {
		t.Fatalf("sponson apply as nobody: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	checkAncestors(t, out, false)
}

// testKeys are the key variables a CI job gives sponson.
var testKeys = []string{
	"SPONSON_STATE_KEY=" + strings.Repeat("ab", 32),
	"SPONSON_STATE_KEY_PRODUCTION=" + strings.Repeat("cd", 32),
	"SPONSON_PLAN_KEY=" + strings.Repeat("ef", 32),
}

// copyExecutable copies the file src (symlinks followed) to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(o, in); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// chownTree gives the tree at root to uid:gid.
func chownTree(root string, uid, gid int) error {
	return filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}
