package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
)

// stackReads is a head of a stack that writes one local_file of what it
// reads, named after the stack's directory and the scope, into var.out.
func stackReads(name, content string, extra string) string {
	return `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    local   = { source = "hashicorp/local", version = "2.9.0" }
  }
}

variable "out" { type = string }

resource "sponson_scope" "this" {}
` + extra + `
resource "local_file" "read" {
  filename = "${var.out}/` + name + `-${sponson_scope.this.name}.txt"
  content  = ` + content + `
}
`
}

// changedReadsRepo is main of a repository whose stacks read files outside
// their directories in each way --changed follows (docs/design.md §4.7
// "Many stacks"); stacks/linked/common.tf is a symbolic link to
// shared/common.tf, made beside it.
var changedReadsRepo = map[string]string{
	"sponson.hcl": `environment "preview" {}

stack "stacks/watched" {
  watch = ["data/**/*.json"]
}
`,
	"stacks/cfg/main.tf": stackReads("cfg", `file("${path.module}/../../shared/app.cfg")`, ""),
	"stacks/tpl/main.tf": stackReads("tpl", `templatefile("${local.templates}/page.tpl", { scope = sponson_scope.this.name })`,
		"locals { templates = \"${path.module}/../../templates\" }\n"),
	"stacks/linked/main.tf": stackReads("linked", `local.common`, ""),
	// watched reads a path sponson cannot resolve; its watch list says
	// what it is.
	"stacks/watched/main.tf": stackReads("watched", `file(var.data_file)`,
		"variable \"data_file\" {\n  type    = string\n  default = \"../../data/x/y.json\"\n}\n"),
	"shared/app.cfg":      "app v1\n",
	"shared/common.tf":    "locals { common = \"common v1\" }\n",
	"templates/page.tpl":  "page v1 of ${scope}\n",
	"data/x/y.json":       "{\"v\": 1}\n",
	"unrelated/README.md": "nothing reads this\n",
}

// TestE2EChangedReads: `stacks --changed` lists a stack when a pull request
// changes a file it reads outside its directory — through file() with
// path.module, templatefile() through a local, a symbolic link's target (a
// .tf file), a watch glob for a path it cannot resolve — each with its
// reason, in the human listing and --json; a stack reading a path sponson
// cannot resolve, with no watch list of its own, is listed on a change with
// that reason; a file nothing reads lists none. apply --changed then runs
// the listed stack, whose engine reads the changed file (hashicorp/local).
func TestE2EChangedReads(t *testing.T) {
	h := e2e(t)
	mirror := realproviders.Install(t)
	cli, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	env := []string{deriveStack, "TF_CLI_CONFIG_FILE=" + cli, "TF_VAR_out=" + out}
	store := "--store=file://" + filepath.Join(t.TempDir(), "store")

	root := repoWith(t, changedReadsRepo)
	if err := os.Symlink("../../shared/common.tf", filepath.Join(root, "stacks/linked/common.tf")); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "--quiet", "-m", "a symbolic link")

	// pr makes branch name off from with files changed and committed.
	pr := func(name, from string, files map[string]string) {
		t.Helper()
		gitIn(t, root, "checkout", "--quiet", "-b", name, from)
		for f, content := range files {
			p := filepath.Join(root, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitIn(t, root, "add", "-A")
		gitIn(t, root, "commit", "--quiet", "-m", name)
	}
	changed := func(base string) []string {
		t.Helper()
		return stackRows(t, h.mustRunEnv(root, env, "stacks", "--changed", "--base", base, "--json"), "reasons")
	}

	for _, tt := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"file", map[string]string{"shared/app.cfg": "app v2\n"}, []string{
			"stacks/cfg file() at stacks/cfg/main.tf:14 reads shared/app.cfg, which changed: shared/app.cfg",
		}},
		{"templatefile", map[string]string{"templates/page.tpl": "page v2 of ${scope}\n"}, []string{
			"stacks/tpl templatefile() at stacks/tpl/main.tf:15 reads templates/page.tpl, which changed: templates/page.tpl",
		}},
		{"symlink", map[string]string{"shared/common.tf": "locals { common = \"common v2\" }\n"}, []string{
			"stacks/linked its symbolic link stacks/linked/common.tf points to shared/common.tf, which changed: shared/common.tf",
		}},
		{"watch", map[string]string{"data/x/y.json": "{\"v\": 2}\n"}, []string{
			"stacks/watched sponson.hcl watches data/**/*.json, which changed: data/x/y.json",
		}},
		{"unrelated", map[string]string{"unrelated/README.md": "still nothing\n", "data/x/y.txt": "not json\n"}, nil},
	} {
		pr(tt.name, "main", tt.files)
		if d := cmp.Diff(tt.want, changed("main")); d != "" {
			t.Errorf("%s: stacks --changed (-want +got):\n%s", tt.name, d)
		}
	}
	human := h.mustRunEnv(root, env, "stacks", "--changed", "--base", "main")
	if !strings.Contains(human.stdout, "no stack changed since main") {
		t.Errorf("the unrelated change lists a stack:\n%s", human.stdout)
	}

	// A stack whose read sponson cannot resolve, and which declares no
	// watch list of its own, is listed by any change, saying why.
	dynamic := stackReads("dynamic", `file("${path.module}/${var.name}")`, "variable \"name\" {\n  type    = string\n  default = \"../../shared/app.cfg\"\n}\n")
	pr("dynamic", "main", map[string]string{"stacks/dynamic/main.tf": dynamic})
	pr("dynamic-change", "dynamic", map[string]string{"unrelated/README.md": "changed\n"})
	want := []string{"stacks/dynamic reads a file through file(\"${path.module}/${var.name}\") at stacks/dynamic/main.tf:18, which sponson cannot resolve before the engine runs; declare it in watch"}
	if d := cmp.Diff(want, changed("dynamic")); d != "" {
		t.Errorf("unresolvable: stacks --changed (-want +got):\n%s", d)
	}
	human = h.mustRunEnv(root, env, "stacks", "--changed", "--base", "dynamic")
	t.Logf("sponson stacks --changed --base dynamic:\n%s", human.stdout)
	if !strings.Contains(human.stdout, "stacks/dynamic: reads a file through file(") {
		t.Errorf("the human listing does not say why stacks/dynamic is listed:\n%s", human.stdout)
	}

	// apply --changed on the branch that changed shared/app.cfg runs cfg,
	// whose engine reads the new content, and no other stack.
	gitIn(t, root, "checkout", "--quiet", "file")
	r := h.mustRunEnv(root, env, "apply", "--changed", "--base", "main", "--pr", "1", store, "--json")
	if d := cmp.Diff([]string{"stacks/cfg succeeded"}, stackRows(t, r, "status")); d != "" {
		t.Errorf("apply --changed (-want +got):\n%s\n%s", d, r.stderr)
	}
	if got := string(readFile(t, filepath.Join(out, "cfg-pr-1.txt"))); got != "app v2\n" {
		t.Errorf("cfg's file in pr-1 = %q, want the changed shared/app.cfg", got)
	}
	if files, _ := filepath.Glob(filepath.Join(out, "*")); len(files) != 1 {
		t.Errorf("the applies wrote %v, want cfg's file alone", files)
	}
}
