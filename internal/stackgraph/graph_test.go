package stackgraph_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
)

const scope = `resource "sponson_scope" "this" {}` + "\n"

const env = `environment "preview" {}` + "\n"

// tree writes files (path → content) under a fresh directory.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// discover names each stack after its directory and resolves a reference
// as a directory of the tree, else a full name "repo//dir".
func discover(t testing.TB, root string) (*stackgraph.Set, error) {
	t.Helper()
	name := func(dir string) (string, error) {
		rel, _ := filepath.Rel(root, dir)
		return "repo//" + filepath.ToSlash(rel), nil
	}
	return stackgraph.Discover(stackgraph.Options{Root: root, Top: root, Name: name,
		Resolve: func(_, ref string) (stack.Reference, error) {
			if strings.Contains(ref, "//") {
				return stack.Reference{Name: ref}, nil
			}
			n, _ := name(filepath.Join(root, ref))
			return stack.Reference{Name: n, Dir: filepath.Join(root, ref)}, nil
		}})
}

type row struct {
	Dir   string
	Depth int
	Needs []string
}

func rows(s *stackgraph.Set) []row {
	var out []row
	for _, st := range s.Stacks {
		needs := st.Needs
		if len(needs) == 0 {
			needs = nil
		}
		out = append(out, row{st.Directory, st.Depth, needs})
	}
	return out
}

var repo = map[string]string{
	"stacks/network/main.tf": scope + `module "vpc" { source = "../../modules/vpc" }`,
	"stacks/app/main.tf": `resource "sponson_scope" "this" { after = ["stacks/db"] }
data "sponson_outputs" "net" { stack = "stacks/network" }
data "sponson_outputs" "net2" { stack = "repo//stacks/network" }`,
	"stacks/db/main.tf":                       scope + `data "sponson_outputs" "net" { stack = "stacks/network" }`,
	"stacks/docs/main.tf.json":                `{"resource": {"sponson_scope": {"this": {}}}}`,
	"modules/vpc/main.tf":                     `module "subnets" { source = "../subnets" }`,
	"modules/subnets/main.tf":                 `variable "x" {}`,
	"modules/unused/main.tf":                  `variable "x" {}`,
	".hidden/main.tf":                         scope,
	"stacks/app/.terraform/modules/m/main.tf": scope,
	"stacks/ext/main.tf":                      `resource "sponson_scope" "this" { after = ["other.example/x//y"] }`,
}

// Stacks come in dependency order with their depth; hidden directories and
// modules are no stacks; a reference outside the set is a warning.
func TestDiscoverOrder(t *testing.T) {
	t.Parallel()
	set, err := discover(t, tree(t, repo))
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"stacks/docs", 0, nil},
		{"stacks/ext", 0, nil},
		{"stacks/network", 0, nil},
		{"stacks/db", 1, []string{"stacks/network"}},
		{"stacks/app", 2, []string{"stacks/db", "stacks/network"}},
	}
	if d := cmp.Diff(want, rows(set)); d != "" {
		t.Errorf("stacks (-want +got):\n%s", d)
	}
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0], "other.example/x//y") {
		t.Errorf("warnings = %q, want one naming the other repository's stack", set.Warnings)
	}
}

// A cycle is refused, naming every stack on it.
func TestDiscoverCycle(t *testing.T) {
	t.Parallel()
	_, err := discover(t, tree(t, map[string]string{
		"a/main.tf": `resource "sponson_scope" "s" { after = ["b"] }`,
		"b/main.tf": scope + `data "sponson_outputs" "c" { stack = "c" }`,
		"c/main.tf": `resource "sponson_scope" "s" { after = ["a"] }`,
		"d/main.tf": `resource "sponson_scope" "s" { after = ["a"] }`,
	}))
	e := errcode.As(err)
	if err == nil || e.Code != errcode.StackCycle || !strings.Contains(e.Message, "a → b → c → a") {
		t.Fatalf("err = %v, want STACK_CYCLE naming a → b → c → a", err)
	}
}

// References must be literals: the order is decided before the engine runs.
func TestDiscoverNotLiteral(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"after":   `resource "sponson_scope" "s" { after = [var.x] }`,
		"outputs": scope + `data "sponson_outputs" "n" { stack = "stacks/${var.x}" }`,
		"string":  `resource "sponson_scope" "s" { after = "a" }`,
	} {
		_, err := discover(t, tree(t, map[string]string{"a/main.tf": src}))
		if e := errcode.As(err); err == nil || e.Code != errcode.Usage || !strings.Contains(e.Message, "literal") {
			t.Errorf("%s: err = %v, want USAGE about a literal", name, err)
		}
	}
}

// Changed stacks are those a file is under (the deepest stack's), whose
// local modules (transitively) or sponson.hcl changed, and their dependents.
func TestChanged(t *testing.T) {
	t.Parallel()
	files := map[string]string{"sponson.hcl": env, "stacks/sponson.hcl": env, "main.tf": scope}
	for k, v := range repo {
		files[k] = v
	}
	set, err := discover(t, tree(t, files))
	if err != nil {
		t.Fatal(err)
	}
	reasons := func(changed ...string) map[string][]string {
		out := map[string][]string{}
		for _, st := range set.Changed(changed).Stacks {
			out[st.Directory] = st.Reasons
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		files []string
		want  map[string][]string
	}{
		{"docs only", []string{"stacks/docs/README.md"}, map[string][]string{"stacks/docs": {"changed: stacks/docs/README.md"}}},
		{"module of a module", []string{"modules/subnets/main.tf", "modules/unused/main.tf"}, map[string][]string{
			"stacks/network": {"its module modules/subnets changed: modules/subnets/main.tf"},
			"stacks/db":      {"depends on stacks/network, which is listed"},
			"stacks/app":     {"depends on stacks/db, which is listed", "depends on stacks/network, which is listed"},
			".":              {"changed: modules/subnets/main.tf, modules/unused/main.tf"},
		}},
		{"nested sponson.hcl", []string{"stacks/sponson.hcl"}, map[string][]string{
			".":           {"changed: stacks/sponson.hcl"},
			"stacks/app":  {"the environments changed: stacks/sponson.hcl", "depends on stacks/db, which is listed", "depends on stacks/network, which is listed"},
			"stacks/db":   {"the environments changed: stacks/sponson.hcl", "depends on stacks/network, which is listed"},
			"stacks/docs": {"the environments changed: stacks/sponson.hcl"}, "stacks/ext": {"the environments changed: stacks/sponson.hcl"},
			"stacks/network": {"the environments changed: stacks/sponson.hcl"},
		}},
		{"nothing", []string{"stacks/README.md"}, map[string][]string{".": {"changed: stacks/README.md"}}},
	} {
		if d := cmp.Diff(tt.want, reasons(tt.files...)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
	// A -var-file is relative to each stack's directory: a shared one
	// outside every stack touches all that name it.
	var got []string
	for _, st := range set.Changed([]string{"env/preview.tfvars"}, "../../env/preview.tfvars").Stacks {
		got = append(got, st.Directory+": "+strings.Join(st.Reasons, "; "))
	}
	want := []string{
		".: changed: env/preview.tfvars",
		"stacks/docs: its -var-file ../../env/preview.tfvars changed: env/preview.tfvars",
		"stacks/ext: its -var-file ../../env/preview.tfvars changed: env/preview.tfvars",
		"stacks/network: its -var-file ../../env/preview.tfvars changed: env/preview.tfvars",
		"stacks/db: its -var-file ../../env/preview.tfvars changed: env/preview.tfvars; depends on stacks/network, which is listed",
		"stacks/app: its -var-file ../../env/preview.tfvars changed: env/preview.tfvars; depends on stacks/db, which is listed; depends on stacks/network, which is listed",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("var files (-want +got):\n%s", d)
	}
	// A file only the working tree changed is named as such.
	got = nil
	for _, st := range set.ChangedBy(stackgraph.Changes{Files: []string{"stacks/docs/a.tf", "stacks/docs/b.tf"}, Uncommitted: []string{"stacks/docs/b.tf"}}).Stacks {
		got = append(got, st.Directory+": "+strings.Join(st.Reasons, "; "))
	}
	if d := cmp.Diff([]string{"stacks/docs: changed: stacks/docs/a.tf, stacks/docs/b.tf (not committed)"}, got); d != "" {
		t.Errorf("uncommitted (-want +got):\n%s", d)
	}
	// Within the subset, db waits for nothing once network is not in it.
	sub := set.Changed([]string{"stacks/db/main.tf"})
	if d := cmp.Diff([]row{{"stacks/db", 0, []string{"stacks/network"}}, {"stacks/app", 1, []string{"stacks/db", "stacks/network"}}}, rows(sub)); d != "" {
		t.Errorf("subset (-want +got):\n%s", d)
	}
}
