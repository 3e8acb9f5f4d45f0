package wrapper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// TestWorkspaceWarning: TF_WORKSPACE set to a workspace other than the
// default is named in a warning with the environment and scope the run uses
// instead, and how to choose them (issue 52); unset or "default" says
// nothing.
func TestWorkspaceWarning(t *testing.T) {
	t.Parallel()
	c := runctx.Context{Environment: "preview", Scope: "main"}
	for _, tt := range []struct{ value, want string }{
		{"", ""},
		{"default", ""},
		{" staging ", "TF_WORKSPACE=staging does not choose the state: sponson keeps one state per environment and scope, and this run is environment preview, scope main; choose them with --env and --scope (SPONSON_CTX_ENV, SPONSON_CTX_SCOPE)"},
	} {
		getenv := func(name string) string {
			if name == "TF_WORKSPACE" {
				return tt.value
			}
			return ""
		}
		if got := runner.WorkspaceWarning(getenv, c); got != tt.want {
			t.Errorf("TF_WORKSPACE=%q: warning %q, want %q", tt.value, got, tt.want)
		}
	}
}

// TestRunRefusesSponsonWithoutRequirement: a configuration that uses
// sponson_scope without naming the provider in required_providers is
// refused with USAGE before the engine starts, saying where and what to add
// (issue 52: the engine only failed on hashicorp/sponson).
func TestRunRefusesSponsonWithoutRequirement(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte("resource \"sponson_scope\" \"this\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, e, code := captureRun(t, nil, "plan", "--chdir", dir, "--scope", "pr-1")
	if code != errcode.ExitRefused || in != nil || e.Error == nil || e.Error.Code != errcode.Usage {
		t.Fatalf("exit %d, ran %v: %+v", code, in != nil, e.Error)
	}
	if !strings.Contains(e.Error.Message, "sponson_scope.this (main.tf:1)") || !strings.Contains(e.Error.Hint, `sponson = { source = "sponson/sponson" }`) {
		t.Errorf("error %q, hint %q: want where and what to add", e.Error.Message, e.Error.Hint)
	}
	if err := os.WriteFile(filepath.Join(dir, "versions.tf"), []byte("terraform {\n  required_providers {\n    sponson = { source = \"sponson/sponson\" }\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if in, e, code := captureRun(t, nil, "plan", "--chdir", dir, "--scope", "pr-1"); code != errcode.ExitOK || in == nil {
		t.Fatalf("with the requirement: exit %d: %+v", code, e.Error)
	}
}
