package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
)

// TestE2EUserTerraformrcMirror: with no TF_CLI_CONFIG_FILE, the run uses
// the CLI configuration the engine would read by itself, here a
// ~/.terraformrc (OpenTofu reads it when there is no ~/.tofurc) whose
// provider_installation has a filesystem mirror holding the real fixture
// provider and forbids direct installation of it. Nothing else can provide
// sponson/fixture (no registry is reachable, no dev_overrides), so the run
// succeeds only if the mirror was used.
func TestE2EUserTerraformrcMirror(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	bin := fixtureprovider.Build(t)
	home := t.TempDir()
	mirror := filepath.Join(t.TempDir(), "mirror")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"registry.opentofu.org", "registry.terraform.io"} {
		pkg := filepath.Join(mirror, host, "sponson", "fixture", "1.2.3", runtime.GOOS+"_"+runtime.GOARCH)
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "terraform-provider-fixture_v1.2.3"), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rc := fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.opentofu.org/sponson/fixture", "registry.terraform.io/sponson/fixture"]
  }
  direct {
    exclude = ["registry.opentofu.org/sponson/fixture", "registry.terraform.io/sponson/fixture"]
  }
}
`, mirror)
	if err := os.WriteFile(filepath.Join(home, ".terraformrc"), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	objects := t.TempDir()
	dir := h.workdir("testdata/fixture")
	env := []string{"HOME=" + home, "TF_CLI_CONFIG_FILE=", "FIXTURE_DIR=" + objects}
	r := h.mustRunEnv(dir, env, "apply", "--scope", "pr-1", "-var", objectsVar("a", "mirrored"))
	if _, err := os.Stat(filepath.Join(objects, "objects", "mirrored.json")); err != nil {
		t.Fatalf("the provider from the mirror did not create the object: %v\n%s", err, r.stderr)
	}
	lock := string(readFile(t, filepath.Join(dir, ".terraform.lock.hcl")))
	if !strings.Contains(lock, `"1.2.3"`) {
		t.Errorf("the lock file does not record the mirror's version 1.2.3:\n%s", lock)
	}
	// The generated configuration, which holds the user's, stays in the
	// run's private temporary directory: nothing new in the home directory
	// or the configuration directory names it.
	for _, d := range []string{home, dir} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tfrc") {
				t.Errorf("a CLI configuration was left in %s: %s", d, e.Name())
			}
		}
	}

	// Without the user's configuration the same run fails: the test is not
	// passing for another reason.
	if err := os.Remove(filepath.Join(home, ".terraformrc")); err != nil {
		t.Fatal(err)
	}
	other := h.workdir("testdata/fixture")
	if r := h.run(other, env, "apply", "--scope", "pr-2", "-var", objectsVar("b", "unmirrored")); r.exit == 0 {
		t.Fatalf("the run succeeded without the user's mirror:\n%s", r.stderr)
	}
}

// TestE2EMissingCLIConfigFile: TF_CLI_CONFIG_FILE names a file that does
// not exist (as setup scripts leave it). The engine alone would warn on
// every command, on stdout, which breaks `show -json`; the run works with no
// CLI configuration, as the engine would, and says so once.
func TestE2EMissingCLIConfigFile(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/cilog")
	gone := filepath.Join(t.TempDir(), "gone.tfrc")
	for _, cmd := range []string{"plan", "apply"} {
		r := h.run(dir, []string{"TF_CLI_CONFIG_FILE=" + gone}, cmd, "--scope", "main")
		if r.exit != 0 {
			t.Fatalf("%s with a missing TF_CLI_CONFIG_FILE: exit %d\n%s%s", cmd, r.exit, r.stdout, r.stderr)
		}
		log := r.stdout + r.stderr
		if n := strings.Count(log, gone); n != 1 {
			t.Errorf("%s names the missing file %d times, want once:\n%s", cmd, n, log)
		}
		if strings.Contains(log, "problems with the CLI configuration") {
			t.Errorf("%s shows the engine's warning about the missing file:\n%s", cmd, log)
		}
	}
}
