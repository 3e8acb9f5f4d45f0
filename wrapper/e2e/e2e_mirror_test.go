package e2e_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestE2EProviderMirror runs the engine of SPONSON_TEST_ENGINE (tofu or
// terraform: make test runs the e2e tier with each) on its own, with a CLI
// configuration that installs sponson/sponson only from the mirror `sponson
// provider mirror` wrote, as the README tells users to. init must install
// it and record the h1: hash the command printed; later inits must accept
// a lock file with that hash or with the zh: hash alone, and refuse one with
// a wrong hash (so the check is real); plan must run the provider.
func TestE2EProviderMirror(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	engine := os.Getenv("SPONSON_TEST_ENGINE")
	mirror := filepath.Join(t.TempDir(), "mirror")
	r := h.mustRun(t.TempDir(), "provider", "mirror", mirror, "--json")
	var env struct {
		Result struct {
			Mirror struct {
				Version  string   `json:"version"`
				Archives []string `json:"archives"`
				Hashes   []string `json:"hashes"`
			} `json:"mirror"`
			CLIConfig string `json:"cliConfig"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	m := env.Result.Mirror
	if len(m.Hashes) != 2 || !strings.HasPrefix(m.Hashes[0], "h1:") || !strings.HasPrefix(m.Hashes[1], "zh:") {
		t.Fatalf("hashes %v: want an h1: and a zh: hash", m.Hashes)
	}

	home := t.TempDir()
	rc := filepath.Join(home, "mirror.tfrc")
	if err := os.WriteFile(rc, []byte(env.Result.CLIConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := h.workdir("testdata/TestE2EProviderMirror")
	engineRun := func(args ...string) (string, error) {
		cmd := exec.Command(engine, append(args, "-no-color")...)
		cmd.Dir = dir
		// Nothing of the machine's: a fresh HOME and only the mirror's
		// configuration, no dev_overrides.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir(), "TF_CLI_CONFIG_FILE=" + rc, "TF_IN_AUTOMATION=1",
			// The provider detects its context itself without the wrapper.
			"SPONSON_CTX_BRANCH=feat/mirror"}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	lockFile := filepath.Join(dir, ".terraform.lock.hcl")
	// initFresh installs from the mirror again, checking what the lock
	// file says.
	initFresh := func() (string, error) {
		if err := os.RemoveAll(filepath.Join(dir, ".terraform")); err != nil {
			t.Fatal(err)
		}
		return engineRun("init", "-input=false")
	}

	if out, err := initFresh(); err != nil {
		t.Fatalf("init from the mirror: %v\n%s", err, out)
	}
	lock := string(readFile(t, lockFile))
	entry := regexp.MustCompile(`provider "([^"]+)/sponson/sponson" \{\s*version\s*=\s*"([^"]+)"`).FindStringSubmatch(lock)
	if entry == nil || !slices.Contains([]string{"registry.opentofu.org", "registry.terraform.io"}, entry[1]) || entry[2] != m.Version {
		t.Fatalf("the lock file has no entry for sponson/sponson %s of a registry host the mirror serves:\n%s", m.Version, lock)
	}
	if !strings.Contains(lock, `"`+m.Hashes[0]+`"`) {
		t.Errorf("the lock file does not record the h1: hash %s that the mirror command printed:\n%s", m.Hashes[0], lock)
	}
	if out, err := engineRun("init", "-input=false"); err != nil {
		t.Fatalf("init again with the lock file: %v\n%s", err, out)
	}
	if out, err := engineRun("plan", "-input=false"); err != nil || !strings.Contains(out, `"branch-feat-mirror"`) {
		t.Fatalf("plan with the mirrored provider: %v\n%s", err, out)
	}

	writeLock := func(hash string) {
		t.Helper()
		body := "provider \"" + entry[1] + "/sponson/sponson\" {\n  version = \"" + m.Version + "\"\n  hashes = [\n    \"" + hash + "\",\n  ]\n}\n"
		if err := os.WriteFile(lockFile, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, hash := range m.Hashes {
		writeLock(hash)
		if out, err := initFresh(); err != nil {
			t.Errorf("init with only %s in the lock file: %v\n%s", hash, err, out)
		}
	}
	// A hash of something else: the engine must refuse the package, or the
	// two checks above prove nothing.
	writeLock("zh:" + strings.Repeat("0", 64))
	if out, err := initFresh(); err == nil || !strings.Contains(strings.ToLower(out), "checksum") {
		t.Errorf("init accepted the mirror's package with a wrong hash in the lock file (err %v):\n%s", err, out)
	}
}
