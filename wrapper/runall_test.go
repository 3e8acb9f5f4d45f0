package wrapper

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/gccmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/manystacks"
)

// fakeSponson is a stand-in for the sponson binary each stack of a run of
// many runs as: it prints a line of "engine output" and the envelope of a
// plan with no changes, or of a failure in a directory named fail.
const fakeSponson = `#!/bin/sh
for a in "$@"; do case "$a" in --chdir=*) dir="${a#--chdir=}";; esac; done
echo "engine output of $(basename "$dir")" >&2
case "$dir" in
*/fail) cat <<'EOF'
{"ok":false,"command":"plan","error":{"code":"ENGINE_FAILED","message":"boom\nmore"},"exitCode":1}
EOF
exit 1;;
esac
cat <<'EOF'
{"ok":true,"command":"plan","result":{"environment":"preview","scope":"main","status":"unchanged","summary":{"add":0,"change":0,"destroy":0}},"exitCode":0}
EOF
`

// manyStacks writes stacks a and fail, and b after fail, and the fake
// sponson; it returns the directory of the stacks and the fake's path.
func manyStacks(t *testing.T) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	// References name directories of the repository.
	for _, args := range [][]string{{"init", "--quiet", dir}, {"-C", dir, "remote", "add", "origin", "git@github.com:acme/infra.git"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for name, src := range map[string]string{
		"a/main.tf":    `resource "sponson_scope" "s" {}`,
		"fail/main.tf": `resource "sponson_scope" "s" {}`,
		"b/main.tf":    `resource "sponson_scope" "s" { after = ["fail"] }`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(t.TempDir(), "sponson")
	if err := os.WriteFile(bin, []byte(fakeSponson), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// In a log: one line per stack event, a failed stack's output after its
// line, the dependent of the failed stack skipped, the worst exit code.
func TestRunAllLines(t *testing.T) {
	t.Parallel()
	dir, bin := manyStacks(t)
	f, out, _ := testFactory(map[string]string{"SPONSON_STACK": ""})
	f.Executable = func() (string, error) { return bin, nil }
	code := Run(context.Background(), []string{"plan", "--all", "--chdir", dir, "--parallelism", "1"}, f)
	if code != errcode.ExitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	got := out.String()
	for _, want := range []string{
		"sponson plan --all · 3 stacks · parallelism 1\n",
		"a: plan started\na: sponson plan preview/main: no changes\n",
		"fail: plan started\nfail: failed: error ENGINE_FAILED: boom (exit 1)\nfail | engine output of fail\n",
		"b: skipped: it waits for fail, which failed\n",
		"warning: no --store (or SPONSON_STORE): each stack keeps its own .sponson/",
		"sponson plan --all: 1 succeeded, 1 failed, 1 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b[") {
		t.Errorf("terminal codes in a log:\n%q", got)
	}
}

// On a terminal: a table of the stacks redrawn in place, a failed stack's
// output above it, the table's last state left on the screen.
func TestRunAllTable(t *testing.T) {
	t.Parallel()
	dir, bin := manyStacks(t)
	f, out, _ := testFactory(map[string]string{"SPONSON_STACK": ""})
	f.Executable = func() (string, error) { return bin, nil }
	f.IsTerminal = func(io.Writer) bool { return true }
	Run(context.Background(), []string{"plan", "--all", "--chdir", dir}, f)
	got := out.String()
	last := got[strings.LastIndex(got, "\x1b[J")+len("\x1b[J"):]
	want := "  a     succeeded  sponson plan preview/main: no changes\n" +
		"  fail  failed     ENGINE_FAILED\n" +
		"  b     skipped    it waits for fail, which failed\n" +
		"sponson plan --all: 1 succeeded, 1 failed, 1 skipped\n"
	if last != want {
		t.Errorf("the screen ends with\n%q\nwant\n%q", last, want)
	}
	if !strings.Contains(got, "fail | engine output of fail\n") || strings.Contains(got, "a: plan started") {
		t.Errorf("on a terminal the output is the table and the failed stack's block:\n%q", got)
	}
}

// --parallelism (two dashes) is the stacks'; on one stack it is refused,
// not passed to the engine or ignored, and -parallelism stays the engine's.
func TestParallelismFlags(t *testing.T) {
	t.Parallel()
	if got := NormalizeArgs([]string{"plan", "--parallelism", "3", "-parallelism=2"}); strings.Join(got, " ") != "plan --parallelism 3 --engine-arg=-parallelism=2" {
		t.Errorf("NormalizeArgs = %q", got)
	}
	f, _, errOut := testFactory(map[string]string{"SPONSON_STACK": ""})
	for _, args := range [][]string{{"plan", "--parallelism", "3"}, {"apply", "--base", "main"}} {
		errOut.Reset()
		if code := Run(context.Background(), args, f); code != errcode.ExitRefused || !strings.Contains(errOut.String(), "USAGE") {
			t.Errorf("%q: exit %d\n%s", args, code, errOut)
		}
	}
}

// A stack's gc or drift gets the user's flags as given, every value of a
// repeatable one, without those that choose the stacks or the output.
func TestEveryStackArgs(t *testing.T) {
	t.Parallel()
	f, _, _ := testFactory(nil)
	var out cmdutil.Outcome
	cmd := gccmd.NewCmdGC(f, &out, nil)
	cmd.Flags().Bool("json", false, "")
	if err := cmd.ParseFlags([]string{"--all", "--parallelism=2", "--chdir=x", "--json", "--var=a=1", "--var", "b=2,3", "--var-file=v.tfvars", "--open-prs=6", "--yes"}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(manystacks.EveryStackArgs(cmd, "gc", nil), " ")
	if want := "gc --open-prs=6 --var=a=1 --var=b=2,3 --var-file=v.tfvars --yes=true"; got != want {
		t.Errorf("everyStackArgs = %q, want %q", got, want)
	}
}

// plan -out with --all or --changed names a directory of every stack's
// plan (issue 49 item 3): a file, or a directory that holds anything, is
// refused before any stack runs; apply of a directory without its manifest
// (a plan of many stacks that did not finish) is refused before anything
// runs.
func TestOutWithManyStacks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "stacks", "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stacks", "app", "main.tf"), []byte("resource \"sponson_scope\" \"this\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tfplan")
	used := t.TempDir()
	for _, p := range []string{file, filepath.Join(used, "old.tfplan")} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unfinished := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--all", "--chdir", dir, "-out=" + file}, "error USAGE: -out " + file + " is a file"},
		{[]string{"plan", "--all", "--chdir", dir, "-out", used}, "error USAGE: -out " + used + " is not empty"},
		{[]string{"apply", "--chdir", dir, unfinished}, "error PLAN_CORRUPT: " + unfinished + ": no sponson-plans manifest"},
	} {
		f, _, errOut := testFactory(map[string]string{"SPONSON_STACK": ""})
		if code := Run(context.Background(), tc.args, f); code != errcode.ExitRefused || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, want 2 and %q\n%s", tc.args, code, tc.want, errOut)
		}
	}
}

// Silent green no-ops are refused (issue 49): --all under a directory that
// does not exist, and --all over root modules none of which declares
// sponson_scope (a monorepo being migrated), which ran nothing and passed.
func TestAllFindsNoStack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "stacks", "queue"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stacks", "queue", "main.tf"), []byte("resource \"terraform_data\" \"q\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--all", "--chdir", filepath.Join(dir, "typo-dir")}, "there is no such directory"},
		{[]string{"stacks", "--chdir", filepath.Join(dir, "typo-dir")}, "there is no such directory"},
		{[]string{"plan", "--all", "--chdir", dir}, "plan --all found no stack under " + dir},
		{[]string{"drift", "--all", "--chdir", dir}, "drift --all found no stack"},
	} {
		f, _, errOut := testFactory(map[string]string{"SPONSON_STACK": ""})
		code := Run(context.Background(), tc.args, f)
		if code != errcode.ExitRefused || !strings.Contains(errOut.String(), "error USAGE: ") || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, want 2 and %q\n%s", tc.args, code, tc.want, errOut)
		}
		if strings.Contains(tc.want, "found no stack") && !strings.Contains(errOut.String(), "`stacks/queue`") {
			t.Errorf("%q: the hint does not name the directory that holds configuration files:\n%s", tc.args, errOut)
		}
	}
}

// --changed is no silent green no-op either (issue 49): in a repository of
// root modules none of which declares sponson_scope it is refused as --all
// is, whatever the change; in one with stacks, a change to a root module
// that is no stack runs nothing for it and says so.
func TestChangedFindsNoStack(t *testing.T) {
	t.Parallel()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@example.invalid"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(p, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo := func(files map[string]string) string {
		dir := t.TempDir()
		git(dir, "init", "--quiet", "-b", "main")
		for name, src := range files {
			write(filepath.Join(dir, name), src)
		}
		git(dir, "add", "-A")
		git(dir, "commit", "--quiet", "-m", "first")
		write(filepath.Join(dir, "infra", "queue", "main.tf"), "resource \"terraform_data\" \"q\" { input = 2 }\n")
		git(dir, "commit", "--quiet", "-am", "queue")
		return dir
	}
	none := repo(map[string]string{"infra/queue/main.tf": "resource \"terraform_data\" \"q\" {}\n", "infra/cache/main.tf": "resource \"terraform_data\" \"c\" {}\n"})
	for _, command := range []string{"plan", "apply"} {
		args := []string{command, "--changed", "--base", "HEAD~1", "--chdir", none}
		f, _, errOut := testFactory(map[string]string{"SPONSON_STACK": ""})
		code := Run(context.Background(), args, f)
		want := command + " --changed found no stack under "
		if code != errcode.ExitRefused || !strings.Contains(errOut.String(), "error USAGE: "+want) || !strings.Contains(errOut.String(), "`infra/cache`, `infra/queue`") {
			t.Errorf("%q: exit %d, want 2, %q and the directories in the hint\n%s", args, code, want, errOut)
		}
	}

	some := repo(map[string]string{"infra/queue/main.tf": "resource \"terraform_data\" \"q\" {}\n", "stacks/app/main.tf": "resource \"sponson_scope\" \"s\" {}\n"})
	f, out, errOut := testFactory(map[string]string{"SPONSON_STACK": ""})
	if code := Run(context.Background(), []string{"stacks", "--changed", "--base", "HEAD~1", "--chdir", some}, f); code != 0 {
		t.Fatalf("stacks --changed: exit %d\n%s", code, errOut)
	}
	want := "warning: the change touches 1 root module that declare no sponson_scope, so are no stacks and no --changed run includes them: infra/queue"
	if !strings.Contains(errOut.String(), want) || !strings.Contains(out.String(), "no stack changed") {
		t.Errorf("stacks --changed after a change to infra/queue: want %q and no stack\nstdout:\n%s\nstderr:\n%s", want, out, errOut)
	}
}
