package stack_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/stack"
)

// A reference is a directory of the repository, named as that directory's
// own runs name it (SPONSON_STACK names only the run's own stack), or else
// a full stack name.
func TestResolve(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	for dir, src := range map[string]string{
		"stacks/network": `resource "sponson_scope" "s" {}`,
		"stacks/named":   `resource "sponson_scope" "s" { stack = "acme/named" }`,
	} {
		if err := os.MkdirAll(filepath.Join(top, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(top, dir, "main.tf"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := stack.Sources{
		Getenv: func(k string) string { return map[string]string{stack.EnvVar: "run/own"}[k] },
		Git: func(args ...string) (string, error) {
			if args[0] == "rev-parse" {
				return top, nil
			}
			return "git@github.com:acme/infra.git", nil
		},
	}
	from := filepath.Join(top, "stacks", "app")
	for _, tt := range []struct{ ref, name, dir string }{
		{"stacks/network", "github.com/acme/infra//stacks/network", filepath.Join(top, "stacks/network")},
		{"/stacks/network/", "github.com/acme/infra//stacks/network", filepath.Join(top, "stacks/network")},
		{"stacks/named", "acme/named", filepath.Join(top, "stacks/named")},
		{"stacks/missing", "stacks/missing", ""},
		{"github.com/acme/infra//stacks/network", "github.com/acme/infra//stacks/network", ""},
	} {
		got, err := stack.Resolve(from, tt.ref, src)
		if err != nil {
			t.Errorf("%s: %v", tt.ref, err)
			continue
		}
		if d := cmp.Diff(stack.Reference{Name: tt.name, Dir: tt.dir}, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.ref, d)
		}
	}
	for _, bad := range []string{"", "../x", "a/../b"} {
		if _, err := stack.Resolve(from, bad, src); err == nil {
			t.Errorf("%q resolved", bad)
		}
	}
}
