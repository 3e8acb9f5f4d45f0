package wrapper

import (
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
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
		if got := workspaceWarning(getenv, c); got != tt.want {
			t.Errorf("TF_WORKSPACE=%q: warning %q, want %q", tt.value, got, tt.want)
		}
	}
}
