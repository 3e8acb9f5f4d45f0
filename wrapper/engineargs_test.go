package wrapper

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// captureRun runs a command line through the real flag handling and
// returns what would reach the run.
func captureRun(t *testing.T, env map[string]string, args ...string) (*runner.RunInput, cmdutil.Envelope, errcode.ExitCode) {
	t.Helper()
	f, out, _ := testFactory(env)
	var got *runner.RunInput
	line := append([]string{args[0], "--json"}, args[1:]...)
	code := runWith(context.Background(), line, f, func(_ context.Context, in *runner.RunInput) cmdutil.Outcome {
		got = in
		return cmdutil.Outcome{Command: args[0]}
	})
	return got, decode(t, out), code
}

func TestEngineFlagsInBothSpellings(t *testing.T) {
	t.Parallel()
	type want struct {
		flags engine.Flags
		vars  []engine.VarArg
		wait  bool
		until time.Duration
	}
	for _, tc := range []struct {
		name      string
		separate  []string // -flag value
		joined    []string // -flag=value
		command   string
		want      want
		detailExt bool
	}{
		{"target", []string{"-target", "a.b", "-target", "c.d"}, []string{"-target=a.b", "--target=c.d"}, "apply", want{flags: engine.Flags{Targets: []string{"a.b", "c.d"}}}, false},
		{"replace", []string{"-replace", "a.b"}, []string{"-replace=a.b"}, "apply", want{flags: engine.Flags{Replace: []string{"a.b"}}}, false},
		{"exclude", []string{"-exclude", "a.b"}, []string{"-exclude=a.b"}, "destroy", want{flags: engine.Flags{Excludes: []string{"a.b"}}}, false},
		{"refresh-only", []string{"-refresh-only"}, []string{"-refresh-only=true"}, "plan", want{flags: engine.Flags{RefreshOnly: true}}, false},
		{"refresh=false", []string{"-refresh=false"}, []string{"--refresh=0"}, "apply", want{flags: engine.Flags{NoRefresh: true}}, false},
		{"refresh=true", []string{"-refresh"}, []string{"-refresh=true"}, "apply", want{}, false},
		{"parallelism", []string{"-parallelism", "3"}, []string{"-parallelism=3"}, "destroy", want{flags: engine.Flags{Parallelism: 3}}, false},
		{"compact-warnings", []string{"-compact-warnings"}, []string{"-compact-warnings=true"}, "plan", want{flags: engine.Flags{CompactWarnings: true}}, false},
		{"no-color", []string{"-no-color"}, []string{"-no-color=true"}, "apply", want{}, false},
		{"auto-approve and input=false", []string{"-auto-approve", "-input=false"}, []string{"-auto-approve=true", "--input=false"}, "apply", want{}, false},
		{"lock=true", []string{"-lock"}, []string{"-lock=true"}, "apply", want{}, false},
		{"lock-timeout waits for the lease", []string{"-lock-timeout", "90s"}, []string{"-lock-timeout=90s"}, "apply", want{wait: true, until: 90 * time.Second}, false},
		{"lock-timeout 0s does not wait", []string{"-lock-timeout", "0s"}, []string{"-lock-timeout=0s"}, "destroy", want{until: 0}, false},
		{"vars in order", []string{"-var-file", "a.tfvars", "-var", "x=1", "-var-file", "b.tfvars", "--var", "y=2"}, []string{"-var-file=a.tfvars", "-var=x=1", "--var-file=b.tfvars", "-var=y=2"}, "plan",
			want{vars: []engine.VarArg{{File: true, Value: "a.tfvars"}, {Value: "x=1"}, {File: true, Value: "b.tfvars"}, {Value: "y=2"}}}, false},
		{"detailed-exitcode", []string{"-detailed-exitcode"}, []string{"-detailed-exitcode=true"}, "plan", want{}, true},
	} {
		for spelling, flags := range map[string][]string{"separate": tc.separate, "joined": tc.joined} {
			t.Run(tc.name+"/"+spelling, func(t *testing.T) {
				t.Parallel()
				args := append([]string{tc.command, "--chdir", t.TempDir(), "--scope", "pr-1"}, flags...)
				in, env, code := captureRun(t, nil, args...)
				if code != errcode.ExitOK || in == nil {
					t.Fatalf("exit %d: %+v", code, env.Error)
				}
				if diff := cmp.Diff(tc.want.flags, in.Opts.EngineFlags); diff != "" {
					t.Errorf("engine flags (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.want.vars, in.Opts.Vars); diff != "" {
					t.Errorf("vars (-want +got):\n%s", diff)
				}
				if tc.want.until != 0 || tc.want.wait {
					if in.Opts.Lease.Wait != tc.want.wait || in.Opts.Lease.WaitTimeout != tc.want.until {
						t.Errorf("lease wait %v for %s; want %v for %s", in.Opts.Lease.Wait, in.Opts.Lease.WaitTimeout, tc.want.wait, tc.want.until)
					}
				}
				if in.DetailedExitcode != tc.detailExt {
					t.Errorf("detailed exit code %v", in.DetailedExitcode)
				}
			})
		}
	}
}

func TestEngineFlagsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		// message and hint hold these.
		message, hint string
	}{
		{"lock=false", []string{"apply", "-lock=false"}, nil, "-lock=false", "fences every state write"},
		{"state", []string{"apply", "-state", "x.tfstate"}, nil, "-state=x.tfstate", "sponson store"},
		{"state-out", []string{"plan", "-state-out=x.tfstate"}, nil, "-state-out", "fenced"},
		{"backup", []string{"destroy", "-backup=-"}, nil, "-backup", "backup"},
		{"input=true", []string{"apply", "-input=true"}, nil, "-input=true", "never prompts"},
		{"auto-approve on plan", []string{"plan", "-auto-approve"}, nil, "not a flag of sponson plan", "sponson plan passes"},
		{"detailed-exitcode on apply", []string{"apply", "-detailed-exitcode"}, nil, "not a flag of sponson apply", ""},
		{"refresh-only on destroy", []string{"destroy", "-refresh-only"}, nil, "not a flag of sponson destroy", ""},
		{"unknown engine flag", []string{"apply", "-frobnicate"}, nil, "unknown flag -frobnicate", "-target"},
		{"sponson flag with one dash", []string{"apply", "-env", "preview"}, nil, "unknown flag -env", "two dashes"},
		{"missing value", []string{"apply", "-target"}, nil, "needs a value", ""},
		{"bad bool", []string{"apply", "-refresh=maybe"}, nil, "true or false", ""},
		{"bad parallelism", []string{"apply", "-parallelism=0"}, nil, "at least 1", ""},
		{"bad lock-timeout", []string{"apply", "-lock-timeout=soon"}, nil, "duration", ""},
		{"var without value", []string{"plan", "-var", "x"}, nil, "NAME=VALUE", ""},
		{"json", []string{"plan", "-json"}, nil, "-json", "--json"},
		{"apply -destroy", []string{"apply", "-destroy"}, nil, "-destroy", "sponson destroy"},
		{"plan -destroy -out", []string{"plan", "-destroy", "-out=tfplan"}, nil, "plan -destroy -out", "sponson destroy"},
		{"apply FILE that is not there", []string{"apply", "tfplan"}, nil, "cannot read the plan file tfplan", ""},
		{"apply -- FILE that is not there", []string{"apply", "--", "tfplan"}, nil, "cannot read the plan file tfplan", ""},
		{"apply FILE with -var", []string{"apply", "-var", "a=b", "tfplan"}, nil, "applies the saved plan as it was made", "plan -out FILE"},
		{"plan takes no argument", []string{"plan", "dir"}, nil, "takes no arguments", "--chdir"},
		{"chdir conflict", []string{"apply", "--chdir", "/a", "-chdir=/b"}, nil, "contradicts --chdir", ""},
		{"chdir conflict with env", []string{"apply", "-chdir=/b"}, map[string]string{"SPONSON_CHDIR": "/a"}, "contradicts", ""},
		{"exclude on terraform", []string{"apply", "--engine", "terraform", "-exclude=a.b"}, nil, "OpenTofu flag", "-target"},
		{"refresh-only with refresh=false", []string{"apply", "-refresh-only", "-refresh=false"}, nil, "contradict", ""},
		{"--wait and lock-timeout 0s", []string{"apply", "--wait", "-lock-timeout=0s"}, nil, "contradict", "-lock-timeout=D is --wait"},
		{"SPONSON_WAIT=false and lock-timeout", []string{"apply", "-lock-timeout=1m"}, map[string]string{"SPONSON_WAIT": "false"}, "contradict", ""},
		{"lock=false from TF_CLI_ARGS", []string{"apply"}, map[string]string{"TF_CLI_ARGS": "-lock=false"}, "in TF_CLI_ARGS", "fences"},
		{"state from TF_CLI_ARGS_apply", []string{"apply"}, map[string]string{"TF_CLI_ARGS_apply": "-state 'my state'"}, "-state=my state (in TF_CLI_ARGS_apply)", ""},
		{"non-flag in TF_CLI_ARGS", []string{"apply"}, map[string]string{"TF_CLI_ARGS": "foo"}, "not a flag", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{tc.args[0], "--scope", "pr-1"}, tc.args[1:]...)
			in, env, code := captureRun(t, tc.env, args...)
			if in != nil || code != errcode.ExitRefused || env.Error == nil || env.Error.Code != errcode.Usage {
				t.Fatalf("exit %d, envelope %+v; want USAGE", code, env)
			}
			if !strings.Contains(env.Error.Message, tc.message) || !strings.Contains(env.Error.Hint, tc.hint) || env.Error.Hint == "" {
				t.Errorf("error %q, hint %q; want %q and %q", env.Error.Message, env.Error.Hint, tc.message, tc.hint)
			}
		})
	}
}

// TestLockTimeoutWithWait: -lock-timeout and --wait are one wait for the
// scope's lease; given together, the smaller bound wins.
func TestLockTimeoutWithWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		wait  bool
		until time.Duration
	}{
		{"--wait and lock-timeout", []string{"--wait", "-lock-timeout=5m"}, nil, true, 5 * time.Minute},
		{"--wait-timeout smaller", []string{"--wait", "--wait-timeout", "1m", "-lock-timeout=5m"}, nil, true, time.Minute},
		{"lock-timeout smaller", []string{"--wait-timeout", "20m", "-lock-timeout=2m"}, nil, true, 2 * time.Minute},
		{"SPONSON_WAIT and lock-timeout", []string{"-lock-timeout=30s"}, map[string]string{"SPONSON_WAIT": "true", "SPONSON_WAIT_TIMEOUT": "10s"}, true, 10 * time.Second},
		{"--wait=false and lock-timeout 0s", []string{"--wait=false", "-lock-timeout=0s"}, nil, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"apply", "--chdir", t.TempDir(), "--scope", "pr-1"}, tc.args...)
			in, env, code := captureRun(t, tc.env, args...)
			if code != errcode.ExitOK || in == nil {
				t.Fatalf("exit %d: %+v", code, env.Error)
			}
			if l := in.Opts.Lease; l.Wait != tc.wait || (tc.wait && l.WaitTimeout != tc.until) {
				t.Errorf("lease wait %v for %s; want %v for %s", l.Wait, l.WaitTimeout, tc.wait, tc.until)
			}
		})
	}
}

func TestEngineFlagsFromTFCLIArgs(t *testing.T) {
	t.Parallel()
	// The engine's order: TF_CLI_ARGS_apply, then TF_CLI_ARGS, then the
	// command line; the later value of a flag wins.
	env := map[string]string{
		"TF_CLI_ARGS_apply": `-parallelism=2 -var "a=from apply" -no-color`,
		"TF_CLI_ARGS":       `-parallelism 4 -var-file='x y.tfvars'`,
	}
	in, e, code := captureRun(t, env, "apply", "--chdir", t.TempDir(), "--scope", "pr-1", "-var", "b=1")
	if code != errcode.ExitOK {
		t.Fatalf("exit %d: %+v", code, e.Error)
	}
	if in.Opts.EngineFlags.Parallelism != 4 {
		t.Errorf("parallelism %d; want 4 (TF_CLI_ARGS comes after TF_CLI_ARGS_apply)", in.Opts.EngineFlags.Parallelism)
	}
	want := []engine.VarArg{{Value: "a=from apply"}, {File: true, Value: "x y.tfvars"}, {Value: "b=1"}}
	if diff := cmp.Diff(want, in.Opts.Vars); diff != "" {
		t.Errorf("vars (-want +got):\n%s", diff)
	}
}

func TestEngineChdirBeforeTheCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, e, code := captureRun(t, nil, "-chdir="+dir, "plan", "--scope", "pr-1")
	if code != errcode.ExitOK || in.Opts.Dir != dir {
		t.Fatalf("exit %d, dir %q: %+v", code, in.Opts.Dir, e.Error)
	}
	// The same directory twice is no conflict.
	in, e, code = captureRun(t, nil, "plan", "--chdir", dir, "-chdir="+dir+"/.", "--scope", "pr-1")
	if code != errcode.ExitOK || in.Opts.Dir != dir {
		t.Fatalf("exit %d, dir %q: %+v", code, in.Opts.Dir, e.Error)
	}
}

// TestDetailedExitcode is the contract of plan -detailed-exitcode: 0 no
// changes, 2 changes (the envelope still says ok), 1 for every error,
// refusals included, so that a script can tell "changes present" from
// "refused".
func TestDetailedExitcode(t *testing.T) {
	t.Parallel()
	run := func(args []string, o cmdutil.Outcome) (errcode.ExitCode, cmdutil.Envelope) {
		f, out, _ := testFactory(nil)
		code := runWith(context.Background(), append(args, "--json"), f, func(context.Context, *runner.RunInput) cmdutil.Outcome { return o })
		return code, decode(t, out)
	}
	dir := t.TempDir()
	plan := []string{"plan", "--chdir", dir, "--scope", "pr-1", "-detailed-exitcode"}
	for _, tc := range []struct {
		name string
		args []string
		o    cmdutil.Outcome
		exit errcode.ExitCode
		ok   bool
	}{
		{"no changes", plan, cmdutil.Outcome{Command: "plan", DetailedExitcode: true}, 0, true},
		{"changes", plan, cmdutil.Outcome{Command: "plan", DetailedExitcode: true, Changes: true}, 2, true},
		{"failed", plan, cmdutil.Outcome{Command: "plan", DetailedExitcode: true, Err: errcode.New(errcode.OwnedByOtherScope, "x")}, 1, false},
		{"refused by a flag", append(plan, "-lock=false"), cmdutil.Outcome{}, 1, false},
		{"refused by the flag parser", append(plan, "--nope"), cmdutil.Outcome{}, 1, false},
		{"refused without -detailed-exitcode", []string{"plan", "--scope", "pr-1", "-lock=false"}, cmdutil.Outcome{}, 2, false},
		{"changes without -detailed-exitcode", []string{"plan", "--chdir", dir, "--scope", "pr-1"}, cmdutil.Outcome{Command: "plan", Changes: true}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, env := run(tc.args, tc.o)
			if code != tc.exit || env.Exit != int(tc.exit) || env.OK != tc.ok {
				t.Errorf("exit %d, envelope exit %d ok %v; want %d, ok %v", code, env.Exit, env.OK, tc.exit, tc.ok)
			}
		})
	}
}

func TestHelpListsEngineFlags(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"plan", "apply", "destroy"} {
		f, out, _ := testFactory(nil)
		if code := Run(context.Background(), []string{command, "--help"}, f); code != errcode.ExitOK {
			t.Fatalf("%s --help: exit %d", command, code)
		}
		help := out.String()
		for _, want := range []string{"-target ADDRESS", "-parallelism N", "-var NAME=VALUE", "-lock-timeout DURATION", "-lock=false", "-state"} {
			if !strings.Contains(help, want) {
				t.Errorf("%s --help lacks %q:\n%s", command, want, help)
			}
		}
		if strings.Contains(help, "engine-arg") {
			t.Errorf("%s --help shows the hidden flag:\n%s", command, help)
		}
	}
}

// TestFlagValueBeforeTheCommand: a flag with its value in the next word
// before the command (`--engine PATH plan`) leaves the command found, so
// the engine's flags after it are still the engine's (issue 52: PATH was
// taken for the command and -var-file was refused as an unknown flag).
func TestFlagValueBeforeTheCommand(t *testing.T) {
	t.Parallel()
	for _, line := range [][]string{
		{"--engine", "mytofu", "plan", "-var-file=x.tfvars", "--scope", "pr-1"},
		{"--engine=mytofu", "plan", "-var-file", "x.tfvars", "--scope", "pr-1"},
		{"--json", "--engine", "mytofu", "plan", "--var-file=x.tfvars", "--scope", "pr-1"},
	} {
		f, out, _ := testFactory(nil)
		var got *runner.RunInput
		args := append(slices.Clone(line), "--json", "--chdir", t.TempDir())
		code := runWith(context.Background(), args, f, func(_ context.Context, in *runner.RunInput) cmdutil.Outcome {
			got = in
			return cmdutil.Outcome{Command: "plan"}
		})
		if e := decode(t, out); code != errcode.ExitOK || got == nil {
			t.Fatalf("%q: exit %d: %+v", line, code, e.Error)
		}
		if want := []engine.VarArg{{File: true, Value: "x.tfvars"}}; !slices.Equal(got.Opts.Vars, want) {
			t.Errorf("%q: vars %+v, want %+v", line, got.Opts.Vars, want)
		}
		if got.Opts.Engine != "/usr/bin/mytofu" { // testFactory's LookPath
			t.Errorf("%q: engine %q, want /usr/bin/mytofu", line, got.Opts.Engine)
		}
	}
	if at := commandAt([]string{"--engine", "plan"}); at != -1 {
		t.Errorf("commandAt took the value of --engine for the command (at %d)", at)
	}
}

// TestChdirBeforeEveryCommand: the engine's `-chdir=DIR` before any
// command becomes that command's --chdir, wherever the command is in the
// tree (issue 52: `-chdir=infra output -json` and `-chdir=infra state list`
// failed with "unknown shorthand flag: 'c'").
func TestChdirBeforeEveryCommand(t *testing.T) {
	t.Parallel()
	for _, line := range [][]string{
		{"-chdir=infra", "output", "-json"},
		{"-chdir=infra", "output", "-raw", "name"},
		{"-chdir=infra", "state", "list"},
		{"--json", "-chdir=infra", "state", "list", "--", "x"},
		{"-chdir=infra", "status"},
	} {
		cmd, args := parsedLine(t, line)
		if got, err := cmd.Flags().GetString("chdir"); err != nil || got != "infra" {
			t.Errorf("%q → %q: %s --chdir = %q (%v), want infra", line, args, cmd.CommandPath(), got, err)
		}
	}
}

// parsedLine finds the command of a command line as sponson reads it
// (NormalizeArgs) and parses its flags, failing the test when either fails;
// it returns the command and the normalized line.
func parsedLine(t *testing.T, line []string) (*cobra.Command, []string) {
	t.Helper()
	args := NormalizeArgs(line)
	f, _, _ := testFactory(nil)
	var result cmdutil.Outcome
	root := newCmdRoot(f, &result, nil)
	cmd, rest, err := root.Find(args)
	if err != nil {
		t.Fatalf("%q → %q: %v", line, args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("%q → %q: %s: %v", line, args, cmd.CommandPath(), err)
	}
	return cmd, args
}

// TestNoColorOnStateAndGroups: the engine's -no-color is accepted by the
// state commands (it changes nothing), and a group of engine commands run
// without its subcommand says which it has, whatever engine flags stand
// before or after it (issue 52: `state list -no-color` was refused as an
// unknown shorthand, `-chdir=infra providers` as an unknown flag --chdir).
func TestNoColorOnStateAndGroups(t *testing.T) {
	t.Parallel()
	for _, line := range [][]string{
		{"state", "list", "-no-color"},
		{"-chdir=infra", "state", "list", "-no-color"},
		{"state", "-no-color", "show", "x"},
	} {
		parsedLine(t, line)
	}
	for _, line := range [][]string{
		{"-chdir=infra", "providers"},
		{"providers", "-no-color"},
		{"-chdir=infra", "providers", "-no-color"},
	} {
		f, _, errOut := testFactory(nil)
		code := Run(t.Context(), line, f)
		if code != 2 || !strings.Contains(errOut.String(), "providers needs a subcommand") || !strings.Contains(errOut.String(), "lock, mirror, schema") {
			t.Errorf("%q: exit %d\n%s\nwant USAGE naming the subcommands", line, code, errOut)
		}
	}
}

// TestEngineChdirPlanFile: with the engine's -chdir=DIR, -out and apply's
// plan file are in DIR, as the engine reads them; with sponson's --chdir
// they stay where the command runs (issue 52: `-chdir=infra plan
// -out=tfplan` wrote ./tfplan).
func TestEngineChdirPlanFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, e, code := captureRun(t, nil, "-chdir="+dir, "plan", "-out=tfplan", "--scope", "pr-1")
	if code != errcode.ExitOK || in.Opts.SavePlan != filepath.Join(dir, "tfplan") {
		t.Fatalf("exit %d, -out %q, want %s: %+v", code, in.Opts.SavePlan, filepath.Join(dir, "tfplan"), e.Error)
	}
	in, e, code = captureRun(t, nil, "plan", "--chdir", dir, "-out=tfplan", "--scope", "pr-1")
	if code != errcode.ExitOK {
		t.Fatalf("exit %d: %+v", code, e.Error)
	}
	if cwd, _ := os.Getwd(); in.Opts.SavePlan != filepath.Join(cwd, "tfplan") {
		t.Errorf("--chdir: -out %q, want %s", in.Opts.SavePlan, filepath.Join(cwd, "tfplan"))
	}
	if got := runner.InDir(dir, "/abs/tfplan"); got != "/abs/tfplan" {
		t.Errorf("inDir kept no absolute path: %q", got)
	}
}
