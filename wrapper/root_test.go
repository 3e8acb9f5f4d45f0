package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/enginecmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

func TestNormalizeArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"apply", "-var", "a=1", "-var-file", "x.tfvars"}, []string{"apply", "--engine-arg=-var=a=1", "--engine-arg=-var-file=x.tfvars"}},
		{[]string{"apply", "-var=a=1", "-var-file=x.tfvars"}, []string{"apply", "--engine-arg=-var=a=1", "--engine-arg=-var-file=x.tfvars"}},
		{[]string{"apply", "--var", "a=1"}, []string{"apply", "--engine-arg=-var=a=1"}},
		{[]string{"apply", "-variable"}, []string{"apply", "--engine-arg=-variable"}},
		{[]string{"apply", "--", "-var"}, []string{"apply", "--", "-var"}},
		{[]string{"apply", "--env", "-target", "-target", "x"}, []string{"apply", "--env", "-target", "--engine-arg=-target=x"}},
		{[]string{"apply", "--env=p", "-auto-approve", "--wait", "-h"}, []string{"apply", "--env=p", "--engine-arg=-auto-approve", "--wait", "-h"}},
		{[]string{"--json", "-chdir=infra", "plan", "-refresh", "false"}, []string{"--json", "plan", "--engine-arg=-chdir=infra", "--engine-arg=-refresh", "false"}},
		{[]string{"apply", "--nope", "--target=a"}, []string{"apply", "--nope", "--engine-arg=-target=a"}},
		{[]string{"gc", "-var", "a=1", "--yes"}, []string{"gc", "--var", "a=1", "--yes"}},
		{[]string{"output", "-json", "url", "-raw", "--json", "-no-color"}, []string{"output", "--engine-json", "url", "--raw", "--json", "--no-color"}},
		// Engine commands keep their flags; -chdir moves behind them.
		{[]string{"-chdir=infra", "init", "-input=false", "-backend-config", "k=v"}, []string{"init", "--chdir=infra", "-input=false", "-backend-config", "k=v"}},
		{[]string{"fmt", "-check", "-recursive"}, []string{"fmt", "-check", "-recursive"}},
		{[]string{"-version"}, []string{"version"}},
		{[]string{"--version", "-json"}, []string{"version", "-json"}},
		{[]string{"show", "-json", "tfplan", "-no-color"}, []string{"show", "--engine-json", "tfplan", "--no-color"}},
		{[]string{"force-unlock", "-force", "run-1", "--scope", "pr-1"}, []string{"force-unlock", "--force", "run-1", "--scope", "pr-1"}},
		// An import's ID may begin with a dash: after ADDR, a word that is no
		// engine flag is the ID, and goes after `--`.
		{[]string{"import", "random_id.r", "-Xyz_ab"}, []string{"import", "random_id.r", "--", "-Xyz_ab"}},
		{[]string{"import", "--scope", "s", "-var", "a=1", "random_id.r", "-abc=d", "--approved-by", "al"}, []string{"import", "--scope", "s", "--engine-arg=-var=a=1", "random_id.r", "--approved-by", "al", "--", "-abc=d"}},
		{[]string{"import", "x.y", "-var=b=2", "-abc", "--", "z"}, []string{"import", "x.y", "--engine-arg=-var=b=2", "--", "-abc", "z"}},
		{[]string{"import", "-abc", "x.y", "id"}, []string{"import", "--engine-arg=-abc", "x.y", "id"}},
		{[]string{"import", "x.y", "id", "-abc"}, []string{"import", "x.y", "id", "--engine-arg=-abc"}},
		{[]string{"apply", "x.y", "-abc"}, []string{"apply", "x.y", "--engine-arg=-abc"}},
	} {
		if diff := cmp.Diff(tc.want, NormalizeArgs(tc.in)); diff != "" {
			t.Errorf("NormalizeArgs(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// testStack is the stack of the command tests' configurations: their
// directories are in no repository, whose derived names would differ per run.
const testStack = "acme/app"

func testFactory(env map[string]string) (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &cmdutil.Factory{
		Out:    &out,
		ErrOut: &errOut,
		Getenv: func(k string) string {
			if v, ok := env[k]; ok || k != "SPONSON_STACK" {
				return v
			}
			return testStack
		},
		Executable: func() (string, error) { return "/usr/bin/sponson", nil },
		Lookup: engine.Lookup{
			Getenv:   func(k string) string { return env[k] },
			LookPath: func(p string) (string, error) { return "/usr/bin/" + p, nil },
		},
	}, &out, &errOut
}

func decode(t *testing.T, out *bytes.Buffer) cmdutil.Envelope {
	t.Helper()
	var env cmdutil.Envelope
	dec := json.NewDecoder(out)
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("stdout is not a JSON document: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one document")
	}
	return env
}

func TestJSONEnvelopeForEveryOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		exit errcode.ExitCode
		code errcode.Code
	}{
		{"unknown flag", []string{"apply", "--nope", "--json"}, nil, errcode.ExitRefused, errcode.Usage},
		{"unknown command", []string{"deploy", "--json"}, nil, errcode.ExitRefused, errcode.Usage},
		{"extra argument", []string{"plan", "dir", "--json"}, nil, errcode.ExitRefused, errcode.Usage},
		{"bad duration from env", []string{"apply", "--scope", "x", "--json"}, map[string]string{"SPONSON_LEASE_TTL": "soon"}, errcode.ExitRefused, errcode.Usage},
		{"lease ttl too short", []string{"apply", "--scope", "x", "--lease-ttl", "10ms", "--json"}, nil, errcode.ExitRefused, errcode.Usage},
		{"production without approver", []string{"destroy", "--scope", "main", "--env", "production", "--json"}, nil, errcode.ExitRefused, errcode.EnvNotApproved},
		{"approver from env is whitespace", []string{"apply", "--scope", "main", "--json"}, map[string]string{"SPONSON_CTX_ENV": "production", "SPONSON_APPROVED_BY": "   "}, errcode.ExitRefused, errcode.EnvNotApproved},
		{"json from env", []string{"apply", "--nope"}, map[string]string{"SPONSON_JSON": "true"}, errcode.ExitRefused, errcode.Usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, out, _ := testFactory(tc.env)
			code := Run(context.Background(), tc.args, f)
			env := decode(t, out)
			if code != tc.exit || env.Error == nil || env.Error.Code != tc.code || env.OK || env.Exit != int(tc.exit) {
				t.Errorf("exit %d, envelope %+v; want exit %d code %s", code, env, tc.exit, tc.code)
			}
			if env.Error != nil && env.Error.Hint == "" {
				t.Errorf("error without a hint: %+v", env.Error)
			}
		})
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	t.Parallel()
	f, out, _ := testFactory(nil)
	// A command whose run function panics, built through the same seam
	// the real commands use.
	code := runWith(context.Background(), []string{"apply", "--chdir", t.TempDir(), "--scope", "pr-1", "--json"}, f, func(context.Context, *runner.RunInput) cmdutil.Outcome { panic("boom") })
	env := decode(t, out)
	if code != errcode.ExitFailed || env.Error == nil || env.Error.Code != errcode.Internal || !strings.Contains(env.Error.Message, "boom") {
		t.Errorf("exit %d, envelope %+v; want INTERNAL naming the panic", code, env)
	}
}

func TestRunFlagsReachTheRun(t *testing.T) {
	t.Parallel()
	f, out, _ := testFactory(map[string]string{"SPONSON_WAIT": "true", "SPONSON_LEASE_TTL": "90s", "SPONSON_APPROVED_BY": " Ada "})
	var got *runner.RunInput
	dir := t.TempDir()
	code := runWith(context.Background(), []string{"apply", "--chdir", dir, "--pr", "42", "--branch", "feat/search", "--env", "production", "-var", "a=1", "-var-file=x.tfvars", "--json"}, f,
		func(_ context.Context, in *runner.RunInput) cmdutil.Outcome {
			got = in
			return cmdutil.Outcome{Command: "apply"}
		})
	if code != errcode.ExitOK {
		t.Fatalf("exit %d: %s", code, out)
	}
	o := got.Opts
	if o.Context.Scope != "pr-42" || o.Context.Predecessor != "branch-feat-search" || o.Context.Environment != "production" {
		t.Errorf("context %+v", o.Context)
	}
	if !o.Lease.Wait || o.Lease.TTL != 90*time.Second || o.ApprovedBy != "Ada" {
		t.Errorf("lease %+v approver %q: the SPONSON_* variables did not apply", o.Lease, o.ApprovedBy)
	}
	want := []engine.VarArg{{Value: "a=1"}, {File: true, Value: "x.tfvars"}}
	if diff := cmp.Diff(want, o.Vars); diff != "" {
		t.Errorf("vars (-want +got):\n%s", diff)
	}
	if o.Dir != dir || got.StoreURL != "file://"+dir+"/.sponson" {
		t.Errorf("dir %q store %q", o.Dir, got.StoreURL)
	}
	if o.Engine != "/usr/bin/tofu" || o.ProviderBinary != "/usr/bin/sponson" {
		t.Errorf("engine %q provider %q", o.Engine, o.ProviderBinary)
	}
}

func TestHumanErrorSaysWhatToDo(t *testing.T) {
	t.Parallel()
	f, out, errOut := testFactory(nil)
	code := Run(context.Background(), []string{"apply", "--scope", "main", "--env", "production"}, f)
	if code != errcode.ExitRefused || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	if got := errOut.String(); !strings.HasPrefix(got, "error ENV_NOT_APPROVED:") || !strings.Contains(got, "hint: Pass --approved-by NAME") {
		t.Errorf("stderr:\n%s", got)
	}
}

func TestEngineCommandRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // in the message or hint
	}{
		{[]string{"workspace", "select", "-or-create", "pr-1"}, "--scope"},
		{[]string{"console"}, "state pull"},
		{[]string{"taint", "a.b"}, "-replace"},
		{[]string{"frobnicate"}, `"frobnicate" is not a sponson command`},
		{[]string{"pan"}, "Did you mean `sponson plan`?"},
		{[]string{"state", "push", "x.tfstate"}, "state pull"}, // no such file
		{[]string{"state"}, "needs a subcommand"},
		{[]string{"state", "nope"}, `no subcommand "nope"`},
		{[]string{"providers"}, "lock"},
		{[]string{"metadata"}, "functions"},
	} {
		f, out, _ := testFactory(nil)
		code := Run(context.Background(), append(tc.args, "--json"), f)
		if code != errcode.ExitRefused {
			t.Errorf("%q: exit %d, want 2\n%s", tc.args, code, out)
			continue
		}
		var env struct {
			OK    bool `json:"ok"`
			Error struct{ Code, Message, Hint string }
		}
		if err := json.Unmarshal(out.Bytes(), &env); err != nil {
			t.Fatalf("%q: not one JSON document: %v\n%s", tc.args, err, out)
		}
		if env.OK || env.Error.Code != "USAGE" || !strings.Contains(env.Error.Message+" "+env.Error.Hint, tc.want) {
			t.Errorf("%q: %+v, want USAGE saying %q", tc.args, env, tc.want)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	got := enginecmd.UnifiedDiff("main.tf", "a\n  b = 1\nc\n", "a\nb = 1\nc\n")
	want := "--- old/main.tf\n+++ new/main.tf\n@@ -1,3 +1,3 @@\n a\n-  b = 1\n+b = 1\n c\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unifiedDiff (-want +got):\n%s", diff)
	}
	if enginecmd.UnifiedDiff("x", "same\n", "same\n") != "" {
		t.Error("a diff of equal texts")
	}
}

func TestAnnotationEscapes(t *testing.T) {
	t.Parallel()
	if got, want := cmdutil.EscapeData("50% done\nnext"), "50%25 done%0Anext"; got != want {
		t.Errorf("escapeData: %q, want %q", got, want)
	}
	if got, want := cmdutil.EscapeProperty("a:b,c"), "a%3Ab%2Cc"; got != want {
		t.Errorf("escapeProperty: %q, want %q", got, want)
	}
}

// TestReadmeEngineTable keeps the README's table of engine commands the
// one `sponson --help` prints.
func TestReadmeEngineTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	help := enginecmd.EngineTableHelp()
	for _, r := range enginecmd.EngineCommandTable() {
		row := fmt.Sprintf("| `%s` | %s |", strings.ReplaceAll(r.Command, "|", `\|`), r.Meaning)
		if !strings.Contains(string(b), row+"\n") {
			t.Errorf("README.md lacks the row\n%s", row)
		}
		if !strings.Contains(help, r.Command) {
			t.Errorf("sponson --help lacks %q", r.Command)
		}
	}
}

// TestGitHubAnnotations: under GITHUB_ACTIONS=true an error and the
// warnings of a command are also workflow commands on stderr, in --json
// mode too, whose stdout stays one document.
func TestGitHubAnnotations(t *testing.T) {
	t.Parallel()
	f, out, errOut := testFactory(map[string]string{"GITHUB_ACTIONS": "true"})
	if code := Run(context.Background(), []string{"workspace", "select", "x", "--json"}, f); code != errcode.ExitRefused {
		t.Fatalf("exit %d", code)
	}
	want := "::error title=sponson workspace%3A USAGE::sponson does not run the engine's \"workspace\" command%0AA scope replaces a workspace"
	if !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks the annotation %q:\n%s", want, errOut)
	}
	var env map[string]any
	if err := json.Unmarshal(out.Bytes(), &env); err != nil {
		t.Errorf("stdout is not one JSON document: %v\n%s", err, out)
	}
	cmdutil.AnnotateOutcome(f.IO(), cmdutil.Outcome{Command: "plan", Warnings: []string{"50% of a warning"}})
	if want := "::warning title=sponson plan::50%25 of a warning\n"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks the warning annotation %q:\n%s", want, errOut)
	}
	// Without GITHUB_ACTIONS, nothing.
	f, _, errOut = testFactory(nil)
	Run(context.Background(), []string{"workspace", "select", "x"}, f)
	if strings.Contains(errOut.String(), "::error") {
		t.Errorf("an annotation outside GitHub Actions:\n%s", errOut)
	}
}

// TestShowPlanFileWithoutJSON: a saved plan made before sponson kept the
// plan's JSON is not shown as if it were empty.
func TestShowPlanFileWithoutJSON(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "old.tfplan")
	if err := savedplan.Write(path, &savedplan.File{Meta: savedplan.Meta{Environment: "preview", Scope: "pr-1"}, Plan: []byte("engine plan")}, nil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"show", "-json", path}, {"show", path}} {
		f, out, _ := testFactory(nil)
		code := Run(context.Background(), append(args, "--json"), f)
		env := decode(t, out)
		if code != errcode.ExitRefused || env.Error == nil || !strings.Contains(env.Error.Message, "holds no plan") {
			t.Errorf("%q: exit %d, %+v", args, code, env.Error)
		}
	}
	// And a file that is not a saved plan at all: PLAN_CORRUPT.
	if err := os.WriteFile(path, []byte("tfplan of the engine"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, out, _ := testFactory(nil)
	if code := Run(context.Background(), []string{"show", "-json", path, "--json"}, f); code != errcode.ExitRefused || decode(t, out).Error.Code != errcode.PlanCorrupt {
		t.Errorf("show of a file that is not a saved plan: exit %d\n%s", code, out)
	}
}

// TestGitHubGroups: in a GitHub Actions job the engine's init and plan are
// foldable groups; the apply is not folded; elsewhere there are none.
func TestGitHubGroups(t *testing.T) {
	t.Parallel()
	f, _, _ := testFactory(map[string]string{"GITHUB_ACTIONS": "true"})
	var b bytes.Buffer
	sections := cmdutil.LogSections(f.Getenv, nil, &b)
	for _, s := range [][2]string{{"init", "engine init"}, {"plan", "engine plan"}, {"apply", "engine apply"}} {
		end := sections(s[0], s[1])
		b.WriteString(s[0] + " output\n")
		end()
	}
	want := "::group::engine init\ninit output\n::endgroup::\n::group::engine plan\nplan output\n::endgroup::\napply output\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	f, _, _ = testFactory(nil)
	if cmdutil.LogSections(f.Getenv, nil, &b) != nil {
		t.Error("groups outside a CI job")
	}
}

func TestGitLabSections(t *testing.T) {
	t.Parallel()
	f, _, _ := testFactory(map[string]string{"GITLAB_CI": "true"})
	f.Now = func() time.Time { return time.Unix(1700000000, 0) }
	var b bytes.Buffer
	end := cmdutil.GitlabSections(f.Getenv, f.Now, &b)("plan", "engine plan")
	b.WriteString("Plan: 1 to add\n")
	end()
	want := "\x1b[0Ksection_start:1700000000:sponson_plan[collapsed=true]\r\x1b[0Kengine plan\nPlan: 1 to add\n\x1b[0Ksection_end:1700000000:sponson_plan\r\x1b[0K\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	f, _, _ = testFactory(nil)
	if cmdutil.GitlabSections(f.Getenv, nil, &b) != nil {
		t.Error("sections outside GitLab CI")
	}
}
