package policycmd_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/wrapper/policycmd"
)

const planJSON = `{"format_version":"1.2","resource_changes":[
 {"address":"local_file.out","type":"local_file","change":{"actions":["delete"],"before":{"filename":"/etc/out.txt"},"after":null}}]}`

const noDeletes = `package main

deny contains msg if {
	data.sponson.environment == "production"
	rc := input.resource_changes[_]
	rc.change.actions[_] == "delete"
	msg := sprintf("%s would be deleted in production (owned by %s)", [rc.address, object.get(data.sponson.owners, rc.address, "nobody")])
}

warn contains sprintf("pr %d", [data.sponson.pull_request]) if data.sponson.pull_request > 0
`

type outcome struct {
	command string
	result  any
	err     error
}

func run(t *testing.T, dir string, args ...string) (string, outcome) {
	t.Helper()
	var out bytes.Buffer
	var got outcome
	cmd := policycmd.NewCmdPolicy(policycmd.IO{Out: &out, ErrOut: &out, Getenv: func(string) string { return "" }},
		func(c string, r any, err error) { got = outcome{c, r, err} }, nil)
	cmd.PersistentFlags().Bool("json", false, "")
	cmd.SetArgs(args)
	t.Chdir(dir)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.String(), got
}

func TestPolicyTest(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "policy", "deletes.rego"), noDeletes)
	write(t, filepath.Join(dir, "plan.json"), planJSON)

	out, got := run(t, dir, "test", "--policy", "policy", "--env", "preview", "plan.json")
	if got.err != nil || !strings.Contains(out, "policies passed: 0 denied, 0 warnings, 1 files") {
		t.Errorf("preview: %v\n%s", got.err, out)
	}
	out, got = run(t, dir, "test", "--policy", "policy", "--env", "production", "--pr", "4", "plan.json")
	if e := errcode.As(got.err); got.err == nil || e.Code != errcode.PolicyDenied || !strings.Contains(e.Message, "local_file.out would be deleted in production (owned by nobody)") {
		t.Errorf("production: %v", got.err)
	}
	for _, w := range []string{"FAIL - policy/deletes.rego - deny - local_file.out would be deleted", "WARN - policy/deletes.rego - warn - pr 4"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}

	// A saved plan gives its plan JSON and its context: the environment
	// and the owners its foreign check saw.
	sp := &savedplan.File{
		Meta: savedplan.Meta{RunID: "run-1", Environment: "production", Scope: "main", PullRequest: 0,
			Touches: []savedplan.Touch{{Address: "local_file.out", Identity: "id-1", Actions: []string{"delete"}}},
			Owners:  []store.Owner{{Scope: "main", Identity: "id-1", Address: "local_file.out"}}},
		Plan: []byte("engine plan"), PlanJSON: []byte(planJSON),
	}
	if err := savedplan.Write(filepath.Join(dir, "plan.bin"), sp, nil); err != nil {
		t.Fatal(err)
	}
	_, got = run(t, dir, "test", "--policy", "policy/deletes.rego", "plan.bin")
	if e := errcode.As(got.err); got.err == nil || e.Code != errcode.PolicyDenied || !strings.Contains(e.Message, "(owned by main)") {
		t.Errorf("saved plan: %v", got.err)
	}
	res, ok := got.result.(*policycmd.TestResult)
	if !ok || res.Context.Environment != "production" || res.Context.RunID != "run-1" {
		t.Errorf("result %#v", got.result)
	}

	// Compile errors are USAGE naming the file and line; so is a plan that
	// is not JSON.
	write(t, filepath.Join(dir, "bad", "bad.rego"), "package main\n\ndeny contains msg if {\n\tmsg := \n}\n")
	if _, got = run(t, dir, "test", "--policy", "bad", "plan.json"); errcode.As(got.err).Code != errcode.Usage || !strings.Contains(got.err.Error(), "bad/bad.rego:") {
		t.Errorf("compile error: %v", got.err)
	}
	write(t, filepath.Join(dir, "plan.txt"), "Plan: 1 to add")
	if _, got = run(t, dir, "test", "--policy", "policy", "plan.txt"); errcode.As(got.err).Code != errcode.Usage {
		t.Errorf("text plan: %v", got.err)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
