// Package enginecmd is the family of the engine's own commands, run as the
// engine would in the configuration directory (init, validate, fmt,
// providers, graph, get, test, metadata, version).
//
// Every engine command has a meaning under sponson (EngineCommandTable, the
// table the CLI reference prints), so that a workflow converts by replacing
// the binary's name (docs/design.md §4 "The CLI contract"): the local ones
// run as the engine would, with sponson's provider served in process
// (docs/design.md §7.2); show prints a saved plan (docs/design.md §4.2) or
// the scope's state; state push is an edit (docs/design.md §2.8);
// force-unlock is unlock; workspace (a scope replaces it) and console
// (terraform-exec cannot run it) are refused with a hint.
package enginecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// engineCommand is one of the engine's own commands as sponson runs it: in
// the configuration directory, as the engine would, with sponson's provider
// served to it (docs/design.md §4 "The CLI contract"). Its flags are the
// engine's, in the engine's spelling; the cobra command does not parse
// them (the flag package's grammar is the engine's: -name, -name=value).
type engineCommand struct {
	use     string // "providers lock [PROVIDER...]"
	meaning string // its row in the table of engine commands
	// flags registers the command's engine flags and returns what runs it.
	flags func(fs *flag.FlagSet) engineRun
	// optionalEngine runs the command without an engine when none is
	// found (version: sponson's own version still answers).
	optionalEngine bool
}

// engineRun runs an engine command once its flags are parsed.
type engineRun func(ctx context.Context, c *engineCall, args []string) (result any, err error)

// engineCall is what an engine command runs with.
type engineCall struct {
	io   *cmdutil.IO
	sess *engine.Session
	dir  string
	// out is where the engine's own output goes: stdout, or stderr under
	// sponson's --json, whose stdout is the envelope alone.
	out      io.Writer
	jsonMode bool
	warn     func(string)
}

// EngineCommandRow is one row of the table of engine commands: README and
// `sponson --help` show it (a test keeps the README in step).
type EngineCommandRow struct{ Command, Meaning string }

// EngineCommandTable lists every engine command and its meaning under
// sponson: those run as the engine would, those sponson gives its own
// meaning, and those it refuses.
func EngineCommandTable() []EngineCommandRow {
	rows := []EngineCommandRow{
		{"plan, apply, destroy, import", "sponson's own, in the run's scope (lease, fenced state, receipt); the engine flags as documented in each command's help"},
		{"output, state list|show|rm|mv", "sponson's own, on the scope's state in the store"},
	}
	for _, c := range engineCommands() {
		rows = append(rows, EngineCommandRow{strings.Fields(c.use)[0] + cmdWord(c.use), c.meaning})
	}
	return append(rows,
		EngineCommandRow{"show [-json] [PLANFILE]", "a sponson saved plan (after its seal check) as the engine's plan JSON or text; without PLANFILE the scope's state"},
		EngineCommandRow{"state pull", "prints the scope's state from the store"},
		EngineCommandRow{"state push", "replaces the scope's state under its lease, fenced; refused for another lineage, an older serial or another scope's objects"},
		EngineCommandRow{"force-unlock [LOCK_ID]", "sponson unlock: needs --scope and --reason; LOCK_ID, when given, must be the run holding the lease"},
		EngineCommandRow{"workspace ...", "refused: a scope replaces a workspace (--scope, --pr, --branch)"},
		EngineCommandRow{"console", "refused: terraform-exec cannot run an interactive console"},
		EngineCommandRow{"any other", "refused, naming the command and what to use (refresh: -refresh-only; taint: -replace)"},
	)
}

// cmdWord is the second word of a command's use line when it has
// subcommands of its own ("providers lock").
func cmdWord(use string) string {
	f := strings.Fields(use)
	if len(f) > 1 && !strings.HasPrefix(f[1], "[") && !strings.HasPrefix(f[1], "-") && strings.ToLower(f[1]) == f[1] {
		return " " + f[1]
	}
	return ""
}

// engineCommands are the engine commands run as the engine would.
func engineCommands() []engineCommand {
	return []engineCommand{
		{use: "init", meaning: "the engine's init in the configuration directory (modules, providers, lock file); plan and apply initialise the scope's own data directory themselves", flags: initFlags},
		{use: "validate", meaning: "the engine's validate (-json prints its JSON)", flags: validateFlags},
		{use: "fmt [DIR|FILE]", meaning: "the engine's fmt (-check, -recursive, -list, -write, -diff); unformatted files under -check: exit 1, FMT_UNFORMATTED", flags: fmtFlags},
		{use: "providers lock [PROVIDER...]", meaning: "the engine's providers lock (-platform, -fs-mirror, -net-mirror); sponson's provider is served by sponson and gets no entry", flags: providersLockFlags},
		{use: "providers mirror DIR", meaning: "the engine's providers mirror (-platform)", flags: providersMirrorFlags},
		{use: "providers schema -json", meaning: "the engine's providers schema -json, sponson's provider included", flags: providersSchemaFlags},
		{use: "version", meaning: "sponson's version and the engine's (-version too; -json prints the engine's version JSON)", flags: versionFlags, optionalEngine: true},
		{use: "graph", meaning: "the engine's graph in DOT (-type, -draw-cycles, -plan=PLANFILE of sponson)", flags: graphFlags},
		{use: "get", meaning: "the engine's get (-update)", flags: getFlags},
		{use: "test", meaning: "the engine's test (-json prints its machine-readable output)", flags: testFlags},
		{use: "metadata functions -json", meaning: "the engine's metadata functions -json", flags: metadataFunctionsFlags},
	}
}

// EngineCommandNames are the first words of the engine commands, for
// NormalizeArgs: their flags are left as the user spelled them.
var EngineCommandNames = map[string]bool{"init": true, "validate": true, "fmt": true, "providers": true, "version": true, "graph": true, "get": true, "test": true, "metadata": true}

// NewCmdEngine builds the engine commands, grouped under their first word
// (providers lock, providers mirror, ...).
func NewCmdEngine(f *cmdutil.Factory, out *cmdutil.Outcome) []*cobra.Command {
	var cmds []*cobra.Command
	parents := map[string]*cobra.Command{}
	for _, ec := range engineCommands() {
		if ec.use == "version" {
			continue // NewCmdVersion
		}
		words := strings.Fields(ec.use)
		if sub := cmdWord(ec.use); sub != "" {
			p := parents[words[0]]
			if p == nil {
				name := words[0]
				p = &cobra.Command{
					Use:   name,
					Short: "The engine's " + name + " commands, run as the engine would",
					Args:  cobra.ArbitraryArgs,
					RunE:  cmdutil.NeedsSubcommand(out),
					// The engine's flags before a missing subcommand
					// (`-chdir=infra providers -no-color`) are not this
					// group's to refuse: it says what subcommands it has.
					FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
				}
				parents[name] = p
				cmds = append(cmds, p)
			}
			ec.use = strings.Join(words[1:], " ")
			p.AddCommand(newEngineCmd(f, out, words[0]+" ", ec))
			continue
		}
		cmds = append(cmds, newEngineCmd(f, out, "", ec))
	}
	return cmds
}

func newEngineCmd(f *cmdutil.Factory, out *cmdutil.Outcome, prefix string, ec engineCommand) *cobra.Command {
	name := prefix + strings.Fields(ec.use)[0]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	run := ec.flags(fs)
	common := &commonEngineFlags{IO: f.IO(), engines: f.Engines()}
	fs.StringVar(&common.chdir, "chdir", "", "the configuration directory (sponson's --chdir; env SPONSON_CHDIR)")
	fs.StringVar(&common.engine, "engine", "", "the tofu or terraform binary (sponson's --engine; env SPONSON_ENGINE)")
	fs.Bool("no-color", false, "no-op, accepted as the engine accepts it")
	fs.Bool("input", false, "no-op: the engine never prompts under sponson")
	var usage strings.Builder
	fs.SetOutput(&usage)
	fs.PrintDefaults()
	cmd := &cobra.Command{
		Use:                ec.use + " [engine flags]",
		Short:              "The engine's " + name + ", run as the engine would",
		Long:               engineLong(name, ec.meaning, usage.String()),
		DisableFlagParsing: true,
		RunE: cmdutil.RunE(f, out, common, func(cmd *cobra.Command, args []string) error {
			common.args = args
			common.help = cmd.Help
			return nil
		}, nil, func(ctx context.Context, common *commonEngineFlags) cmdutil.Outcome {
			return runEngineCommand(ctx, name, fs, common, run, ec.optionalEngine, common.args)
		}),
	}
	return cmd
}

func engineLong(name, meaning, flags string) string {
	return fmt.Sprintf(`sponson %s is %s.

It runs in the configuration directory (--chdir DIR, -chdir=DIR or
SPONSON_CHDIR; default: the working directory) with the engine sponson runs
(--engine PATH or SPONSON_ENGINE; default: tofu, then terraform on PATH) and
with sponson's provider served to it as in a run, so a configuration that
uses sponson_scope needs no provider installed. The engine's own flags are
given as the engine spells them; --json prints sponson's one JSON document
on stdout and the engine's output on stderr.

Engine flags:
%s`, name, meaning, flags)
}

// commonEngineFlags are the flags every engine command takes: sponson's
// own, and the engine's no-ops.
type commonEngineFlags struct {
	*cmdutil.IO
	engines       cmdutil.Engines
	chdir, engine string
	// help prints the command's help (-h, --help, -help among the args).
	help func() error
	// args are the command's arguments, the engine's flags among them.
	args []string
}

func runEngineCommand(ctx context.Context, name string, fs *flag.FlagSet, common *commonEngineFlags, run engineRun, optional bool, args []string) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: name}
	var rest []string
	for _, a := range args {
		if a == "--json" || strings.HasPrefix(a, "--json=") {
			continue // sponson's envelope: wantsJSON read it
		}
		if a == "-h" || a == "--help" || a == "-help" {
			_ = common.help()
			return cmdutil.Outcome{}
		}
		rest = append(rest, a)
	}
	if err := fs.Parse(rest); err != nil {
		o.Err = errcode.New(errcode.Usage, "sponson %s: %v", name, err).
			WithHint(fmt.Sprintf("Run `sponson %s --help` for the engine flags it takes.", name))
		return o
	}
	if common.chdir == "" {
		common.chdir = common.Getenv("SPONSON_CHDIR")
	}
	dir, err := filepath.Abs(cmdutil.OrDot(common.chdir))
	if err != nil {
		o.Err = errcode.Wrap(errcode.Usage, err, "-chdir %q", common.chdir)
		return o
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if !optional {
			o.Err = errcode.New(errcode.Usage, "the configuration directory %s does not exist", dir)
			return o
		}
		// version answers anywhere, as an install check runs it before
		// the checkout its job's SPONSON_CHDIR names.
		if dir, err = os.Getwd(); err != nil {
			o.Err = errcode.Wrap(errcode.Internal, err, "reading the working directory")
			return o
		}
	}
	jsonMode := common.JSON || cmdutil.WantsJSON(args, func(string) string { return "" })
	c := &engineCall{io: common.IO, dir: dir, out: common.Out, jsonMode: jsonMode}
	if jsonMode {
		c.out = common.ErrOut
	}
	warnOut := cmdutil.Printer{W: common.ErrOut}
	c.warn = func(s string) {
		warnOut.Warn(s)
		o.Warnings = append(o.Warnings, s)
	}
	sess, stop, err := runner.OpenEngine(ctx, common.engines, dir, common.engine, c.out, common.ErrOut, c.warn)
	switch {
	case err != nil && optional && errcode.As(err).Code == errcode.EngineNotFound:
		c.warn(errcode.As(err).Message)
	case err != nil:
		o.Err = err
		return o
	default:
		defer stop()
		c.sess = sess
	}
	o.Result, o.Err = run(ctx, c, fs.Args())
	return o
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func noArgs(name string, args []string) error {
	if len(args) > 0 {
		return errcode.New(errcode.Usage, "sponson %s takes no arguments, got %q", name, args).
			WithHint(fmt.Sprintf("Run `sponson %s --help`.", name))
	}
	return nil
}

// rawOrResult prints the engine's JSON as it printed it, or makes it the
// envelope's result under --json.
func rawOrResult(c *engineCall, raw []byte) (any, error) {
	if c.jsonMode {
		return json.RawMessage(bytes.TrimSpace(raw)), nil
	}
	_, err := c.out.Write(raw)
	return nil, err
}

// EngineTableHelp is the table of engine commands in `sponson --help`.
func EngineTableHelp() string {
	var b strings.Builder
	b.WriteString("Where a pipeline ran the engine, each engine command has this meaning:\n\n")
	for _, r := range EngineCommandTable() {
		fmt.Fprintf(&b, "  %-30s %s\n", r.Command, wrapText(r.Meaning, 33, 48))
	}
	return strings.TrimRight(b.String(), "\n")
}

// wrapText wraps s at width columns, indenting continuation lines.
func wrapText(s string, indent, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	lines = append(lines, line)
	return strings.Join(lines, "\n"+strings.Repeat(" ", indent))
}
