package wrapper

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// standInEngine writes an executable that records every start in a file
// and fails, and returns its path and a function counting the starts. A
// refusal "before the engine" leaves the count at zero.
func standInEngine(t *testing.T) (string, func() int) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "starts")
	bin := filepath.Join(dir, "engine")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\necho 'stand-in engine: not a real one' >&2\nexit 1\n", log)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, func() int {
		data, err := os.ReadFile(log)
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), "\n")
	}
}

// TestDeclaredEnvironmentsRefuseBeforeTheEngine runs the real apply, plan and
// destroy (no runF seam) with a stand-in engine and a sponson.hcl that
// declares a protected prod: every refusal happens before the engine starts
// and before the store is touched, and the runs that pass do start it.
func TestDeclaredEnvironmentsRefuseBeforeTheEngine(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	const declaration = `
environment "preview" {}

environment "prod" {
  protected = true
  approvers = ["alice"]
}
`
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		code    errcode.Code // "" when the run reaches the engine
		message []string
	}{
		{"undeclared prd", []string{"apply", "--env", "prd"}, nil, errcode.EnvUndeclared, []string{`"prd"`, "preview, prod"}},
		{"undeclared production", []string{"apply", "--env", "production", "--approved-by", "alice"}, nil, errcode.EnvUndeclared, []string{"preview, prod"}},
		{"prefix is not a match", []string{"destroy", "--env", "prod-app"}, nil, errcode.EnvUndeclared, []string{`"prod-app"`}},
		{"undeclared from SPONSON_CTX_ENV", []string{"plan"}, map[string]string{"SPONSON_CTX_ENV": "staging"}, errcode.EnvUndeclared, []string{`"staging"`}},
		{"protected without approver", []string{"apply", "--env", "Prod"}, nil, errcode.EnvNotApproved, []string{"prod is protected"}},
		{"protected, approver not declared", []string{"destroy", "--env", "prod", "--approved-by", "mallory"}, nil, errcode.EnvNotApproved, []string{`"mallory"`}},
		{"protected, approver blank", []string{"apply", "--env", "prod"}, map[string]string{"SPONSON_APPROVED_BY": "  "}, errcode.EnvNotApproved, nil},
		// Controls: these reach the engine, so the count can tell.
		{"declared and approved", []string{"apply", "--env", "PROD", "--approved-by", "alice"}, nil, "", nil},
		{"plan needs no approver", []string{"plan", "--env", "prod"}, nil, "", nil},
		{"declared, unprotected", []string{"apply", "--env", "Preview"}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "sponson.hcl"), []byte(declaration), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			bin, starts := standInEngine(t)
			env := maps.Clone(tc.env)
			if env == nil {
				env = map[string]string{}
			}
			f, out, _ := testFactory(env)
			f.Lookup = engine.ProcessLookup()
			f.Lookup.Getenv = func(k string) string { return env[k] }
			args := append(append([]string{}, tc.args...), "--chdir", dir, "--scope", "pr-1", "--engine", bin, "--json")
			code := Run(context.Background(), NormalizeArgs(args), f)
			envl := decode(t, out)
			if tc.code == "" {
				if starts() == 0 {
					t.Fatalf("the engine was never started (exit %d, %+v)", code, envl.Error)
				}
				return
			}
			if n := starts(); n != 0 {
				t.Errorf("the engine was started %d times before the refusal", n)
			}
			if code != errcode.ExitRefused || envl.Error == nil || envl.Error.Code != tc.code {
				t.Fatalf("exit %d, error %+v; want %s, exit 2", code, envl.Error, tc.code)
			}
			for _, m := range tc.message {
				if !strings.Contains(envl.Error.Message, m) {
					t.Errorf("message %q does not say %s", envl.Error.Message, m)
				}
			}
			if envl.Error.Hint == "" {
				t.Error("no hint")
			}
			if _, err := os.Stat(filepath.Join(dir, ".sponson")); err == nil {
				t.Error("a refused run wrote to the store (took a lease?)")
			}
		})
	}
}

// TestMergeQueueIsPlanOnly runs apply and plan in GitHub's merge_group
// event (the fixture of internal/runctx): apply is refused before the
// engine, plan reaches it in scope main.
func TestMergeQueueIsPlanOnly(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	data, err := os.ReadFile("../internal/runctx/testdata/github/merge-group.env")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	env["GITHUB_EVENT_PATH"] = "../internal/runctx/testdata/github/merge-group.json"
	for _, command := range []string{"apply", "destroy", "plan"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			bin, starts := standInEngine(t)
			f, out, _ := testFactory(env)
			f.Lookup = engine.ProcessLookup()
			f.Lookup.Getenv = func(k string) string { return env[k] }
			code := Run(context.Background(), []string{command, "--chdir", dir, "--engine", bin, "--json"}, f)
			envl := decode(t, out)
			if command == "plan" {
				if starts() == 0 {
					t.Fatalf("plan did not reach the engine: exit %d %+v", code, envl.Error)
				}
				return
			}
			if code != errcode.ExitRefused || envl.Error == nil || envl.Error.Code != errcode.CtxNull || !strings.Contains(envl.Error.Message, "merge queue") {
				t.Fatalf("exit %d, error %+v; want CTX_NULL naming the merge queue", code, envl.Error)
			}
			if n := starts(); n != 0 {
				t.Errorf("the engine was started %d times", n)
			}
		})
	}
}
