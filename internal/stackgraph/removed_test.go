package stackgraph_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRemoved: the stacks of the base that HEAD no longer has, in order,
// each with its reason; a directory whose configuration moved byte for
// byte is the stack's new directory; what the engine leaves behind in a
// deleted directory does not keep it a stack.
func TestRemoved(t *testing.T) {
	queue := scope + `resource "terraform_data" "q" {}` + "\n"
	worker := `resource "sponson_scope" "this" {
  after = ["stacks/queue"]
}
`
	base := tree(t, map[string]string{
		"stacks/network/main.tf": scope,
		"stacks/queue/main.tf":   queue,
		"stacks/worker/main.tf":  worker,
		"stacks/docs/main.tf":    scope + `resource "terraform_data" "d" {}` + "\n",
	})
	head := tree(t, map[string]string{
		"stacks/network/main.tf":       scope,
		"stacks/documentation/main.tf": scope + `resource "terraform_data" "d" {}` + "\n",
		"legacy/main.tf":               `resource "terraform_data" "x" {}` + "\n",
		"modules/m/main.tf":            `variable "x" {}` + "\n",
		"stacks/network/use.tf":        `module "m" { source = "../../modules/m" }` + "\n",
	})
	// The engine's lock file stays in a deleted stack's directory.
	if err := os.MkdirAll(filepath.Join(head, "stacks/queue"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(head, "stacks/queue/.terraform.lock.hcl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := discover(t, base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := discover(t, head)
	if err != nil {
		t.Fatal(err)
	}
	type gone struct {
		Dir, RenamedDirectory string
		Depth                 int
		Reasons               []string
	}
	var got []gone
	for _, s := range b.Removed(h).Stacks {
		got = append(got, gone{s.Directory, s.RenamedDirectory, s.Depth, s.Reasons})
	}
	want := []gone{
		{Dir: "stacks/docs", RenamedDirectory: "stacks/documentation", Reasons: []string{"removed: its directory stacks/docs was deleted", "renamed: its configuration moved to stacks/documentation (stack repo//stacks/documentation)"}},
		{Dir: "stacks/queue", Reasons: []string{"removed: its directory stacks/queue was deleted"}},
		{Dir: "stacks/worker", Depth: 1, Reasons: []string{"removed: its directory stacks/worker was deleted"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Removed (-want +got):\n%s", d)
	}
	// A root module without sponson_scope is named; a module used is not.
	if d := cmp.Diff([]string{"legacy"}, h.NotStacks()); d != "" {
		t.Errorf("NotStacks (-want +got):\n%s", d)
	}
}
