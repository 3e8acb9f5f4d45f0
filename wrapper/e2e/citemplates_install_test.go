package e2e_test

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The templates install sponson the way a user will, from a release: on
// GitHub through the action at the repository root, on GitLab through
// install.sh pinned by its checksum. e2e_citemplates_install_test.go runs
// the GitLab install lines; .ci/installsh runs the action's steps.

const (
	actionFile    = "../../action.yml"
	installScript = "../../install.sh"
	actionRepo    = "sponson/terraform-provider-sponson"
)

func actionInputs(t *testing.T) []string {
	t.Helper()
	var a struct {
		Inputs map[string]any `yaml:"inputs"`
	}
	if err := yaml.Unmarshal(readFile(t, actionFile), &a); err != nil {
		t.Fatalf("%s: %v", actionFile, err)
	}
	var names []string
	for k := range a.Inputs {
		names = append(names, k)
	}
	return names
}

func TestCITemplatesGitHubInstall(t *testing.T) {
	t.Parallel()
	w := loadGitHub(t)
	inputs := actionInputs(t)
	version := w.Env["SPONSON_VERSION"]
	if !strings.HasPrefix(version, "v") {
		t.Fatalf("env SPONSON_VERSION %q: want a release tag such as v0.1.0", version)
	}
	jobs := 0
	for _, name := range w.Jobs.names {
		j := w.Jobs.byKey[name]
		first := slices.IndexFunc(j.Steps, func(s ghStep) bool { return len(sponsonLines(s.Run)) > 0 })
		if first < 0 {
			continue
		}
		jobs++
		var installs []ghStep
		for _, s := range j.Steps[:first] {
			if strings.HasPrefix(s.Uses, actionRepo+"@") {
				installs = append(installs, s)
			}
			if strings.Contains(s.Run, "go install") || strings.HasPrefix(s.Uses, "actions/setup-go@") || strings.HasPrefix(s.Uses, "opentofu/setup-opentofu@") {
				t.Errorf("job %s installs with %q%s: the action installs sponson and the engine", name, s.Run, s.Uses)
			}
		}
		if len(installs) != 1 {
			t.Errorf("job %s: %d steps use %s before running sponson, want 1", name, len(installs), actionRepo)
			continue
		}
		s := installs[0]
		if ref := strings.TrimPrefix(s.Uses, actionRepo+"@"); ref != version {
			t.Errorf("job %s uses the action at %s but installs SPONSON_VERSION %s: the action and the binary must be one release", name, ref, version)
		}
		if s.With["version"] != "${{ env.SPONSON_VERSION }}" || s.With["engine"] != "tofu" || s.With["engine-version"] != "${{ env.TOFU_VERSION }}" {
			t.Errorf("job %s: with %v: want the pinned SPONSON_VERSION and OpenTofu TOFU_VERSION", name, s.With)
		}
		for k := range s.With {
			if !slices.Contains(inputs, k) {
				t.Errorf("job %s passes %s, which action.yml does not declare (inputs %v)", name, k, inputs)
			}
		}
	}
	// preview-plan, preview, preview-destroy, chatops-plan, main,
	// production-plan, production, gc and drift.
	if jobs != 9 {
		t.Errorf("%d jobs run sponson, want 9", jobs)
	}
}

func TestCITemplatesGitLabInstall(t *testing.T) {
	t.Parallel()
	p := loadGitLab(t)
	sum := fmt.Sprintf("%x", sha256.Sum256(readFile(t, installScript)))
	if got := p.variables["SPONSON_INSTALL_SHA256"]; got != sum {
		t.Errorf("SPONSON_INSTALL_SHA256 is %q, but install.sh's SHA-256 is %s: update the template with the script", got, sum)
	}
	want := []string{
		`curl --proto '=https' --tlsv1.2 -fsSL "https://raw.githubusercontent.com/` + actionRepo + `/${SPONSON_VERSION}/install.sh" -o /tmp/install-sponson.sh`,
		`echo "${SPONSON_INSTALL_SHA256}  /tmp/install-sponson.sh" | sha256sum -c -`,
		`sh /tmp/install-sponson.sh --version "${SPONSON_VERSION}"`,
	}
	for _, name := range p.jobs {
		j := p.byName[name]
		if len(j.BeforeScript) < len(want) {
			t.Errorf("job %s: before_script %v lacks the install", name, j.BeforeScript)
			continue
		}
		if diff := cmpLines(want, j.BeforeScript[:len(want)]); diff != "" {
			t.Errorf("job %s: the install lines (-want +got):\n%s", name, diff)
		}
		for _, l := range append(j.BeforeScript, j.Script...) {
			if strings.Contains(l, "go install") {
				t.Errorf("job %s: %q: sponson comes from its release", name, l)
			}
		}
	}
}

func cmpLines(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	return "-" + strings.Join(want, "\n-") + "\n+" + strings.Join(got, "\n+")
}

// installPin is a pinned SHA-256 of install.sh in a CI file.
var installPin = regexp.MustCompile(`SPONSON_INSTALL_SHA256:\s*"?([0-9a-fA-F]*)"?`)

// TestCITemplatesInstallPins: every file of examples/ci/ and action.yml that
// fetches install.sh pins it, and every pin is the SHA-256 of the
// repository's install.sh: a stale pin fails every job of its pipeline at
// `sha256sum -c` on its first line.
func TestCITemplatesInstallPins(t *testing.T) {
	t.Parallel()
	sum := fmt.Sprintf("%x", sha256.Sum256(readFile(t, installScript)))
	files, err := filepath.Glob("../../examples/ci/*")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, actionFile)
	pinned := 0
	for _, f := range files {
		text := string(readFile(t, f))
		pins := installPin.FindAllStringSubmatch(text, -1)
		if strings.Contains(text, "/install.sh\" -o ") && len(pins) == 0 {
			t.Errorf("%s downloads install.sh without pinning its SHA-256 (SPONSON_INSTALL_SHA256)", f)
		}
		for _, m := range pins {
			pinned++
			if !strings.EqualFold(m[1], sum) {
				t.Errorf("%s pins SPONSON_INSTALL_SHA256 %q, but install.sh's SHA-256 is %s: update the pin with the script", f, m[1], sum)
			}
		}
	}
	if pinned < 2 {
		t.Errorf("%d pins of install.sh in %v: want at least gitlab-ci.yml's and gitlab-ci-monorepo.yml's", pinned, files)
	}
}
