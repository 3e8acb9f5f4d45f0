package stackgraph

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTree writes files (path → content) under a fresh directory.
func writeTree(t *testing.T, files map[string]string) string {
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

// resolved is what each file-reading call of the module in dir reads when
// the stack in rootDir uses it: its globs joined, or "unresolved".
func resolved(t *testing.T, top, dir, rootDir string) []string {
	t.Helper()
	d, err := readDeclared(filepath.Join(top, dir))
	if err != nil {
		t.Fatal(err)
	}
	ev := newModuleEval(filepath.Join(top, dir), filepath.Join(top, rootDir), d.locals)
	var out []string
	for _, c := range d.calls {
		globs, ok := ev.readGlobs(c, top)
		switch {
		case !ok:
			out = append(out, c.fn+" unresolved")
		case len(globs) == 0:
			out = append(out, c.fn+" outside")
		default:
			out = append(out, c.fn+" "+strings.Join(globs, ","))
		}
	}
	return out
}

// The paths of the file functions resolve from literals, path.module,
// path.root and path.cwd, locals built of them and the pure string and
// path functions; anything the engine alone knows is unresolved, never
// read as nothing.
func TestReadGlobs(t *testing.T) {
	t.Parallel()
	locals := `locals {
  base   = "${path.module}/../shared"
  nested = "${local.base}/nested.cfg"
  loop   = local.loop
  parts  = { cfg = "${path.module}/parts.cfg" }
}
`
	for _, tt := range []struct {
		name, expr string
		want       []string
	}{
		{"literal, relative to the stack", `file("app.cfg")`, []string{"file stacks/app/app.cfg"}},
		{"path.module join", `file("${path.module}/../../shared/app.cfg")`, []string{"file shared/app.cfg"}},
		{"path.root", `templatefile("${path.root}/tpl/x.tpl", { a = var.a })`, []string{"templatefile stacks/app/tpl/x.tpl"}},
		{"path.cwd", `filebase64("${path.cwd}/bin.dat")`, []string{"filebase64 stacks/app/bin.dat"}},
		{"fileset", `fileset("${path.module}/cfg", "**/*.yaml")`, []string{"fileset stacks/app/cfg/**/*.yaml"}},
		{"fileset with braces reads the directory", `fileset(path.module, "{a,b}.json")`, []string{"fileset stacks/app"}},
		{"fileset of an unknown pattern", `fileset(path.module, var.pattern)`, []string{"fileset unresolved"}},
		{"a local", `filesha256(local.base)`, []string{"filesha256 stacks/shared"}},
		{"a local of a local", `filemd5(local.nested)`, []string{"filemd5 stacks/shared/nested.cfg"}},
		{"an attribute of a local", `filesha1(local.parts.cfg)`, []string{"filesha1 stacks/app/parts.cfg"}},
		{"format", `filesha512(format("%s/f.txt", path.module))`, []string{"filesha512 stacks/app/f.txt"}},
		{"abspath of a relative path", `filebase64sha256(abspath("m.txt"))`, []string{"filebase64sha256 stacks/app/m.txt"}},
		{"dirname", `filebase64sha512("${dirname(path.module)}/d.txt")`, []string{"filebase64sha512 stacks/d.txt"}},
		{"nested in another function", `yamldecode(file("${path.module}/a.yaml"))`, []string{"file stacks/app/a.yaml"}},
		{"fileexists", `fileexists("${path.module}/opt.cfg") ? 1 : 0`, []string{"fileexists stacks/app/opt.cfg"}},
		{"core:: prefix", `core::file("c.cfg")`, []string{"file stacks/app/c.cfg"}},
		{"a variable", `file(var.x)`, []string{"file unresolved"}},
		{"each.value", `file("${path.module}/${each.value}")`, []string{"file unresolved"}},
		{"a data source", `file(data.external.p.result.path)`, []string{"file unresolved"}},
		{"a local in a cycle", `file(local.loop)`, []string{"file unresolved"}},
		{"an unknown local", `file(local.nope)`, []string{"file unresolved"}},
		{"an impure function", `file("${path.module}/${timestamp()}")`, []string{"file unresolved"}},
		{"a for expression", `[for f in fileset(path.module, "*.json") : jsondecode(file("${path.module}/${f}"))]`, []string{"fileset stacks/app/*.json", "file unresolved"}},
		{"outside the repository", `file("/etc/hostname")`, []string{"file outside"}},
		{"the home directory", `file("~/.ssh/id_rsa")`, []string{"file outside"}},
		{"pathexpand", `file(pathexpand("~/.ssh/id_rsa"))`, []string{"file outside"}},
		{"pathexpand of a relative path", `file(pathexpand("k.pem"))`, []string{"file stacks/app/k.pem"}},
		{"a call over lines", "file(\n  var.x\n)", []string{"file unresolved"}},
		{"not a string", `file(42)`, []string{"file unresolved"}},
		{"no file function", `upper("x")`, nil},
	} {
		top := writeTree(t, map[string]string{"stacks/app/main.tf": locals + "output \"o\" { value = " + tt.expr + " }\n"})
		if d := cmp.Diff(tt.want, resolved(t, top, "stacks/app", "stacks/app")); d != "" {
			t.Errorf("%s: %s (-want +got):\n%s", tt.name, tt.expr, d)
		}
	}
}

// In a module, path.module is the module's directory and a relative path
// is relative to the stack that runs the engine; JSON files are read too.
func TestReadGlobsModuleAndJSON(t *testing.T) {
	t.Parallel()
	top := writeTree(t, map[string]string{
		"modules/m/main.tf": `locals {
  a = file("${path.module}/m.cfg")
  b = file("r.cfg")
  c = file("${path.root}/root.cfg")
}`,
		"stacks/app/main.tf.json": `{"locals": {"p": "${path.module}/j.cfg"}, "output": {"o": {"value": "${file(local.p)}"}, "x": {"value": "${file(var.x)}"}}}`,
	})
	if d := cmp.Diff([]string{"file modules/m/m.cfg", "file stacks/app/r.cfg", "file stacks/app/root.cfg"}, resolved(t, top, "modules/m", "stacks/app")); d != "" {
		t.Errorf("module (-want +got):\n%s", d)
	}
	got := resolved(t, top, "stacks/app", "stacks/app")
	if d := cmp.Diff([]string{"file stacks/app/j.cfg", "file unresolved"}, slices.Sorted(slices.Values(got))); d != "" {
		t.Errorf("JSON (-want +got):\n%s", d)
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"shared/app.cfg", "shared/app.cfg", true},
		{"shared/app.cfg", "shared/app.cfgx", false},
		{"shared", "shared/deep/x.cfg", true},
		{"shared", "sharedx/a", false},
		{"shared/*.cfg", "shared/a.cfg", true},
		{"shared/*.cfg", "shared/sub/a.cfg", false},
		{"shared/**/*.cfg", "shared/a.cfg", true},
		{"shared/**/*.cfg", "shared/x/y/a.cfg", true},
		{"shared/**", "shared/x/y/a.cfg", true},
		{"**/*.yaml", "a/b/c.yaml", true},
		{"**", "anything/at/all", true},
		{"shared/**/x/*.cfg", "shared/a/b/y/a.cfg", false},
		{`we\[ird`, "we[ird", true},
		{`we\[ird`, "wei", false},
		{"[", "[", false}, // a bad pattern matches nothing
	} {
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
	if got := escapeGlob("we[ird*"); !globMatch(got, "we[ird*") || globMatch(got, "we[irdX") {
		t.Errorf("escapeGlob(%q) = %q matches otherwise than the path alone", "we[ird*", got)
	}
}

// Links are followed through directories, chains and absolute targets, to
// a target that no longer exists too.
func TestReal(t *testing.T) {
	t.Parallel()
	top := writeTree(t, map[string]string{"shared/a.cfg": "a", "shared/sub/b.cfg": "b"})
	for link, target := range map[string]string{
		"stacks/app/a.cfg":   "../../shared/a.cfg",
		"stacks/app/dir":     "../../shared",
		"stacks/app/chain":   "a.cfg",
		"stacks/app/gone":    "../../shared/deleted.cfg",
		"stacks/app/abs":     filepath.Join(top, "shared/sub"),
		"stacks/app/outside": "/etc",
		"stacks/app/loop":    "loop",
	} {
		p := filepath.Join(top, filepath.FromSlash(link))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	s := &Set{top: top, reals: map[string]string{}}
	for in, want := range map[string]string{
		"stacks/app/a.cfg":         "shared/a.cfg",
		"stacks/app/dir/sub/b.cfg": "shared/sub/b.cfg",
		"stacks/app/chain":         "shared/a.cfg",
		"stacks/app/gone":          "shared/deleted.cfg",
		"stacks/app/abs/b.cfg":     "shared/sub/b.cfg",
		"stacks/app/plain.tf":      "stacks/app/plain.tf",
		"stacks/app/loop":          "stacks/app/loop",
	} {
		if got := s.real(in); got != want {
			t.Errorf("real(%q) = %q, want %q", in, got, want)
		}
	}
	if got := s.real("stacks/app/outside/passwd"); !strings.HasPrefix(got, "../") {
		t.Errorf("real of a link out of the repository = %q, want a path leading out", got)
	}
}
