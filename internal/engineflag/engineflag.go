// Package engineflag reads the engine's own plan and apply flags from a
// sponson command line, spelled as the engine spells them (`-target=ADDR`,
// `-target ADDR`, `-refresh=false`, `-auto-approve`, ...), so that a CI line
// that ran `terraform apply <flags>` runs as `sponson apply <flags>`. Flags
// that would defeat the scope's guarantees (its fenced state, its lease) are
// refused with USAGE and a hint saying why (docs/design.md §4, "The CLI
// contract").
//
// The grammar is the engine's (Go's flag package): one or two dashes;
// a boolean flag is `-name` or `-name=BOOL`, never `-name BOOL`; any other
// flag is `-name=VALUE` or `-name VALUE`; `--` ends the flags.
//
// The wrapper picks the engine flags out of a command line before cobra's
// flag parser sees them (wrapper.NormalizeArgs), and they are passed on in
// the order given: -var and -var-file go to the engine's plan through
// TF_CLI_ARGS_plan, since terraform-exec would put every -var-file first
// and change which value wins. The user's TF_CLI_ARGS_<cmd> and TF_CLI_ARGS
// are read as engine flags before the command line's, as the engine reads
// them (runner.EngineFlags), under the same refusals, and cleared for the
// engine, so a flag the table refuses cannot come in through the
// environment.
package engineflag

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// The commands that take engine flags.
const (
	Plan    = "plan"
	Apply   = "apply"
	Destroy = "destroy"
	Import  = "import"
)

// Parsed is what the engine flags of one command line ask for.
type Parsed struct {
	// Flags go to the engine's plan and apply.
	Flags engine.Flags
	// Vars are -var and -var-file in the order given (the later wins).
	Vars []engine.VarArg
	// LockTimeout is -lock-timeout: how long an apply or destroy waits for
	// the scope's lease (sponson's lock); LockTimeoutSet says it was given.
	LockTimeout    time.Duration
	LockTimeoutSet bool
	// DetailedExitcode is plan -detailed-exitcode.
	DetailedExitcode bool
	// Out is plan -out FILE; PlanFile is apply's positional saved plan.
	// Both belong to saved plans.
	Out, PlanFile string
	// Chdir is the engine-spelled -chdir=DIR.
	Chdir string
}

type kind int

const (
	boolFlag kind = iota
	stringFlag
)

type spec struct {
	name     string
	kind     kind
	commands string // the commands it is accepted on: "padi" = plan, apply, destroy, import
	value    string // the value's placeholder in help
	help     string
	// refuse, when set, is why the flag is refused (the hint); for a
	// boolean flag refusedWhen says which value is refused ("" = any).
	refuse      string
	refusedWhen string
	// refusedOn, when set, are the only commands refuse applies to.
	refusedOn string
}

// specs lists every engine flag sponson knows, accepted or refused.
var specs = []spec{
	{name: "target", kind: stringFlag, commands: "pad", value: "ADDRESS", help: "plan and apply only this resource and what it depends on (repeatable); the ledger keeps every resource the scope owns"},
	{name: "replace", kind: stringFlag, commands: "pa", value: "ADDRESS", help: "plan to replace this resource instance (repeatable)"},
	{name: "exclude", kind: stringFlag, commands: "pad", value: "ADDRESS", help: "plan and apply everything except this resource (repeatable; OpenTofu only, refused on Terraform)"},
	{name: "refresh-only", kind: boolFlag, commands: "pa", help: "only update the state to match the real objects; the ledger follows the state"},
	{name: "refresh", kind: boolFlag, commands: "pad", value: "BOOL", help: "-refresh=false skips reading the real objects before planning"},
	{name: "parallelism", kind: stringFlag, commands: "pad", value: "N", help: "limit the number of concurrent operations the engine runs"},
	{name: "compact-warnings", kind: boolFlag, commands: "pad", help: "show warnings in compact form"},
	{name: "no-color", kind: boolFlag, commands: "padi", help: "accepted; the engine's output under sponson is never colored"},
	{name: "lock-timeout", kind: stringFlag, commands: "padi", value: "DURATION", help: "apply and destroy wait up to DURATION for the scope's lease (as --wait --wait-timeout DURATION, the smaller bound winning when both are given; 0s, the engine's default, does not wait); plan takes no lease and ignores it"},
	{name: "var", kind: stringFlag, commands: "padi", value: "NAME=VALUE", help: "set a variable (repeatable; --var also works); -var and -var-file reach the engine in the order given"},
	{name: "var-file", kind: stringFlag, commands: "padi", value: "FILE", help: "load variables from FILE (repeatable; --var-file also works)"},
	{name: "auto-approve", kind: boolFlag, commands: "ad", help: "accepted; a sponson run never prompts"},
	{name: "input", kind: boolFlag, commands: "padi", value: "false", help: "-input=false is accepted; a sponson run never prompts",
		refuse: "A sponson run never prompts: give every variable with -var, -var-file or TF_VAR_<name>.", refusedWhen: "true"},
	{name: "detailed-exitcode", kind: boolFlag, commands: "p", help: "exit 0 when the plan has no changes, 2 when it has changes, 1 when it failed or was refused (any error, whatever its code)"},
	{name: "out", kind: stringFlag, commands: "p", value: "FILE", help: "save the plan, with what sponson decided, to FILE (mode 0600; it holds the engine's plan, sensitive values included) for `sponson apply FILE`, which applies exactly that plan or refuses it when it went stale (PLAN_STALE)"},
	{name: "lock", kind: boolFlag, commands: "padi", value: "BOOL",
		refuse: "sponson's state server locks and fences every state write with the scope's lease; without the lock two runs could write one state.", refusedWhen: "false"},
	{name: "state", kind: stringFlag, commands: "padi", value: "PATH",
		refuse: "The scope's state lives in the sponson store, where every write is fenced by the scope's lease; a local state file would bypass both. Choose the store with --store."},
	{name: "state-out", kind: stringFlag, commands: "padi", value: "PATH",
		refuse: "The scope's state is written only to the sponson store, fenced by the scope's lease; a second copy elsewhere would escape the fencing. Choose the store with --store."},
	{name: "backup", kind: stringFlag, commands: "padi", value: "PATH",
		refuse: "The sponson store keeps the scope's state and every receipt; a local backup file of the state would escape the store's encryption and fencing."},
	{name: "chdir", kind: stringFlag, commands: "padi", value: "DIR", help: "the configuration directory, as --chdir (refused when it contradicts --chdir or SPONSON_CHDIR)"},
	{name: "json", kind: boolFlag, commands: "pad",
		refuse: "sponson's --json (two dashes) prints one JSON document for the whole run; the engine's -json stream of UI events is not passed through."},
	{name: "destroy", kind: boolFlag, commands: "pad", help: "plan the destroy of what the scope owns: the review of a `sponson destroy` (not with -out)",
		refuse: "Run `sponson destroy`: it destroys what the scope owns, and only that.", refusedOn: "ad"},
}

// refused reports whether the flag, set to on, is refused on command.
func (s spec) refused(command string, on bool) bool {
	return s.refuse != "" && (s.refusedWhen == "" || s.refusedWhen == strconv.FormatBool(on)) &&
		(s.refusedOn == "" || strings.ContainsRune(s.refusedOn, rune(command[0])))
}

func lookup(name string) (spec, bool) {
	for _, s := range specs {
		if s.name == name {
			return s, true
		}
	}
	return spec{}, false
}

// Known reports whether name (without dashes) is an engine flag sponson
// knows, accepted or refused, and whether it takes a value: `-name VALUE`
// consumes the next argument.
func Known(name string) (known, takesValue bool) {
	s, ok := lookup(name)
	return ok, ok && s.kind == stringFlag
}

// Split reads one argument as the engine would: its dashes, name and value.
// ok is false when the argument is not a flag.
func Split(arg string) (dashes int, name, value string, hasValue, ok bool) {
	switch {
	case arg == "-" || arg == "--" || !strings.HasPrefix(arg, "-"):
		return 0, "", "", false, false
	case strings.HasPrefix(arg, "--"):
		dashes = 2
	default:
		dashes = 1
	}
	name, value, hasValue = strings.Cut(arg[dashes:], "=")
	return dashes, name, value, hasValue, name != "" && !strings.HasPrefix(name, "-")
}

// Parse reads the engine flags of command, each one argument of the form
// `-name` or `-name=VALUE` (the caller joins `-name VALUE`), in order.
// source names where they came from in errors ("the command line",
// "TF_CLI_ARGS_plan").
func Parse(command string, args []string, source string) (Parsed, error) {
	var p Parsed
	for _, arg := range args {
		if err := p.add(command, arg, source); err != nil {
			return Parsed{}, err
		}
	}
	return p, nil
}

// Merge parses more arguments into p, later ones overriding earlier ones as
// on the engine's command line.
func (p *Parsed) Merge(command string, args []string, source string) error {
	for _, arg := range args {
		if err := p.add(command, arg, source); err != nil {
			return err
		}
	}
	return nil
}

func (p *Parsed) add(command, arg, source string) error {
	_, name, value, hasValue, ok := Split(arg)
	if !ok {
		return errcode.New(errcode.Usage, "%q in %s is not an engine flag", arg, source)
	}
	s, known := lookup(name)
	if !known {
		return errcode.New(errcode.Usage, "unknown flag -%s in %s for sponson %s", name, source, command).
			WithHint(fmt.Sprintf("sponson %s passes these engine flags: %s. Run `sponson %s --help` for what each does.", command, strings.Join(Names(command), " "), command))
	}
	if !strings.ContainsRune(s.commands, rune(command[0])) {
		return errcode.New(errcode.Usage, "-%s is not a flag of sponson %s (given in %s)", name, command, source).
			WithHint(fmt.Sprintf("The engine's %s has no -%s either; sponson %s passes: %s.", command, name, command, strings.Join(Names(command), " ")))
	}
	var on bool
	if s.kind == boolFlag {
		on = true
		if hasValue {
			b, err := strconv.ParseBool(value)
			if err != nil {
				return errcode.New(errcode.Usage, "-%s=%s in %s: the value must be true or false", name, value, source)
			}
			on = b
		}
	} else if !hasValue {
		return errcode.New(errcode.Usage, "flag -%s in %s needs a value: -%s=%s", name, source, name, s.value)
	}
	if s.refused(command, on) {
		shown := "-" + name
		if hasValue {
			shown += "=" + value
		}
		return errcode.New(errcode.Usage, "%s (in %s) is refused by sponson %s", shown, source, command).WithHint(s.refuse)
	}
	return p.set(name, value, on, source)
}

func (p *Parsed) set(name, value string, on bool, source string) error {
	f := &p.Flags
	switch name {
	case "refresh-only":
		f.RefreshOnly = on
	case "refresh":
		f.NoRefresh = !on
	case "compact-warnings":
		f.CompactWarnings = on
	case "destroy":
		f.PlanDestroy = on
	case "detailed-exitcode":
		p.DetailedExitcode = on
	case "no-color", "auto-approve", "input", "lock":
		// Accepted and changes nothing: terraform-exec always passes
		// -no-color and -input=false, a sponson run never prompts, and
		// the lock is always taken (-lock=false is refused above).
	case "parallelism", "lock-timeout", "var":
		return p.setParsed(name, value, source)
	default:
		return p.setText(name, value, source)
	}
	return nil
}

// setParsed sets a flag whose value has a form to check: a number, a
// duration, NAME=VALUE.
func (p *Parsed) setParsed(name, value, source string) error {
	switch name {
	case "parallelism":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return errcode.New(errcode.Usage, "-parallelism=%s in %s must be a whole number of at least 1", value, source)
		}
		p.Flags.Parallelism = n
	case "lock-timeout":
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return errcode.New(errcode.Usage, "-lock-timeout=%s in %s must be a duration such as 30s or 5m", value, source)
		}
		p.LockTimeout, p.LockTimeoutSet = d, true
	case "var":
		if !strings.Contains(value, "=") {
			return errcode.New(errcode.Usage, "-var %q in %s must be NAME=VALUE", value, source)
		}
		p.Vars = append(p.Vars, engine.VarArg{Value: value})
	}
	return nil
}

// textFlags are the flags whose value is an address or a path, which must
// not be empty.
var textFlags = map[string]bool{"target": true, "replace": true, "exclude": true, "var-file": true, "out": true, "chdir": true}

// setText sets a flag whose value is an address or a path.
func (p *Parsed) setText(name, value, source string) error {
	if !textFlags[name] {
		return nil
	}
	if strings.TrimSpace(value) == "" {
		return errcode.New(errcode.Usage, "-%s in %s needs a non-empty value", name, source)
	}
	f := &p.Flags
	switch name {
	case "target":
		f.Targets = append(f.Targets, value)
	case "replace":
		f.Replace = append(f.Replace, value)
	case "exclude":
		f.Excludes = append(f.Excludes, value)
	case "var-file":
		p.Vars = append(p.Vars, engine.VarArg{File: true, Value: value})
	case "out":
		p.Out = value
	case "chdir":
		p.Chdir = value
	}
	return nil
}

// Names lists the flags accepted on command, with a dash, in table order.
func Names(command string) []string {
	var out []string
	for _, s := range specs {
		if s.refuse != "" && s.refusedWhen == "" && (s.refusedOn == "" || strings.ContainsRune(s.refusedOn, rune(command[0]))) {
			continue
		}
		if strings.ContainsRune(s.commands, rune(command[0])) {
			out = append(out, "-"+s.name)
		}
	}
	return out
}

// Help is the section of command's --help that lists the engine flags it
// passes through and the ones it refuses.
func Help(command string) string {
	var b strings.Builder
	b.WriteString("Engine flags, spelled as the engine spells them (-name=VALUE or -name VALUE):\n")
	for _, s := range specs {
		if !strings.ContainsRune(s.commands, rune(command[0])) || s.help == "" || (s.refusedOn != "" && s.refused(command, true)) {
			continue
		}
		flag := "-" + s.name
		if s.kind == stringFlag {
			flag += " " + s.value
		} else if s.value != "" {
			flag += "=" + s.value
		}
		fmt.Fprintf(&b, "  %-28s %s\n", flag, s.help)
	}
	b.WriteString("Refused (the error's hint says why; most would defeat the scope's fenced state or lease):\n")
	var refused []string
	for _, s := range specs {
		if s.refuse == "" || !strings.ContainsRune(s.commands, rune(command[0])) || (s.refusedOn != "" && !strings.ContainsRune(s.refusedOn, rune(command[0]))) {
			continue
		}
		r := "-" + s.name
		if s.refusedWhen != "" {
			r += "=" + s.refusedWhen
		}
		refused = append(refused, r)
	}
	fmt.Fprintf(&b, "  %s\n", strings.Join(refused, " "))
	b.WriteString("TF_CLI_ARGS and TF_CLI_ARGS_" + command + " are read as engine flags before the command line's, as the engine reads them.")
	return b.String()
}
