// Package enginecmd is the family of the engine's own commands, run as the
// engine would in the configuration directory (init, validate, fmt,
// providers, graph, get, test, metadata, version).
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

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
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
	f    *cmdutil.Factory
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
	common := &commonEngineFlags{}
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
		RunE: cmdutil.RunE(f, out, common, func(_ *cobra.Command, args []string) error {
			common.args = args
			return nil
		}, nil, func(cmd *cobra.Command, f *cmdutil.Factory, common *commonEngineFlags) cmdutil.Outcome {
			return runEngineCommand(cmd, f, name, fs, common, run, ec.optionalEngine, common.args)
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
	chdir, engine string
	// args are the command's arguments, the engine's flags among them.
	args []string
}

func runEngineCommand(cmd *cobra.Command, f *cmdutil.Factory, name string, fs *flag.FlagSet, common *commonEngineFlags, run engineRun, optional bool, args []string) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: name}
	var rest []string
	for _, a := range args {
		if a == "--json" || strings.HasPrefix(a, "--json=") {
			continue // sponson's envelope: wantsJSON read it
		}
		if a == "-h" || a == "--help" || a == "-help" {
			_ = cmd.Help()
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
		common.chdir = f.Getenv("SPONSON_CHDIR")
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
	jsonMode := cmdutil.JSONWanted(cmd, f) || cmdutil.WantsJSON(args, func(string) string { return "" })
	c := &engineCall{f: f, dir: dir, out: f.Out, jsonMode: jsonMode}
	if jsonMode {
		c.out = f.ErrOut
	}
	warnOut := cmdutil.Printer{W: f.ErrOut}
	c.warn = func(s string) {
		warnOut.Warn(s)
		o.Warnings = append(o.Warnings, s)
	}
	ctx := cmd.Context()
	sess, stop, err := runner.OpenEngine(ctx, f, dir, common.engine, c.out, c.warn)
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

func initFlags(fs *flag.FlagSet) engineRun {
	backend := fs.Bool("backend", true, "configure the configuration's own backend, if it declares one (sponson's state server is not involved)")
	var backendConfig, pluginDir stringList
	fs.Var(&backendConfig, "backend-config", "backend configuration, as for the engine (repeatable)")
	fs.Var(&pluginDir, "plugin-dir", "a directory of provider plugins (repeatable)")
	upgrade := fs.Bool("upgrade", false, "upgrade modules and providers within their constraints")
	reconfigure := fs.Bool("reconfigure", false, "reconfigure the backend, ignoring any saved configuration")
	get := fs.Bool("get", true, "download modules")
	fromModule := fs.String("from-module", "", "copy the module at SOURCE into the directory first")
	forceCopy := fs.Bool("force-copy", false, "answer yes to the backend's state migration questions")
	fs.Bool("lock", true, "no-op: init takes no state lock")
	fs.String("lock-timeout", "0s", "no-op: init takes no state lock")
	js := fs.Bool("json", false, "print the engine's machine-readable output")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if err := noArgs("init", args); err != nil {
			return nil, err
		}
		opts := []tfexec.InitOption{tfexec.Backend(*backend), tfexec.Upgrade(*upgrade), tfexec.Reconfigure(*reconfigure), tfexec.Get(*get), tfexec.ForceCopy(*forceCopy)}
		for _, b := range backendConfig {
			opts = append(opts, tfexec.BackendConfig(b))
		}
		for _, p := range pluginDir {
			opts = append(opts, tfexec.PluginDir(p))
		}
		if *fromModule != "" {
			opts = append(opts, tfexec.FromModule(*fromModule))
		}
		if *js {
			return nil, c.sess.InitConfigJSON(ctx, c.out, opts...)
		}
		if err := c.sess.InitConfig(ctx, opts...); err != nil {
			return nil, err
		}
		return map[string]any{"directory": c.dir, "engine": c.sess.Describe()}, nil
	}
}

func validateFlags(fs *flag.FlagSet) engineRun {
	js := fs.Bool("json", false, "print the engine's validation JSON")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if err := noArgs("validate", args); err != nil {
			return nil, err
		}
		v, raw, err := c.sess.Validate(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case *js && !c.jsonMode:
			_, _ = c.out.Write(raw)
		default:
			cmdutil.WriteDiagnostics(c.out, v.Diagnostics)
			if v.Valid {
				fmt.Fprintln(c.out, "Success! The configuration is valid.")
			}
		}
		cmdutil.AnnotateDiagnostics(c.f, c.dir, v.Diagnostics)
		if !v.Valid {
			return v, errcode.New(errcode.EngineFailed, "the configuration in %s is not valid: %d errors", c.dir, v.ErrorCount).
				WithHint("The engine's diagnostics above say where.").With("step", "validate")
		}
		return v, nil
	}
}

func fmtFlags(fs *flag.FlagSet) engineRun {
	o := &fmtRun{
		check:     fs.Bool("check", false, "only check: list the unformatted files and fail (FMT_UNFORMATTED) if there are any"),
		recursive: fs.Bool("recursive", false, "also the subdirectories"),
		list:      fs.Bool("list", true, "list the files that are not (or were not) formatted"),
		write:     fs.Bool("write", true, "write the formatted files (false with -check)"),
		diff:      fs.Bool("diff", false, "print the differences of each unformatted file"),
	}
	return o.run
}

// fmtRun is `sponson fmt` with its flags: the engine's fmt, through
// terraform-exec's FormatCheck and FormatWrite.
type fmtRun struct {
	check, recursive, list, write, diff *bool
}

func (o *fmtRun) run(ctx context.Context, c *engineCall, args []string) (any, error) {
	if len(args) > 1 {
		return nil, errcode.New(errcode.Usage, "sponson fmt takes one DIR or FILE, got %q", args).
			WithHint("Run it once per directory, or with -recursive.")
	}
	opts := []tfexec.FormatOption{tfexec.Recursive(*o.recursive)}
	if len(args) == 1 {
		opts = append(opts, tfexec.Dir(args[0]))
	}
	ok, files, err := c.sess.FormatCheck(ctx, opts...)
	if err != nil {
		return nil, err
	}
	res := map[string]any{"files": nonNil(files)}
	if !*o.check && *o.write && !*o.diff {
		// Plain fmt: write, then list what was written.
		if len(files) > 0 {
			if err := c.sess.FormatWrite(ctx, opts...); err != nil {
				return nil, err
			}
		}
		o.listFiles(c, files)
		return res, nil
	}
	o.listFiles(c, files)
	if *o.diff {
		if err := writeFmtDiffs(ctx, c, args, files); err != nil {
			return nil, err
		}
	}
	switch {
	case ok:
		return res, nil
	case *o.check:
		return res, errcode.New(errcode.FmtUnformatted, "%d files are not formatted: %s", len(files), strings.Join(files, ", ")).
			WithHint("Run `sponson fmt` (or `tofu fmt`) to format them.")
	case *o.write:
		return res, c.sess.FormatWrite(ctx, opts...)
	}
	return res, nil
}

// listFiles prints the files fmt found unformatted, under -list.
func (o *fmtRun) listFiles(c *engineCall, files []string) {
	if *o.list {
		for _, f := range files {
			fmt.Fprintln(c.out, f)
		}
	}
}

// writeFmtDiffs prints, for each unformatted file, the engine's formatting
// of it next to what is there (the engine's -diff, which terraform-exec
// cannot ask for), as a unified diff.
func writeFmtDiffs(ctx context.Context, c *engineCall, args, files []string) error {
	base := c.dir
	if len(args) == 1 {
		if fi, err := os.Stat(filepath.Join(c.dir, args[0])); err == nil && fi.IsDir() {
			base = filepath.Join(c.dir, args[0])
		}
	}
	for _, name := range files {
		p := name
		if !filepath.IsAbs(p) {
			if _, err := os.Stat(filepath.Join(base, p)); err == nil {
				p = filepath.Join(base, p)
			} else {
				p = filepath.Join(c.dir, p)
			}
		}
		before, err := os.ReadFile(p)
		if err != nil {
			return errcode.Wrap(errcode.Usage, err, "reading %s", name)
		}
		after, err := c.sess.FormatString(ctx, string(before))
		if err != nil {
			return err
		}
		fmt.Fprint(c.out, UnifiedDiff(name, string(before), after))
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func providersLockFlags(fs *flag.FlagSet) engineRun {
	var platforms stringList
	fs.Var(&platforms, "platform", "a platform to lock the providers for, OS_ARCH (repeatable)")
	fsMirror := fs.String("fs-mirror", "", "take the providers from a filesystem mirror DIR")
	netMirror := fs.String("net-mirror", "", "take the providers from a network mirror URL")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		var opts []tfexec.ProvidersLockOption
		for _, p := range platforms {
			opts = append(opts, tfexec.Platform(p))
		}
		if *fsMirror != "" {
			opts = append(opts, tfexec.FSMirror(*fsMirror))
		}
		if *netMirror != "" {
			opts = append(opts, tfexec.NetMirror(*netMirror))
		}
		if len(args) == 0 {
			// Every provider the configuration requires but sponson's,
			// which sponson serves (and which no registry need hold).
			var err error
			if args, err = lockableProviders(ctx, c); err != nil {
				return nil, err
			}
			if len(args) == 0 {
				fmt.Fprintln(c.out, "No provider to lock: the configuration requires only sponson's provider, which sponson serves.")
				return map[string]any{"lockFile": filepath.Join(c.dir, engine.LockFileName), "providers": []string{}}, nil
			}
		}
		for _, a := range args {
			opts = append(opts, tfexec.Provider(a))
		}
		if err := c.sess.ProvidersLock(ctx, opts...); err != nil {
			return nil, err
		}
		return map[string]any{"lockFile": filepath.Join(c.dir, engine.LockFileName)}, nil
	}
}

// lockableProviders are the providers of the configuration the engine
// knows the schemas of (`providers schema -json`), but sponson's own and
// the engine's built-in ones.
func lockableProviders(ctx context.Context, c *engineCall) ([]string, error) {
	raw, err := c.sess.ProvidersSchema(ctx)
	if err != nil {
		return nil, errcode.As(err).WithHint("providers lock under sponson reads the configuration's providers from the initialised directory: run `sponson init` first, or name the providers to lock.")
	}
	var doc struct {
		Schemas map[string]json.RawMessage `json:"provider_schemas"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, errcode.Wrap(errcode.EngineFailed, err, "reading the engine's providers schema")
	}
	var out []string
	for _, addr := range sortedKeys(doc.Schemas) {
		if strings.HasSuffix(addr, "/sponson/sponson") || strings.HasPrefix(addr, "terraform.io/builtin/") {
			continue
		}
		out = append(out, addr)
	}
	return out, nil
}

func providersMirrorFlags(fs *flag.FlagSet) engineRun {
	var platforms stringList
	fs.Var(&platforms, "platform", "a platform to mirror the providers for, OS_ARCH (repeatable)")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if len(args) != 1 {
			return nil, errcode.New(errcode.Usage, "sponson providers mirror takes one target DIR").WithHint("sponson providers mirror [-platform=OS_ARCH] DIR")
		}
		var opts []tfexec.ProvidersMirrorOption
		for _, p := range platforms {
			opts = append(opts, tfexec.Platform(p))
		}
		return map[string]any{"directory": args[0]}, c.sess.ProvidersMirror(ctx, args[0], opts...)
	}
}

func providersSchemaFlags(fs *flag.FlagSet) engineRun {
	js := fs.Bool("json", false, "print the schemas as JSON (required, as for the engine)")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if !*js {
			return nil, errcode.New(errcode.Usage, "sponson providers schema needs -json, as the engine's does").WithHint("sponson providers schema -json")
		}
		if err := noArgs("providers schema", args); err != nil {
			return nil, err
		}
		raw, err := c.sess.ProvidersSchema(ctx)
		if err != nil {
			return nil, err
		}
		return rawOrResult(c, raw)
	}
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

func versionFlags(fs *flag.FlagSet) engineRun {
	js := fs.Bool("json", false, "print the engine's version JSON")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if err := noArgs("version", args); err != nil {
			return nil, err
		}
		if c.sess == nil {
			if !c.jsonMode {
				fmt.Fprintln(c.out, versionLine())
			}
			return versionResult(), nil
		}
		raw, v, providers, err := c.sess.VersionJSON(ctx)
		if err != nil {
			return nil, err
		}
		res := versionResult()
		res["engine"] = c.sess.Describe()
		res["engineBinary"] = c.sess.Binary
		if *js && !c.jsonMode {
			_, err := c.out.Write(raw)
			return res, err
		}
		if !c.jsonMode {
			fmt.Fprintln(c.out, versionLine())
			fmt.Fprintf(c.out, "%s v%s (%s)\n", engineTitle(c.sess.Name), v, c.sess.Binary)
			for _, p := range sortedKeys(providers) {
				fmt.Fprintf(c.out, "+ provider %s v%s\n", p, providers[p])
			}
		}
		return res, nil
	}
}

func engineTitle(name string) string {
	if name == "opentofu" {
		return "OpenTofu"
	}
	return "Terraform"
}

func graphFlags(fs *flag.FlagSet) engineRun {
	typ := fs.String("type", "", "the graph's type: plan, plan-refresh-only, plan-destroy or apply")
	cycles := fs.Bool("draw-cycles", false, "highlight cycles")
	planFile := fs.String("plan", "", "the graph of a sponson saved plan (plan -out FILE)")
	fs.Int("module-depth", -1, "no-op, as for the engine")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if err := noArgs("graph", args); err != nil {
			return nil, err
		}
		opts := []tfexec.GraphOption{tfexec.DrawCycles(*cycles)}
		if *typ != "" {
			opts = append(opts, tfexec.GraphType(*typ))
		}
		if *planFile != "" {
			p, cleanup, err := engineSavedPlan(c.f, *planFile)
			if err != nil {
				return nil, err
			}
			defer cleanup()
			opts = append(opts, tfexec.GraphPlan(p))
		}
		dot, err := c.sess.Graph(ctx, opts...)
		if err != nil {
			return nil, err
		}
		if c.jsonMode {
			return map[string]any{"dot": dot}, nil
		}
		fmt.Fprint(c.out, dot)
		return nil, nil
	}
}

// engineSavedPlan writes the engine's plan of a sponson saved plan to a
// temporary file, after the seal check, for an engine command that reads
// one.
func engineSavedPlan(f *cmdutil.Factory, path string) (string, func(), error) {
	key, err := savedplan.Key(f.Getenv)
	if err != nil {
		return "", nil, err
	}
	sp, err := savedplan.Read(path, key)
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "sponson-plan-")
	if err != nil {
		return "", nil, errcode.Wrap(errcode.Internal, err, "creating a temporary directory")
	}
	p := filepath.Join(tmp, "plan.bin")
	if err := os.WriteFile(p, sp.Plan, 0o600); err != nil {
		os.RemoveAll(tmp)
		return "", nil, errcode.Wrap(errcode.Internal, err, "writing the engine's plan")
	}
	return p, func() { os.RemoveAll(tmp) }, nil
}

func getFlags(fs *flag.FlagSet) engineRun {
	update := fs.Bool("update", false, "update the modules already downloaded")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if err := noArgs("get", args); err != nil {
			return nil, err
		}
		return nil, c.sess.Get(ctx, tfexec.Update(*update))
	}
}

func testFlags(fs *flag.FlagSet) engineRun {
	js := fs.Bool("json", false, "print the engine's machine-readable output")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if err := noArgs("test", args); err != nil {
			return nil, err
		}
		if *js {
			return nil, c.sess.Test(ctx, c.out, true)
		}
		return nil, c.sess.Test(ctx, c.out, false)
	}
}

func metadataFunctionsFlags(fs *flag.FlagSet) engineRun {
	js := fs.Bool("json", false, "print the functions as JSON (required, as for the engine)")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if !*js {
			return nil, errcode.New(errcode.Usage, "sponson metadata functions needs -json, as the engine's does").WithHint("sponson metadata functions -json")
		}
		if err := noArgs("metadata functions", args); err != nil {
			return nil, err
		}
		raw, err := c.sess.MetadataFunctions(ctx)
		if err != nil {
			return nil, err
		}
		return rawOrResult(c, raw)
	}
}

// refusedCommands are the engine's commands sponson does not run, each
// with what to use instead.
var refusedCommands = map[string]string{
	"console":     "terraform-exec cannot run the engine's interactive console. For the scope's state: `sponson state pull > scope.tfstate`, then `tofu console -state=scope.tfstate` in the configuration directory.",
	"workspace":   "A scope replaces a workspace: each pull request (pr-<n>), branch and named scope has its own state, lease and receipts. Choose it with --scope NAME, --pr N or --branch NAME (or let CI detection choose); `sponson status` lists the scopes.",
	"refresh":     "Use `sponson apply -refresh-only` (or `sponson plan -refresh-only` to see what it would record); `sponson drift` checks every scope.",
	"taint":       "Use `sponson plan -replace=ADDR` and `sponson apply -replace=ADDR`.",
	"untaint":     "Plan and apply again; `sponson state list` shows the scope's instances.",
	"login":       "Run the engine's own `tofu login` or `terraform login`: sponson's engine reads the same credentials.",
	"logout":      "Run the engine's own `tofu logout` or `terraform logout`.",
	"modules":     "Run the engine's own `modules -json` in the configuration directory after `sponson init`.",
	"query":       "Run the engine's own `query` in the configuration directory after `sponson init`.",
	"0.12upgrade": "Run the engine of that version directly.",
	"0.13upgrade": "Run the engine of that version directly.",
}

// UnknownCommand refuses a command sponson does not have, naming it and
// what to use.
func UnknownCommand(name string) *errcode.Error {
	if hint, ok := refusedCommands[name]; ok {
		return errcode.New(errcode.Usage, "sponson does not run the engine's %q command", name).WithHint(hint).With("command", name)
	}
	return errcode.New(errcode.Usage, "%q is not a sponson command", name).
		WithHint("sponson runs plan, apply, destroy, import, output, state and show in a scope, and the engine's init, validate, fmt, providers, version, graph, get, test and metadata as the engine would; `sponson --help` lists them all.").
		With("command", name)
}

// UnifiedDiff is a unified diff of two texts in one hunk: the lines both
// keep (their longest common subsequence) and what each removes or adds.
func UnifiedDiff(name, before, after string) string {
	if before == after {
		return ""
	}
	a, b := splitLines(before), splitLines(after)
	// lcs[i][j] is the length of the common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- old/%s\n+++ new/%s\n@@ -1,%d +1,%d @@\n", name, name, len(a), len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString(" " + a[i] + "\n")
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("-" + a[i] + "\n")
			i++
		default:
			out.WriteString("+" + b[j] + "\n")
			j++
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
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
