package e2e_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden CI logs of e2e_cilog_test.go")

// TestE2ECILog: what a CI log shows of a first apply and of a no-change
// apply, compared with golden files per engine (testdata/cilog/*.golden;
// `go test -run TestE2ECILog -update` rewrites them). The log must read like
// the engine's own: sponson's header and closing line around the engine's
// output, and nothing the user did not cause (no development-override
// warning, no lock-file warning, no message per resource of sponson's).
// stdout and stderr go to one file, as a CI runner's log takes them, so the
// order is the real one. Run ids, object ids and timings are normalised.
func TestE2ECILog(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := h.workdir("testdata/cilog")
	engine := engineName()
	for _, step := range []string{"first-apply", "no-change-apply"} {
		got := normaliseLog(dir, h.combined(t, dir, "apply", "--scope", "main"))
		golden := filepath.Join("testdata", "cilog", step+"."+engine+".golden")
		if *updateGolden {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test -run TestE2ECILog -update writes it)", err)
		}
		if d := cmp.Diff(string(want), got); d != "" {
			t.Errorf("the CI log of the %s differs from %s (-want +got):\n%s", step, golden, d)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".terraform.lock.hcl")); err == nil {
		t.Error("the applies wrote a lock file for a configuration whose only installed provider is built in")
	}
}

// combined runs sponson with stdout and stderr on one file, and returns what
// it wrote; the run must succeed.
func (h *harness) combined(t *testing.T, dir string, args ...string) string {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := h.command(dir, nil, args...)
	cmd.Stdout, cmd.Stderr = f, f
	runErr := cmd.Run()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatalf("sponson %s: %v\n%s", strings.Join(args, " "), runErr, b)
	}
	return string(b)
}

// engineName is "opentofu" or "terraform", after the engine under test.
func engineName() string {
	if strings.Contains(filepath.Base(os.Getenv("SPONSON_TEST_ENGINE")), "tofu") {
		return "opentofu"
	}
	return "terraform"
}

var logNormalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "OBJECT-ID"},
	{regexp.MustCompile(`\brun(-| )[0-9a-f]{8}\b`), "run${1}RUN-ID"},
	{regexp.MustCompile(`\bafter \d+s\b`), "after Ns"},
	{regexp.MustCompile(`\[\d+s elapsed\]`), "[Ns elapsed]"},
}

// normaliseLog replaces what differs between runs of the same log.
func normaliseLog(dir, log string) string {
	log = strings.ReplaceAll(log, dir, "DIR")
	for _, n := range logNormalisers {
		log = n.re.ReplaceAllString(log, n.with)
	}
	return log
}
