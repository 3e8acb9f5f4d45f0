package stackgraph_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readsRepo is a repository whose stacks read files outside their
// directories in every way --changed follows.
var readsRepo = map[string]string{
	"sponson.hcl": env + `watch = ["config/global/*.yaml"]
stack "stacks/watched" { watch = ["data/**/*.json"] }
`,
	"stacks/cfg/main.tf": scope + `locals { cfg = file("${path.module}/../../shared/app.cfg") }`,
	"stacks/tpl/main.tf": scope + `locals {
  dir = "${path.module}/../../templates"
  out = templatefile("${local.dir}/page.tpl", { name = "x" })
}`,
	"stacks/mod/main.tf":      scope + `module "m" { source = "../../modules/m" }`,
	"modules/m/main.tf":       `locals { x = filesha256("${path.module}/../../shared/mod.txt") }`,
	"stacks/linked/main.tf":   scope,
	"stacks/dynamic/main.tf":  scope + "variable \"p\" {}\nlocals { x = file(var.p) }\n",
	"stacks/watched/main.tf":  scope + `locals { x = file("${path.module}/${each.value}") }`,
	"stacks/fileset/main.tf":  scope + `locals { x = fileset("${path.module}/../../shared/set", "**/*.json") }`,
	"shared/app.cfg":          "a",
	"shared/mod.txt":          "m",
	"shared/common.tf":        `locals { common = 1 }`,
	"shared/dir/x.cfg":        "x",
	"shared/set/a/b.json":     "{}",
	"shared/set/a/b.txt":      "",
	"templates/page.tpl":      "${name}",
	"config/global/a.yaml":    "",
	"data/x/y.json":           "{}",
	"unrelated/README.md":     "",
	"stacks/linked/README.md": "",
}

// --changed lists a stack when a file it reads outside its directory
// changes, saying how it reads it: a file function's path, a symbolic
// link's target, a watch glob; a path it cannot resolve lists it on every
// change, unless the stack declares its own watch list; a file no stack
// reads lists none.
func TestChangedReads(t *testing.T) {
	t.Parallel()
	root := tree(t, readsRepo)
	for link, target := range map[string]string{
		"stacks/linked/common.tf": "../../shared/common.tf",
		"stacks/linked/dir":       "../../shared/dir",
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	set, err := discover(t, root)
	if err != nil {
		t.Fatal(err)
	}
	const dynamic = "reads a file through file(var.p) at stacks/dynamic/main.tf:3, which sponson cannot resolve before the engine runs; declare it in watch"
	for _, tt := range []struct {
		name  string
		files []string
		want  []string
	}{
		{"file() outside the stack", []string{"shared/app.cfg"}, []string{
			"stacks/cfg: file() at stacks/cfg/main.tf:2 reads shared/app.cfg, which changed: shared/app.cfg",
			"stacks/dynamic: " + dynamic,
		}},
		{"templatefile() through locals", []string{"templates/page.tpl"}, []string{
			"stacks/dynamic: " + dynamic,
			"stacks/tpl: templatefile() at stacks/tpl/main.tf:4 reads templates/page.tpl, which changed: templates/page.tpl",
		}},
		{"a module's read", []string{"shared/mod.txt"}, []string{
			"stacks/dynamic: " + dynamic,
			"stacks/mod: filesha256() at modules/m/main.tf:1 reads shared/mod.txt, which changed: shared/mod.txt",
		}},
		{"a symlinked .tf file's target", []string{"shared/common.tf"}, []string{
			"stacks/dynamic: " + dynamic,
			"stacks/linked: its symbolic link stacks/linked/common.tf points to shared/common.tf, which changed: shared/common.tf",
		}},
		{"a file under a symlinked directory's target", []string{"shared/dir/x.cfg"}, []string{
			"stacks/dynamic: " + dynamic,
			"stacks/linked: its symbolic link stacks/linked/dir points to shared/dir, which changed: shared/dir/x.cfg",
		}},
		{"fileset() matches", []string{"shared/set/a/b.json"}, []string{
			"stacks/dynamic: " + dynamic,
			"stacks/fileset: fileset() at stacks/fileset/main.tf:2 reads shared/set/**/*.json, which changed: shared/set/a/b.json",
		}},
		{"a top-level watch glob, every stack", []string{"config/global/a.yaml"}, []string{
			"stacks/cfg: sponson.hcl watches config/global/*.yaml, which changed: config/global/a.yaml",
			"stacks/dynamic: sponson.hcl watches config/global/*.yaml, which changed: config/global/a.yaml",
			"stacks/fileset: sponson.hcl watches config/global/*.yaml, which changed: config/global/a.yaml",
			"stacks/linked: sponson.hcl watches config/global/*.yaml, which changed: config/global/a.yaml",
			"stacks/mod: sponson.hcl watches config/global/*.yaml, which changed: config/global/a.yaml",
			"stacks/tpl: sponson.hcl watches config/global/*.yaml, which changed: config/global/a.yaml",
			"stacks/watched: sponson.hcl watches config/global/*.yaml, which changed: config/global/a.yaml",
		}},
		{"a stack's watch glob", []string{"data/x/y.json"}, []string{
			"stacks/dynamic: " + dynamic,
			"stacks/watched: sponson.hcl watches data/**/*.json, which changed: data/x/y.json",
		}},
		// dynamic cannot say what it reads; watched declares it.
		{"an unrelated file", []string{"unrelated/README.md", "shared/set/a/b.txt"}, []string{"stacks/dynamic: " + dynamic}},
		{"the stack's own file", []string{"stacks/linked/README.md"}, []string{
			"stacks/dynamic: " + dynamic,
			"stacks/linked: changed: stacks/linked/README.md",
		}},
		{"no change", nil, nil},
	} {
		var got []string
		for _, st := range set.Changed(tt.files).Stacks {
			got = append(got, st.Directory+": "+strings.Join(st.Reasons, "; "))
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
	// A -var-file reached through a symbolic link is its target's file.
	if err := os.Symlink("shared/app.cfg", filepath.Join(root, "vars.tfvars")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range set.Changed([]string{"shared/app.cfg"}, "../../vars.tfvars").Stacks {
		if st.Directory == "stacks/linked" {
			got = st.Reasons
		}
	}
	if d := cmp.Diff([]string{"its -var-file ../../vars.tfvars changed: shared/app.cfg"}, got); d != "" {
		t.Errorf("linked -var-file (-want +got):\n%s", d)
	}
}

// A sponson.hcl that does not parse is a watch list of unknown globs: every
// stack under it is listed, saying so, never left out.
func TestChangedUnreadableWatch(t *testing.T) {
	t.Parallel()
	set, err := discover(t, tree(t, map[string]string{"sponson.hcl": "watch = [", "a/main.tf": scope}))
	if err != nil {
		t.Fatal(err)
	}
	got := set.Changed([]string{"b/x"}).Stacks
	if len(got) != 1 || len(got[0].Reasons) != 1 || !strings.Contains(got[0].Reasons[0], "its watch list in sponson.hcl cannot be read") {
		t.Fatalf("stacks = %v, want a listed with the unreadable watch list as its reason", got)
	}
}
