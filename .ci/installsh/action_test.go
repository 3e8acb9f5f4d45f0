package installsh

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The action's own steps (action.yml at the root) run here as GitHub runs
// a composite action's `run` steps: with bash, the ${{ }} expressions of
// their env replaced, and GITHUB_OUTPUT, GITHUB_PATH and GITHUB_ENV files.
// Steps that `uses:` another action (setup-opentofu, setup-terraform) cannot
// run here; a fake engine on PATH stands in for what they install.

const actionFile = "../../action.yml"

type actionStep struct {
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
}

type action struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

var expr = regexp.MustCompile(`\$\{\{\s*([a-z_.-]+)\s*\}\}`)

type actionRun struct {
	code          int
	log           string
	outputs       map[string]string
	path, envFile string
	runnerTemp    string
}

// runAction runs the action's steps with inputs (unset ones take their
// defaults) and the github context values ref and path.
func runAction(t *testing.T, tools string, inputs map[string]string, ref string) actionRun {
	t.Helper()
	var a action
	if err := yaml.Unmarshal(mustRead(t, actionFile), &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using %q, want composite", a.Runs.Using)
	}
	ctx := map[string]string{"github.action_ref": ref}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx["github.action_path"] = root
	for name, in := range a.Inputs {
		ctx["inputs."+name] = in.Default
	}
	for name, v := range inputs {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("action.yml has no input %s", name)
		}
		ctx["inputs."+name] = v
	}
	eval := func(s string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string {
			k := expr.FindStringSubmatch(m)[1]
			v, ok := ctx[k]
			if !ok {
				t.Fatalf("the test does not know %s (in %q)", k, s)
			}
			return v
		})
	}
	dir := t.TempDir()
	r := actionRun{outputs: map[string]string{}, path: filepath.Join(dir, "path"), envFile: filepath.Join(dir, "env"), runnerTemp: t.TempDir()}
	var log bytes.Buffer
	for i, s := range a.Runs.Steps {
		if s.If != "" {
			m := regexp.MustCompile(`^inputs\.engine == '(\w+)'$`).FindStringSubmatch(s.If)
			if m == nil {
				t.Fatalf("step %d: the test cannot evaluate if: %s", i, s.If)
			}
			if ctx["inputs.engine"] != m[1] {
				continue
			}
		}
		if s.Uses != "" {
			continue
		}
		out := filepath.Join(dir, "output-"+s.ID)
		cmd := exec.Command(filepath.Join(tools, "bash"), "-e", "-c", s.Run)
		cmd.Env = []string{"PATH=" + tools, "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(), "RUNNER_TEMP=" + r.runnerTemp,
			"GITHUB_OUTPUT=" + out, "GITHUB_PATH=" + r.path, "GITHUB_ENV=" + r.envFile}
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+eval(v))
		}
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			r.code, r.log = ee.ExitCode(), log.String()
			return r
		}
		b, _ := os.ReadFile(out)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				ctx["steps."+s.ID+".outputs."+k] = v
			}
		}
	}
	for name, o := range a.Outputs {
		r.outputs[name] = eval(o.Value)
	}
	r.log = log.String()
	return r
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestActionVersionFromRef(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	tools, _ := toolDir(t, "curl", "Linux", "x86_64")
	r := runAction(t, tools, map[string]string{"engine": "none", "base-url": base}, "v"+release)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.log)
	}
	bin := filepath.Join(r.runnerTemp, "sponson", "bin", "sponson")
	if r.outputs["sponson-path"] != bin || r.outputs["engine-path"] != "" {
		t.Errorf("outputs %v, want sponson-path %s and no engine-path", r.outputs, bin)
	}
	if got, want := string(mustRead(t, bin)), fakeBinary(release, "linux_amd64"); got != want {
		t.Errorf("installed %q, want release %s, the action's ref", got, release)
	}
	if got := strings.TrimSpace(string(mustRead(t, r.path))); got != filepath.Dir(bin) {
		t.Errorf("GITHUB_PATH has %q, want %s", got, filepath.Dir(bin))
	}
}

func TestActionEngine(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	tools, _ := toolDir(t, "curl", "Darwin", "arm64")
	// What setup-opentofu would have put on PATH.
	tofu := filepath.Join(tools, "tofu")
	if err := os.WriteFile(tofu, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	r := runAction(t, tools, map[string]string{"version": release, "engine": "tofu", "prefix": prefix, "base-url": base}, "main")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.log)
	}
	if r.outputs["sponson-path"] != filepath.Join(prefix, "bin", "sponson") || r.outputs["engine-path"] != tofu {
		t.Errorf("outputs %v, want sponson under %s and engine-path %s", r.outputs, prefix, tofu)
	}
	if got := string(mustRead(t, r.envFile)); got != "SPONSON_ENGINE="+tofu+"\n" {
		t.Errorf("GITHUB_ENV %q, want SPONSON_ENGINE=%s", got, tofu)
	}
	if got, want := string(mustRead(t, filepath.Join(prefix, "bin", "sponson"))), fakeBinary(release, "darwin_arm64"); got != want {
		t.Errorf("installed %q, want %q", got, want)
	}
}

// TestActionLatest: referenced at a branch, with no version, the action
// installs the latest release.
func TestActionLatest(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	tools, _ := toolDir(t, "curl", "Linux", "aarch64")
	r := runAction(t, tools, map[string]string{"engine": "none", "base-url": base}, "main")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.log)
	}
	if got, want := string(mustRead(t, r.outputs["sponson-path"])), fakeBinary(release, "linux_arm64"); got != want {
		t.Errorf("installed %q, want %q", got, want)
	}
}

func TestActionRefusesUnknownEngine(t *testing.T) {
	t.Parallel()
	base := serveReleases(t)
	tools, _ := toolDir(t, "curl", "Linux", "x86_64")
	r := runAction(t, tools, map[string]string{"engine": "pulumi", "base-url": base}, "v"+release)
	if r.code != 2 || !strings.Contains(r.log, "::error::engine must be tofu, terraform or none") {
		t.Errorf("exit %d, want 2 with an ::error:: annotation:\n%s", r.code, r.log)
	}
	if _, err := os.Stat(filepath.Join(r.runnerTemp, "sponson")); err == nil {
		t.Errorf("installed sponson despite the bad engine")
	}
}

// TestActionEngineVersionDefault: engine-version defaults per engine, to
// the versions .ci/build-tool.sh builds and the tests run (each engine
// numbers its releases its own way, so one default cannot serve both), and
// an engine-version given is passed as it is.
func TestActionEngineVersionDefault(t *testing.T) {
	t.Parallel()
	var a struct {
		Inputs map[string]struct {
			Default string `yaml:"default"`
		} `yaml:"inputs"`
		Runs struct {
			Steps []struct {
				If   string            `yaml:"if"`
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(mustRead(t, actionFile), &a); err != nil {
		t.Fatal(err)
	}
	if d := a.Inputs["engine-version"].Default; d != "" {
		t.Errorf("engine-version defaults to %q for every engine", d)
	}
	tool := string(mustRead(t, "../build-tool.sh"))
	builds := func(name string) string {
		m := regexp.MustCompile(name + `_VERSION:-v([0-9.]+)`).FindStringSubmatch(tool)
		if m == nil {
			t.Fatalf("build-tool.sh names no %s_VERSION", name)
		}
		return m[1]
	}
	want := map[string]struct{ with, version string }{
		"tofu":      {"tofu_version", builds("TOFU")},
		"terraform": {"terraform_version", builds("TERRAFORM")},
	}
	orDefault := regexp.MustCompile(`^\$\{\{\s*inputs\.engine-version \|\| '([^']+)'\s*\}\}$`)
	seen := 0
	for _, s := range a.Runs.Steps {
		m := regexp.MustCompile(`^inputs\.engine == '(\w+)'$`).FindStringSubmatch(s.If)
		if s.Uses == "" || m == nil {
			continue
		}
		w, ok := want[m[1]]
		if !ok {
			t.Fatalf("step %s for engine %s", s.Uses, m[1])
		}
		seen++
		d := orDefault.FindStringSubmatch(s.With[w.with])
		if d == nil || d[1] != w.version {
			t.Errorf("%s: %s = %q; want engine-version, or %s when it is empty", s.Uses, w.with, s.With[w.with], w.version)
		}
	}
	if seen != 2 {
		t.Errorf("%d engine install steps, want tofu and terraform", seen)
	}
}
