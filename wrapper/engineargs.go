package wrapper

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-shellwords"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/engineflag"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// runCommands take engine flags.
var runCommands = []string{engineflag.Plan, engineflag.Apply, engineflag.Destroy, engineflag.Import}

// NormalizeArgs rewrites a command line for the flag parser. For plan,
// apply and destroy, every engine flag (`-target ADDR`, `-auto-approve`,
// `--var-file=F`, ...) becomes --engine-arg=-name[=VALUE]; sponson's own
// double-dash flags and their values stay as they are, and so does all after
// `--`. The engine's global `-chdir=DIR` before the command moves behind it.
// Other commands only learn the single-dash -var and -var-file.
func NormalizeArgs(args []string) []string {
	if len(args) > 0 && (args[0] == "-version" || args[0] == "--version" || args[0] == "-v") {
		args = append([]string{"version"}, args[1:]...)
	}
	at := commandAt(args)
	if at < 0 {
		return args
	}
	if engineCommandNames[args[at]] || args[at] == "show" || args[at] == "force-unlock" {
		return normalizeEngineCommand(args, at)
	}
	if !slices.Contains(runCommands, args[at]) {
		args, at = moveChdir(args, at)
	}
	if args[at] == "output" {
		out := slices.Clone(args)
		for i := at + 1; i < len(out) && out[i] != "--"; i++ {
			out[i] = normalizeOutput(out[i])
		}
		return out
	}
	if !slices.Contains(runCommands, args[at]) {
		return normalizeVars(args)
	}
	return normalizeRunCommand(args, at)
}

// valueless are the flags that may stand before the command and take no
// value: the root's --json and the help and version flags.
var valueless = map[string]bool{"--json": true, "--help": true, "-h": true, "--version": true, "-version": true, "-v": true}

// commandAt is the index of the command's name in args, -1 when there is
// none: the first word that is not a flag or a flag's value. A flag before
// the command in two words (`--engine PATH plan`) takes the next word as its
// value, as cobra reads it (issue 52: PATH was taken for the command, and
// the engine flags after `plan` were left to the flag parser, which refused
// them). The engine's global `-chdir=DIR` is one word.
func commandAt(args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return -1
		case !strings.HasPrefix(a, "-"):
			return i
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && !valueless[a]:
			i++
		}
	}
	return -1
}

// normalizeRunCommand is NormalizeArgs for plan, apply, destroy and the
// other run commands at args[at]: the engine's own flags, single-dash or
// not, become --engine-arg values, sponson's flags stay.
func normalizeRunCommand(args []string, at int) []string {
	own := runFlagSet(args[at])
	out := make([]string, 0, len(args)+1)
	var moved []string
	for _, a := range args[:at] {
		if strings.HasPrefix(a, "-chdir=") {
			moved = append(moved, "--"+cmdutil.EngineArgFlag+"="+a)
			continue
		}
		out = append(out, a)
	}
	out = append(append(out, args[at]), moved...)
	for i := at + 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		dashes, name, value, hasValue, ok := engineflag.Split(a)
		if !ok || (dashes == 1 && len(name) == 1) {
			out = append(out, a) // an argument, or a shorthand such as -h
			continue
		}
		if fl := own.Lookup(name); dashes == 2 && fl != nil {
			out = append(out, a)
			if !hasValue && fl.NoOptDefVal == "" && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			continue
		}
		known, takesValue := engineflag.Known(name)
		if dashes == 2 && !known {
			out = append(out, a) // the flag parser reports it
			continue
		}
		tok := "-" + name
		if hasValue {
			tok += "=" + value
		} else if takesValue && i+1 < len(args) {
			tok += "=" + args[i+1]
			i++
		}
		out = append(out, "--"+cmdutil.EngineArgFlag+"="+tok)
	}
	return out
}

// normalizeEngineCommand moves the engine's global -chdir=DIR behind the
// command. An engine command reads its flags itself, in the engine's
// grammar; show and force-unlock learn the engine's single-dash flags they
// take (-json, -no-color, -force).
func normalizeEngineCommand(args []string, at int) []string {
	var out, moved []string
	for _, a := range args[:at] {
		if strings.HasPrefix(a, "-chdir=") {
			moved = append(moved, "-"+a)
			continue
		}
		out = append(out, a)
	}
	out = append(append(out, args[at]), moved...)
	for i := at + 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || engineCommandNames[args[at]] {
			return append(out, args[i:]...)
		}
		switch a {
		case "-json", "-json=true":
			a = "--" + showJSONFlag
		case "-no-color", "-force", "-force=true":
			a = "-" + a
		default:
			if strings.HasPrefix(a, "-chdir=") {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// moveChdir moves the engine's global `-chdir=DIR` from before the
// command at args[at] to the end of the command's own flags (before any
// `--`), as sponson's --chdir=DIR, which the flag parser would otherwise
// read as the shorthand -c (issue 52: `-chdir=infra output -json` and
// `-chdir=infra state list` failed). It returns the new line and the
// command's index in it.
func moveChdir(args []string, at int) ([]string, int) {
	var before, moved []string
	for _, a := range args[:at] {
		if dir, ok := strings.CutPrefix(a, "-chdir="); ok {
			moved = append(moved, "--chdir="+dir)
			continue
		}
		before = append(before, a)
	}
	if len(moved) == 0 {
		return args, at
	}
	after := args[at:]
	end := slices.Index(after, "--")
	if end < 0 {
		end = len(after)
	}
	out := append(append(before, after[:end]...), moved...)
	return append(out, after[end:]...), len(before)
}

// normalizeVars accepts the engine's single-dash spelling of -var and
// -var-file (people paste them from their Terraform commands) by turning it
// into the double-dash form the flag parser knows.
func normalizeVars(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		for _, name := range []string{"-var-file", "-var"} {
			if a == name || strings.HasPrefix(a, name+"=") {
				a = "-" + a
				break
			}
		}
		out = append(out, a)
	}
	return out
}

// runFlagSet is the flag set of sponson's own flags of a run command, with
// the root's --json and --help: what NormalizeArgs leaves to the parser.
func runFlagSet(command string) *pflag.FlagSet {
	c := &cobra.Command{Use: command}
	var r cmdutil.RunFlags
	r.Bind(c, command != engineflag.Plan)
	if command != engineflag.Import {
		// --parallelism (two dashes) is the stacks' own; -parallelism
		// the engine's.
		var s StackSelection
		s.bind(c, scoperun.Command(command))
	}
	fs := c.Flags()
	fs.Bool("json", false, "")
	fs.BoolP("help", "h", false, "")
	return fs
}

// engineFlags reads a run command's engine flags as the engine would: the
// user's TF_CLI_ARGS_<command>, then TF_CLI_ARGS, then the command line
// (the engine inserts both variables right after the subcommand, the
// command's own first), so that a later flag overrides an earlier one. The
// variables are read here rather than left to the engine so that what they
// hold passes the same refusals; sponson clears them for the engine.
func engineFlags(cmd *cobra.Command, command string, getenv func(string) string) (engineflag.Parsed, error) {
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
		p.Out, p.PlanFile = inDir(p.Chdir, p.Out), inDir(p.Chdir, p.PlanFile)
	}
	r.SavePlan, r.PlanFile = p.Out, p.PlanFile
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

// inDir is path, read in dir when it is relative; "" stays "".
func inDir(dir, path string) string {
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

const engineflagPlan = engineflag.Plan

// detailedInArgs reports whether a normalized command line asks for
// -detailed-exitcode, for errors found before its engine flags are read.
func detailedInArgs(args []string) bool {
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

// detailedRequested is detailedInArgs for a parsed command.
func detailedRequested(cmd *cobra.Command) bool {
	args, _ := cmd.Flags().GetStringArray(cmdutil.EngineArgFlag)
	for i := range args {
		args[i] = "--" + cmdutil.EngineArgFlag + "=" + args[i]
	}
	return cmd.Name() == engineflag.Plan && detailedInArgs(args)
}
