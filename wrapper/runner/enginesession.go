package runner

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-shellwords"
	"github.com/spf13/cobra"
	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/engineflag"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
	"github.com/sponson/terraform-provider-sponson/internal/version"
	"github.com/sponson/terraform-provider-sponson/provider"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// OpenEngine starts an engine session in dir for an engine command, with
// sponson's provider served to it; stop ends both.
func OpenEngine(ctx context.Context, engines cmdutil.Engines, dir, engineFlag string, out, errOut io.Writer, warn func(string)) (*engine.Session, func(), error) {
	bin, err := engine.Locate(engineFlag, engines.Lookup)
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "sponson-engine-")
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "creating a temporary directory")
	}
	env, stopProvider, err := engine.WithProvider(tmp, func() ([]string, func(), error) {
		return provider.EngineEnv(context.Background(), version.Mirror(), dir, nil)
	}, warn)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	stop := func() {
		stopProvider()
		os.RemoveAll(tmp)
	}
	sess, err := engine.Open(ctx, engine.Options{Dir: dir, Binary: bin, Env: env, Stdout: out, Stderr: errOut, KeepCLIArgs: true})
	if err != nil {
		stop()
		return nil, nil, err
	}
	return sess, stop, nil
}

// serveProvider serves sponson's provider from this process to a run's
// engine (scoperun.Options.ServeProvider): the packages that start the
// engine do not import the provider.
var serveProvider = provider.EngineEnv

// EngineFlags reads a run command's engine flags as the engine would: the
// user's TF_CLI_ARGS_<command>, then TF_CLI_ARGS, then the command line
// (the engine inserts both variables right after the subcommand, the
// command's own first), so that a later flag overrides an earlier one. The
// variables are read here rather than left to the engine so that what they
// hold passes the same refusals; sponson clears them for the engine.
func EngineFlags(cmd *cobra.Command, command string, getenv func(string) string) (engineflag.Parsed, error) {
	var p engineflag.Parsed
	for _, name := range []string{engine.CLIArgsPrefix + "_" + command, engine.CLIArgsPrefix} {
		v := getenv(name)
		if strings.TrimSpace(v) == "" {
			continue
		}
		words, err := shellwords.Parse(v)
		if err != nil {
			return p, errcode.Wrap(errcode.Usage, err, "%s cannot be split into arguments", name)
		}
		toks, err := joinValues(words, name)
		if err != nil {
			return p, err
		}
		if err := p.Merge(command, toks, name); err != nil {
			return p, ownFlagHint(cmd, err)
		}
	}
	args, _ := cmd.Flags().GetStringArray(cmdutil.EngineArgFlag)
	if err := p.Merge(command, args, "the command line"); err != nil {
		return p, ownFlagHint(cmd, err)
	}
	return p, nil
}

// joinValues turns `-name VALUE` into `-name=VALUE` in a list of words.
func joinValues(words []string, source string) ([]string, error) {
	var out []string
	for i := 0; i < len(words); i++ {
		_, name, _, hasValue, ok := engineflag.Split(words[i])
		if !ok {
			return nil, errcode.New(errcode.Usage, "%s holds %q, which is not a flag", source, words[i]).
				WithHint("TF_CLI_ARGS and TF_CLI_ARGS_<command> may hold only engine flags under sponson.")
		}
		tok := words[i]
		if _, takesValue := engineflag.Known(name); takesValue && !hasValue && i+1 < len(words) {
			tok = "-" + name + "=" + words[i+1]
			i++
		}
		out = append(out, tok)
	}
	return out, nil
}

// ownFlagHint says so when an unknown engine flag is one of sponson's own
// flags given with one dash.
func ownFlagHint(cmd *cobra.Command, err error) error {
	e := errcode.As(err)
	if msg := e.Message; strings.HasPrefix(msg, "unknown flag -") {
		name := strings.Fields(strings.TrimPrefix(msg, "unknown flag -"))[0]
		if cmd.Flags().Lookup(name) != nil {
			return e.WithHint("--" + name + " is sponson's own flag: it takes two dashes.")
		}
	}
	return e
}

// applyEngineFlags folds the engine flags into the run's flags and
// options: -chdir into --chdir, -lock-timeout into the lease wait, -out and
// apply's plan file into the saved-plan paths.
func applyEngineFlags(r *cmdutil.RunFlags, cmd *cobra.Command, command string, p engineflag.Parsed, positional []string) error {
	if len(positional) > 0 {
		if command != engineflag.Apply || len(positional) > 1 {
			return errcode.New(errcode.Usage, "sponson %s takes no arguments, got %q", command, positional).
				WithHint("The configuration directory is --chdir DIR (or -chdir=DIR before the command).")
		}
		p.PlanFile = positional[0]
	}
	if p.PlanFile != "" && (len(p.Vars) > 0 || !p.Flags.Empty()) {
		return errcode.New(errcode.Usage, "apply %s applies the saved plan as it was made; engine flags and -var/-var-file cannot change it", p.PlanFile).
			WithHint("Give -var, -target and the like to `sponson plan -out FILE`, then apply that file alone.")
	}
	if p.Chdir != "" {
		// The engine's -chdir switches directory before anything else, so
		// its -out and plan file are in that directory (issue 52:
		// `-chdir=infra plan -out=tfplan` wrote ./tfplan). Sponson's own
		// --chdir names the configuration only.
		p.Out, p.PlanFile = InDir(p.Chdir, p.Out), InDir(p.Chdir, p.PlanFile)
	}
	r.SavePlan, r.PlanFile = p.Out, p.PlanFile
	if p.Flags.PlanDestroy && p.Out != "" {
		return errcode.New(errcode.Usage, "plan -destroy -out: a saved plan is applied by apply, which does not destroy").
			WithHint("Review with plan -destroy, then run `sponson destroy`.")
	}
	if p.Flags.RefreshOnly && p.Flags.NoRefresh {
		return errcode.New(errcode.Usage, "-refresh-only and -refresh=false contradict each other").
			WithHint("A refresh-only plan reads the real objects; drop one of the two flags.")
	}
	if p.Chdir != "" {
		if r.Chdir != "" && !sameDir(r.Chdir, p.Chdir) {
			return errcode.New(errcode.Usage, "-chdir=%s contradicts --chdir (or SPONSON_CHDIR) %s", p.Chdir, r.Chdir).
				WithHint("Give the configuration directory once.")
		}
		r.Chdir = p.Chdir
	}
	if p.LockTimeoutSet && command != engineflag.Plan {
		if err := mergeLockTimeout(r, cmd, p.LockTimeout); err != nil {
			return err
		}
	}
	r.EngineArgs = p
	return nil
}

// InDir is path, read in dir when it is relative; "" stays "".
func InDir(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// mergeLockTimeout folds -lock-timeout=D into the lease wait: it is --wait
// --wait-timeout D. Given with --wait or --wait-timeout (or SPONSON_WAIT*),
// the same wait has two bounds and the smaller wins; only a contradiction
// is refused: --wait with -lock-timeout=0s, which says not to wait.
func mergeLockTimeout(r *cmdutil.RunFlags, cmd *cobra.Command, d time.Duration) error {
	fs := cmd.Flags()
	waitSet, timeoutSet := fs.Changed("wait"), fs.Changed("wait-timeout")
	if !waitSet && !timeoutSet {
		r.Wait, r.WaitTimeout = d > 0, d
		return nil
	}
	if d == 0 {
		if waitSet && r.Wait {
			return errcode.New(errcode.Usage, "--wait (or SPONSON_WAIT) and -lock-timeout=0s contradict each other: one waits for the scope's lease, the other does not").
				WithHint("Drop one: -lock-timeout=D is --wait --wait-timeout D.")
		}
		r.Wait = false
		return nil
	}
	if waitSet && !r.Wait {
		return errcode.New(errcode.Usage, "--wait=false (or SPONSON_WAIT) and -lock-timeout=%s contradict each other: one does not wait for the scope's lease, the other does", d).
			WithHint("Drop one: -lock-timeout=D is --wait --wait-timeout D.")
	}
	r.Wait = true
	if !timeoutSet || d < r.WaitTimeout {
		r.WaitTimeout = d
	}
	return nil
}

func sameDir(a, b string) bool {
	x, errA := filepath.Abs(a)
	y, errB := filepath.Abs(b)
	return errA == nil && errB == nil && filepath.Clean(x) == filepath.Clean(y)
}

// DetailedRequested is detailedInArgs for a parsed command.
func DetailedRequested(cmd *cobra.Command) bool {
	args, _ := cmd.Flags().GetStringArray(cmdutil.EngineArgFlag)
	for i := range args {
		args[i] = "--" + cmdutil.EngineArgFlag + "=" + args[i]
	}
	return cmd.Name() == engineflag.Plan && DetailedInArgs(args)
}

// StateOutputs reads the root module outputs of a state; none for an empty
// or missing state.
func StateOutputs(state []byte) (map[string]tfstate.Output, error) {
	st, err := tfstate.ReadOutputs(state)
	return st.Outputs, err
}

// DetailedInArgs reports whether a normalized command line asks for
// -detailed-exitcode, for errors found before its engine flags are read.
func DetailedInArgs(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		v, ok := strings.CutPrefix(a, "--"+cmdutil.EngineArgFlag+"=-detailed-exitcode")
		if ok && (v == "" || v == "=true" || v == "=1") {
			return true
		}
	}
	return false
}

// heartbeat is SPONSON_HEARTBEAT: the longest an apply's log stays silent
// about a resource in flight (engine.DefaultHeartbeat when unset; "off"
// for none).
func heartbeat(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv("SPONSON_HEARTBEAT"))
	switch v {
	case "":
		return 0, nil
	case "off", "0":
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, errcode.New(errcode.Usage, "SPONSON_HEARTBEAT=%q is not a duration of a second or more", v).
			WithHint("Give the longest the log may stay silent about a resource in flight, e.g. 30s (the default) or 2m; off for none.")
	}
	return d, nil
}
