package e2e_test

import (
	"flag"
	"fmt"
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

// TestE2EPlanErrorAnnotated (issue 52 item 4): in a GitHub Actions job, a
// plan the engine refuses for an error in the configuration (a reference to
// a resource that is not declared, which init accepts) is annotated with the
// file and line of the error, as validate's annotations are; the plan's own
// diagnostics are text and carry none. Outside GitHub Actions, no workflow
// command is printed.
func TestE2EPlanErrorAnnotated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := h.workdir("testdata/cilog")
	bad := "\noutput \"broken\" {\n  value = terraform_data.missing.output\n}\n"
	f, err := os.OpenFile(filepath.Join(dir, "main.tf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(bad)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Count(string(readFile(t, filepath.Join(dir, "main.tf"))), "\n") - 1 // the value's line
	r := h.run(dir, []string{"GITHUB_ACTIONS=true", "GITHUB_WORKSPACE=" + dir, rulesFromCheckout}, "plan", "--json", "--scope", "pr-1")
	if r.exit == 0 || r.code(t) != "ENGINE_FAILED" {
		t.Fatalf("a plan of a broken configuration: exit %d %s\n%s%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	want := fmt.Sprintf("::error file=main.tf,line=%d,col=", line)
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "Reference to undeclared resource") {
		t.Errorf("the failed plan's annotations lack %q naming the undeclared resource:\n%s", want, r.stderr)
	}
	if !strings.Contains(r.stderr, "::error title=sponson plan%3A ENGINE_FAILED::") {
		t.Errorf("the failed plan lacks its outcome's annotation:\n%s", r.stderr)
	}
	r = h.run(dir, nil, "plan", "--scope", "pr-1")
	if r.exit == 0 || strings.Contains(r.stdout+r.stderr, "::error") {
		t.Errorf("outside GitHub Actions: exit %d, workflow commands printed:\n%s%s", r.exit, r.stdout, r.stderr)
	}
}
