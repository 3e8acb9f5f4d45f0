package cmdutil

import "testing"

// An annotation names its file relative to the checkout when the file is in
// it, and by its whole path when it is not, even in a sibling directory
// whose name starts with two dots.
func TestWorkspacePath(t *testing.T) {
	env := func(k string) string {
		if k == "GITHUB_WORKSPACE" {
			return "/w/repo"
		}
		return ""
	}
	for _, c := range []struct{ dir, name, want string }{
		{"/w/repo/stacks/app", "main.tf", "stacks/app/main.tf"},
		{"/w/repo", "/w/repo/main.tf", "main.tf"},
		{"/w/repo/stacks/app", "../../../other/main.tf", "/w/other/main.tf"},
		{"/w", "..repo/main.tf", "/w/..repo/main.tf"},
		{"/w/repo/..cache", "main.tf", "..cache/main.tf"},
	} {
		if got := workspacePath(env, c.dir, c.name); got != c.want {
			t.Errorf("workspacePath(%q, %q) = %q, want %q", c.dir, c.name, got, c.want)
		}
	}
	if got := workspacePath(func(string) string { return "" }, "/w/repo", "main.tf"); got != "/w/repo/main.tf" {
		t.Errorf("without GITHUB_WORKSPACE: %q", got)
	}
}
