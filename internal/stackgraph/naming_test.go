package stackgraph_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
)

// gitInit makes dir a git repository whose origin is origin.
func gitInit(t *testing.T, dir, origin string) {
	t.Helper()
	for _, args := range [][]string{{"init", "--quiet", "-b", "main", dir}, {"-C", dir, "remote", "add", "origin", origin}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// namingRepo is a repository of n chained stacks under stacks/ (each after
// the one before through sponson_outputs), one declaring its own name and
// one naming it by directory, and a nested repository of another origin
// holding a stack that names one of the outer repository's by its full
// name; and a stack naming one through a symbolic link to its parent
// directory (alias → stacks).
func namingRepo(t *testing.T, n int) string {
	files := map[string]string{
		"named/main.tf":        `resource "sponson_scope" "this" { stack = "custom/named" }` + "\n",
		"reader/main.tf":       scope + `data "sponson_outputs" "n" { stack = "named" }` + "\n",
		"nested/inner/main.tf": scope + `data "sponson_outputs" "o" { stack = "github.com/acme/infra//stacks/s0" }` + "\n",
		"modules/m/main.tf":    `resource "terraform_data" "x" {}` + "\n",
		"linked/main.tf":       scope + `data "sponson_outputs" "a" { stack = "alias/s0" }` + "\n",
	}
	for i := range n {
		src := scope
		if i > 0 {
			src += fmt.Sprintf(`data "sponson_outputs" "p" { stack = "stacks/s%d" }`+"\n", i-1)
		}
		files[fmt.Sprintf("stacks/s%d/main.tf", i)] = src
	}
	root := tree(t, files)
	if err := os.Symlink("stacks", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	gitInit(t, root, "git@github.com:acme/infra.git")
	gitInit(t, filepath.Join(root, "nested"), "https://gitlab.example.com/other/repo.git")
	return root
}

// TestDiscoverNamesOncePerRepository: Discover names every stack, and the
// stacks their references name, as a run in its directory names it
// (stack.Detect with git run there, the declared attribute, a nested
// repository's own origin, SPONSON_STACK left out), with the same git
// questions asked for 3 stacks as for 40: once per repository.
func TestDiscoverNamesOncePerRepository(t *testing.T) {
	calls := map[int]int64{}
	for _, n := range []int{3, 40} {
		root := namingRepo(t, n)
		var count atomic.Int64
		set, err := stackgraph.Discover(stackgraph.Options{
			Root: root, Top: root,
			Getenv: func(k string) string {
				if k == stack.EnvVar {
					return "one/run"
				}
				return ""
			},
			Git: func(dir string) func(args ...string) (string, error) {
				count.Add(1)
				return runctx.ProcessSources(dir).Git
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		calls[n] = count.Load()
		got := map[string]string{}
		needs := map[string][]string{}
		for _, s := range set.Stacks {
			got[s.Directory] = s.Name
			needs[s.Directory] = s.Needs
		}
		want := map[string]string{}
		for dir := range got {
			abs := filepath.Join(root, filepath.FromSlash(dir))
			declared, err := stack.Declared(abs)
			if err != nil {
				t.Fatal(err)
			}
			r, err := stack.Detect(abs, "", declared, stack.Sources{Git: runctx.ProcessSources(abs).Git})
			if err != nil {
				t.Fatal(err)
			}
			want[dir] = r.Name
		}
		if len(want) != n+4 {
			t.Fatalf("%d stacks found, want %d: %v", len(got), n+4, got)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("n=%d: names (-as a run names them +Discover):\n%s", n, diff)
		}
		for dir, name := range map[string]string{
			"named":        "custom/named",
			"stacks/s1":    "github.com/acme/infra//stacks/s1",
			"nested/inner": "gitlab.example.com/other/repo//inner",
		} {
			if got[dir] != name {
				t.Errorf("n=%d: %s is named %q, want %q", n, dir, got[dir], name)
			}
		}
		for dir, want := range map[string][]string{
			"reader":       {"named"},
			"stacks/s2":    {"stacks/s1"},
			"nested/inner": {"stacks/s0"},
			"linked":       {"stacks/s0"},
		} {
			if diff := cmp.Diff(want, needs[dir]); diff != "" {
				t.Errorf("n=%d: needs of %s (-want +got):\n%s", n, dir, diff)
			}
		}
	}
	if calls[3] != calls[40] || calls[3] > 4 {
		t.Errorf("git ran %d times for 3 chained stacks, %d for 40; want the same, at most 4 (two questions, two repositories)", calls[3], calls[40])
	}
}
