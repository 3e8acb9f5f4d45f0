package statecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// OutputOptions are the options of `sponson output`.
type OutputOptions struct {
	*cmdutil.IO
	cmdutil.StoreFlags
	cmdutil.ContextFlags
	// Name is the one output to print; all when empty.
	Name string
	// EngineJSON is the engine's -json: the outputs as `terraform output
	// -json` prints them; Raw is -raw: one output's value as plain text.
	EngineJSON, Raw bool
}

// Output is one root module output of a scope's state, as the engine's
// `output -json` renders it.
type Output = tfstate.Output

// NewCmdOutput builds `sponson output`.
func NewCmdOutput(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *OutputOptions) cmdutil.Outcome) *cobra.Command {
	opts := &OutputOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "output [NAME] [flags]",
		Short: "Print the outputs of a scope's state",
		Long: `Output prints the root module outputs of the run's scope (detected as for
apply, or named with --scope, --pr or --branch) from the scope's own state in
the store: the preview URL a pipeline posts, say. It reads the state without
taking the scope's lease, so it works while an apply runs (it then shows the
outputs as of the apply's last state write), and it runs no engine.

Engine flags, spelled as the engine spells them:
  -json    the outputs as the engine's ` + "`output -json`" + ` prints them, or one
           output's value as JSON with NAME; sensitive values are shown
  -raw     NAME's value as plain text, without quotes or a newline (strings,
           numbers and booleans only)
  -no-color accepted; nothing is colored

Without them, each output is printed as NAME = VALUE, sensitive ones as
<sensitive>. --json (two dashes) is sponson's envelope, whose result holds
the outputs as -json prints them.`,
		Args: cobra.MaximumNArgs(1),
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			return opts.Prepare(cmd, opts.Getenv)
		}, runF, runOutput),
	}
	opts.StoreFlags.Bind(cmd)
	fs := cmd.Flags()
	opts.ContextFlags.Bind(cmd, cmdutil.ReadContextHelp)
	fs.BoolVar(&opts.EngineJSON, outputJSONFlag, false, "the engine's -json (set by NormalizeArgs)")
	fs.BoolVar(&opts.Raw, "raw", false, "print NAME's value as plain text (-raw also works)")
	fs.Bool("no-color", false, "accepted; nothing is colored (-no-color also works)")
	_ = fs.MarkHidden(outputJSONFlag)
	_ = fs.MarkHidden("no-color")
	return cmd
}

// outputJSONFlag carries the engine's single-dash -json of `sponson output`,
// which is not sponson's --json envelope.
const outputJSONFlag = "engine-json"

// NormalizeOutput rewrites the engine's single-dash flags of `sponson
// output` for the flag parser.
func NormalizeOutput(a string) string {
	switch a {
	case "-json", "-json=true":
		return "--" + outputJSONFlag
	case "-raw", "-raw=true", "-no-color":
		return "-" + a
	}
	return a
}

func runOutput(ctx context.Context, opts *OutputOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "output"}
	if opts.Raw && opts.EngineJSON {
		o.Err = errcode.New(errcode.Usage, "-raw and -json cannot be combined").WithHint("Pick one.")
		return o
	}
	if opts.Raw && opts.Name == "" {
		o.Err = errcode.New(errcode.Usage, "-raw needs the NAME of one output").WithHint("Run `sponson output` to list them.")
		return o
	}
	st, _, env, err := opts.Open(ctx, opts.Getenv)
	if err != nil {
		o.Err = err
		return o
	}
	defer st.Close()
	key, err := opts.Detect(opts.Getenv, opts.Chdir, env)
	if err != nil {
		o.Err = err
		return o
	}
	data, err := st.ReadState(ctx, key)
	if err != nil {
		o.Err = err
		return o
	}
	outputs, err := runner.StateOutputs(data)
	if err != nil {
		o.Err = errcode.Wrap(errcode.Internal, err, "reading the outputs of %s", key)
		return o
	}
	if opts.Name != "" {
		one, ok := outputs[opts.Name]
		if !ok {
			o.Err = errcode.New(errcode.Usage, "scope %s has no output %q", key, opts.Name).
				WithHint("Run `sponson output` to list the scope's outputs; a scope that was never applied has none.")
			return o
		}
		outputs = map[string]Output{opts.Name: one}
	}
	if opts.Raw {
		// Refused in every mode, as the engine refuses it.
		if err := WriteRaw(io.Discard, opts.Name, outputs[opts.Name]); err != nil {
			o.Err = err
			return o
		}
	}
	o.Result = map[string]any{"environment": key.Environment, "scope": key.Scope, "outputs": outputs}
	if opts.JSON {
		return o
	}
	switch {
	case opts.Raw:
		o.Err = WriteRaw(opts.Out, opts.Name, outputs[opts.Name])
	case opts.EngineJSON && opts.Name != "":
		writeIndented(opts.Out, outputs[opts.Name].Value)
	case opts.EngineJSON:
		b, _ := json.MarshalIndent(outputs, "", "  ")
		fmt.Fprintf(opts.Out, "%s\n", b)
	default:
		writeOutputs(opts.Out, outputs, opts.Name != "")
	}
	return o
}

func writeIndented(w io.Writer, raw json.RawMessage) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		fmt.Fprintf(w, "%s\n", raw)
		return
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// WriteRaw prints a primitive value as the engine's -raw does: no quotes,
// no trailing newline.
func WriteRaw(w io.Writer, name string, o Output) error {
	var v any
	if err := json.Unmarshal(o.Value, &v); err != nil {
		return errcode.Wrap(errcode.Internal, err, "output %q", name)
	}
	switch x := v.(type) {
	case string:
		fmt.Fprint(w, x)
	case float64:
		fmt.Fprint(w, strconv.FormatFloat(x, 'f', -1, 64))
	case bool:
		fmt.Fprint(w, x)
	default:
		return errcode.New(errcode.Usage, "output %q is not a string, number or boolean; -raw prints only those", name).
			WithHint("Use -json for lists, maps and objects.")
	}
	return nil
}

// writeOutputs prints NAME = VALUE lines in the engine's HCL-like notation;
// a single named output prints its value alone, as the engine does.
func writeOutputs(w io.Writer, outputs map[string]Output, single bool) {
	names := make([]string, 0, len(outputs))
	for n := range outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		o := outputs[n]
		text := "<sensitive>"
		if !o.Sensitive || single {
			var v any
			_ = json.Unmarshal(o.Value, &v)
			text = HCLValue(v, "")
		}
		if single {
			fmt.Fprintln(w, text)
			continue
		}
		fmt.Fprintf(w, "%s = %s\n", n, text)
	}
}

// HCLValue renders a JSON value the way the engine's human output does.
func HCLValue(v any, indent string) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		var b strings.Builder
		b.WriteString("[\n")
		for _, e := range x {
			fmt.Fprintf(&b, "%s  %s,\n", indent, HCLValue(e, indent+"  "))
		}
		b.WriteString(indent + "]")
		return b.String()
	case map[string]any:
		if len(x) == 0 {
			return "{}"
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "%s  %q = %s\n", indent, k, HCLValue(x[k], indent+"  "))
		}
		b.WriteString(indent + "}")
		return b.String()
	}
	return fmt.Sprint(v)
}
