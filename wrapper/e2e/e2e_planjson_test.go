package e2e_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

var (
	conftestOnce sync.Once
	conftestBin  string
	conftestErr  error
)

// conftest returns the path of conftest as `make tools` builds it
// (.ci/build-tool.sh conftest, which pins its version): from the cache
// outside the checkout when it is there, else built into it now, a few
// minutes the first time on a new machine.
func conftest(t *testing.T) string {
	t.Helper()
	conftestOnce.Do(func() {
		out, err := exec.Command(filepath.Join("..", "..", ".ci", "build-tool.sh"), "conftest").Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				err = fmt.Errorf("%w: %s", err, exit.Stderr)
			}
			conftestErr = err
			return
		}
		conftestBin = strings.TrimSpace(string(out))
	})
	if conftestErr != nil {
		t.Fatalf("building conftest (.ci/build-tool.sh conftest): %v", conftestErr)
	}
	return conftestBin
}

// planPolicy refuses a plan that creates a fixture object whose name starts
// with FORBIDDEN, the kind of rule a team keeps in conftest.
const planPolicy = `package main

import rego.v1

deny contains msg if {
	some rc in input.resource_changes
	rc.type == "fixture_object"
	"create" in rc.change.actions
	startswith(rc.change.after.name, "FORBIDDEN")
	msg := sprintf("%s would create the forbidden object %s", [rc.address, rc.change.after.name])
}
`

// TestE2EPlanJSONPolicy: the plan a reviewer approves is readable by the
// tools around a pipeline. plan -out FILE --json-plan FILE2 writes the
// engine's plan JSON; sponson show -json FILE prints the same bytes after
// the seal check; conftest evaluates a Rego policy on it, passing one plan
// and failing the other; a damaged plan file is not shown.
func TestE2EPlanJSONPolicy(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	bin := conftest(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	policy := filepath.Join(t.TempDir(), "policy")
	if err := os.Mkdir(policy, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(policy, "plan.rego"), []byte(planPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	evaluate := func(planJSON string) (int, string) {
		cmd := exec.Command(bin, "test", "--no-color", "--policy", policy, planJSON)
		b, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(b)
		} else if err != nil {
			t.Fatalf("running conftest: %v", err)
		}
		return 0, string(b)
	}

	for _, tc := range []struct {
		name, object string
		exit         int // conftest's
	}{
		{"allowed", "OK1", 0},
		{"forbidden", "FORBIDDEN-1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tfplan := filepath.Join(out, tc.name+".tfplan")
			atPlan := filepath.Join(out, tc.name+".plan.json")
			h.mustRunEnv(dir, env, "plan", "--scope", "pr-1", "-out", tfplan, "--json-plan", atPlan, "-var", objectsVar("a", tc.object))
			if fi, err := os.Stat(atPlan); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("--json-plan: %v, mode %v; want a file of mode 0600", err, fi)
			}
			shown := h.mustRunEnv(dir, env, "show", "-json", tfplan)
			if !bytes.Equal([]byte(shown.stdout), readFile(t, atPlan)) {
				t.Errorf("show -json differs from the --json-plan of the same plan")
			}
			var p tfjson.Plan
			if err := json.Unmarshal([]byte(shown.stdout), &p); err != nil {
				t.Fatalf("show -json is not plan JSON: %v\n%s", err, shown.stdout)
			}
			if err := p.Validate(); err != nil || len(p.ResourceChanges) == 0 {
				t.Errorf("show -json: %v, %d resource changes", err, len(p.ResourceChanges))
			}
			// The workflow line, as tfaction and the conftest docs write it.
			viaShell := filepath.Join(out, tc.name+".shown.json")
			if r := h.ciRun(dir, "sponson show -json "+tfplan+" > "+viaShell, envMap(env)); r.exit != 0 {
				t.Fatalf("show -json > FILE: exit %d\n%s", r.exit, r.stderr)
			}
			code, report := evaluate(viaShell)
			if code != tc.exit {
				t.Errorf("conftest on the %s plan: exit %d, want %d\n%s", tc.name, code, tc.exit, report)
			}
			if tc.exit != 0 && !strings.Contains(report, `fixture_object.o["a"] would create the forbidden object FORBIDDEN-1`) {
				t.Errorf("conftest does not name the change:\n%s", report)
			}
			text := h.mustRunEnv(dir, env, "show", tfplan)
			if !strings.Contains(text.stdout, `fixture_object.o["a"] will be created`) || !strings.Contains(text.stdout, tc.object) {
				t.Errorf("show PLANFILE text:\n%s", text.stdout)
			}
		})
	}

	// A damaged file is refused, as apply refuses it.
	tfplan := filepath.Join(out, "allowed.tfplan")
	data := readFile(t, tfplan)
	bad := filepath.Join(out, "damaged.tfplan")
	if err := os.WriteFile(bad, bytes.Replace(data, []byte(`"scope":"pr-1"`), []byte(`"scope":"pr-2"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run(dir, env, "show", "-json", "--json", bad); r.exit != 2 || r.code(t) != "PLAN_CORRUPT" {
		t.Errorf("show -json of a damaged plan: exit %d %q\n%s", r.exit, r.code(t), r.stdout)
	}
}

// envMap turns KEY=VALUE entries into the variables of ciRun.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
