package statecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// ShowJSONFlag carries show's engine flag -json (NormalizeArgs).
const ShowJSONFlag = "engine-json"

// ShowOptions are the options of `sponson show`.
type ShowOptions struct {
	StateOptions
	Engines    cmdutil.Engines
	Engine     string
	EngineJSON bool
	// PlanFile is the saved plan to show, when showsPlan; the scope's
	// state is shown otherwise.
	PlanFile  string
	showsPlan bool
}

// NewCmdShow builds `sponson show [-json] [PLANFILE]`.
func NewCmdShow(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	opts := &ShowOptions{StateOptions: StateOptions{IO: f.IO()}, Engines: f.Engines()}
	cmd := &cobra.Command{
		Use:   "show [-json] [PLANFILE] [flags]",
		Short: "Show a saved plan as the engine does (its plan JSON with -json), or the scope's state",
		Long: `Show prints a saved plan of ` + "`sponson plan -out PLANFILE`" + `, after its seal check
(PLAN_CORRUPT when damaged, as for apply): with -json exactly the engine's
plan JSON, as ` + "`terraform show -json`" + ` prints it for the engine's plan in the file,
for conftest, Checkov, Infracost, tfcmt and the like; without, the engine's text
of the plan, with every value the plan marks sensitive redacted. Both were made
by the engine when the plan was, so showing a plan needs no engine and no
configuration.

Without PLANFILE it shows the scope's state (detected as for plan, or --scope,
--pr, --branch) from the store, as the engine shows a state: this runs the
engine in the configuration directory, which must be initialised
(` + "`sponson init`" + `) for the providers' schemas.`,
		Args: cobra.MaximumNArgs(1),
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, args []string) error {
			opts.showsPlan = len(args) == 1
			if opts.showsPlan {
				opts.PlanFile = args[0]
				return nil
			}
			if err := cmdutil.BindEnv(cmd.Flags(), map[string]string{"chdir": "SPONSON_CHDIR", "store": "SPONSON_STORE", "env": "SPONSON_CTX_ENV", "engine": "SPONSON_ENGINE"}, opts.Getenv); err != nil {
				return err
			}
			return opts.Prepare(cmd, opts.Getenv)
		}, nil, runShow),
	}
	opts.bind(cmd, false)
	fs := cmd.Flags()
	fs.StringVar(&opts.Engine, "engine", "", "`PATH` of the tofu or terraform binary, to show a state (env SPONSON_ENGINE)")
	fs.BoolVar(&opts.EngineJSON, ShowJSONFlag, false, "the engine's -json (set by NormalizeArgs)")
	fs.Bool("no-color", false, "no-op: sponson's show prints no colour")
	_ = fs.MarkHidden(ShowJSONFlag)
	_ = fs.MarkHidden("no-color")
	return cmd
}

func runShow(ctx context.Context, opts *ShowOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "show"}
	jsonMode := opts.JSON
	if opts.showsPlan {
		o.Result, o.Err = showPlanFile(opts.IO, opts.PlanFile, opts.EngineJSON, jsonMode)
		return o
	}
	st, key, data, err := opts.scopeState(ctx)
	if err != nil {
		o.Err = err
		return o
	}
	st.Close()
	res := map[string]any{"stack": key.Stack, "environment": key.Environment, "scope": key.Scope}
	o.Result = res
	if len(bytes.TrimSpace(data)) == 0 {
		// What the engine shows when there is no state.
		if opts.EngineJSON {
			res["state"] = json.RawMessage(`{"format_version":"1.0"}`)
			if !jsonMode {
				fmt.Fprintln(opts.Out, `{"format_version":"1.0"}`)
			}
		} else if !jsonMode {
			fmt.Fprintln(opts.Out, "No state.")
		}
		return o
	}
	dir, _ := filepath.Abs(cmdutil.OrDot(opts.Chdir))
	engOut := opts.Out
	if jsonMode {
		engOut = opts.ErrOut
	}
	warnOut := cmdutil.Printer{W: opts.ErrOut}
	sess, stop, err := runner.OpenEngine(ctx, opts.Engines, dir, opts.Engine, engOut, opts.ErrOut, func(s string) {
		warnOut.Warn(s)
		o.Warnings = append(o.Warnings, s)
	})
	if err != nil {
		o.Err = err
		return o
	}
	defer stop()
	tmp, err := os.MkdirTemp("", "sponson-show-")
	if err != nil {
		o.Err = errcode.Wrap(errcode.Internal, err, "creating a temporary directory")
		return o
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "terraform.tfstate")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		o.Err = errcode.Wrap(errcode.Internal, err, "writing the scope's state for the engine")
		return o
	}
	notInit := func(err error) error {
		return errcode.As(err).WithHint("The engine reads the providers' schemas from the initialised configuration: run `sponson init` in " + dir + " first.")
	}
	if opts.EngineJSON {
		raw, err := sess.ShowStateJSON(ctx, path)
		if err != nil {
			o.Err = notInit(err)
			return o
		}
		res["state"] = json.RawMessage(bytes.TrimSpace(raw))
		if !jsonMode {
			_, _ = opts.Out.Write(raw)
		}
		return o
	}
	txt, err := sess.ShowText(ctx, path)
	if err != nil {
		o.Err = notInit(err)
		return o
	}
	res["text"] = txt
	if !jsonMode {
		fmt.Fprint(opts.Out, txt)
	}
	return o
}

// showPlanFile shows a saved plan, after its seal check: the engine's plan
// JSON or its text, both kept in the file since the plan was made.
func showPlanFile(f *cmdutil.IO, path string, engineJSON, jsonMode bool) (any, error) {
	key, err := savedplan.Key(f.Getenv)
	if err != nil {
		return nil, err
	}
	sp, err := savedplan.Read(path, key)
	if err != nil {
		return nil, err
	}
	m := sp.Meta
	res := map[string]any{"stack": m.Stack, "environment": m.Environment, "scope": m.Scope, "runId": m.RunID, "commit": m.Commit}
	if engineJSON {
		if len(sp.PlanJSON) == 0 {
			return nil, errcode.New(errcode.Usage, "the saved plan %s holds no plan JSON: it was made by a sponson before `show`", path).
				WithHint("Plan again with this sponson (`sponson plan -out FILE`).")
		}
		res["plan"] = json.RawMessage(bytes.TrimSpace(sp.PlanJSON))
		if !jsonMode {
			_, err = f.Out.Write(sp.PlanJSON)
		}
		return res, err
	}
	if sp.PlanText == "" {
		return nil, errcode.New(errcode.Usage, "the saved plan %s holds no plan text: it was made by a sponson before `show`", path).
			WithHint("Plan again with this sponson (`sponson plan -out FILE`).")
	}
	res["text"] = sp.PlanText
	if !jsonMode {
		_, err = fmt.Fprint(f.Out, sp.PlanText)
	}
	return res, err
}
