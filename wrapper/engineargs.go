package wrapper

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/terraform-provider-sponson/internal/engineflag"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/enginecmd"
	"github.com/sponson/terraform-provider-sponson/wrapper/manystacks"
	"github.com/sponson/terraform-provider-sponson/wrapper/statecmd"
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
	if enginecmd.EngineCommandNames[args[at]] || args[at] == "show" || args[at] == "force-unlock" {
		return normalizeEngineCommand(args, at)
	}
	if !slices.Contains(runCommands, args[at]) {
		args, at, _ = liftChdir(args, at, chdirFlag)
	}
	if args[at] == "state" {
		out := slices.Clone(args)
		for i := at + 1; i < len(out) && out[i] != "--"; i++ {
			if out[i] == "-no-color" {
				out[i] = "--no-color"
			}
		}
		return normalizeVars(out)
	}
	if args[at] == "output" {
		out := slices.Clone(args)
		for i := at + 1; i < len(out) && out[i] != "--"; i++ {
			out[i] = statecmd.NormalizeOutput(out[i])
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
	args, at, lifted := liftChdir(args, at, func(dir string) string { return "--" + cmdutil.EngineArgFlag + "=-chdir=" + dir })
	own := runFlagSet(args[at])
	out := slices.Clone(args[:at+1+lifted])
	// An import's ID may begin with a dash (a random_id's b64_url does one
	// time in 64): after ADDR, a single-dash word that is no engine flag is
	// the ID, as the engine reads `import ADDR ID`. It goes after `--`, so
	// the flag parser takes it for an argument.
	positionals, ids := 0, []string(nil)
	for i := at + 1 + lifted; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(append(append(out, a), ids...), args[i+1:]...)
		}
		dashes, name, value, hasValue, ok := engineflag.Split(a)
		if !ok || (dashes == 1 && len(name) == 1) {
			positionals += countArg(!ok)
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
		if importID(args[at], positionals, dashes, known) {
			ids = append(ids, a)
			positionals++
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
	if len(ids) > 0 {
		out = append(append(out, "--"), ids...)
	}
	return out
}

// countArg is 1 for a word that is an argument, not a flag.
func countArg(arg bool) int {
	if arg {
		return 1
	}
	return 0
}

// importID reports whether a single-dash word of command, after as many
// arguments as positionals, is an import's ID rather than an engine flag:
// the word after ADDR that names no engine flag.
func importID(command string, positionals, dashes int, known bool) bool {
	return command == engineflag.Import && positionals == 1 && dashes == 1 && !known
}

// normalizeEngineCommand moves the engine's global -chdir=DIR behind the
// command. An engine command reads its flags itself, in the engine's
// grammar; show and force-unlock learn the engine's single-dash flags they
// take (-json, -no-color, -force).
func normalizeEngineCommand(args []string, at int) []string {
	args, at, lifted := liftChdir(args, at, chdirFlag)
	out := slices.Clone(args[:at+1+lifted])
	for i := at + 1 + lifted; i < len(args); i++ {
		a := args[i]
		if a == "--" || enginecmd.EngineCommandNames[args[at]] {
			return append(out, args[i:]...)
		}
		switch a {
		case "-json", "-json=true":
			a = "--" + statecmd.ShowJSONFlag
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

// liftChdir moves the engine's global `-chdir=DIR` from before the command
// at args[at] to right after it, spelled as the command reads it (spell):
// sponson's --chdir=DIR for its own commands, which the flag parser would
// otherwise read as the shorthand -c (issue 52: `-chdir=infra output -json`
// and `-chdir=infra state list` failed), and the engine flag of a run. It
// returns the new line, the command's index in it and how many words it
// moved.
func liftChdir(args []string, at int, spell func(dir string) string) ([]string, int, int) {
	var before, moved []string
	for _, a := range args[:at] {
		if dir, ok := strings.CutPrefix(a, "-chdir="); ok {
			moved = append(moved, spell(dir))
			continue
		}
		before = append(before, a)
	}
	if len(moved) == 0 {
		return args, at, 0
	}
	out := append(append(append(before, args[at]), moved...), args[at+1:]...)
	return out, len(before), len(moved)
}

// chdirFlag spells -chdir=DIR as sponson's --chdir=DIR.
func chdirFlag(dir string) string { return "--chdir=" + dir }

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
		var s manystacks.StackSelection
		s.Bind(c, scoperun.Command(command))
	}
	fs := c.Flags()
	fs.Bool("json", false, "")
	fs.BoolP("help", "h", false, "")
	return fs
}

const engineflagPlan = engineflag.Plan
