package cmdutil

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/cobra"
)

// TestRunE: the options' IO learns --json, prepare fills the options before
// the seam sees them, a failure of prepare is the outcome of the command
// named by its path, and runF replaces run.
func TestRunE(t *testing.T) {
	t.Parallel()
	type opts struct {
		*IO
		args []string
	}
	prepare := func(o *opts) func(*cobra.Command, []string) error {
		return func(_ *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] == "bad" {
				return errors.New("bad argument")
			}
			o.args = args
			return nil
		}
	}
	build := func(out *Outcome, o *opts, runF func(context.Context, *opts) Outcome) *cobra.Command {
		root := &cobra.Command{Use: "sponson"}
		root.PersistentFlags().Bool("json", false, "")
		f := &Factory{Getenv: func(string) string { return "" }}
		parent := &cobra.Command{Use: "provider"}
		root.AddCommand(parent)
		parent.AddCommand(&cobra.Command{Use: "mirror", RunE: RunE(f, out, o, prepare(o), runF, func(_ context.Context, o *opts) Outcome {
			return Outcome{Command: "run", Result: o.args}
		})})
		return root
	}
	for _, tc := range []struct {
		name, args0, command string
		seam, wantErr, json  bool
	}{
		{name: "json", args0: "--json", command: "run", json: true},
		{name: "run", args0: "a", command: "run"},
		{name: "seam", args0: "a", command: "seam", seam: true},
		{name: "prepare fails", args0: "bad", command: "provider mirror", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out Outcome
			o := &opts{IO: &IO{}}
			var runF func(context.Context, *opts) Outcome
			if tc.seam {
				runF = func(_ context.Context, o *opts) Outcome {
					return Outcome{Command: "seam", Result: o.args}
				}
			}
			root := build(&out, o, runF)
			root.SetArgs([]string{"provider", "mirror", tc.args0})
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if out.Command != tc.command || (out.Err != nil) != tc.wantErr {
				t.Fatalf("outcome %+v, want command %q, error %v", out, tc.command, tc.wantErr)
			}
			if o.JSON != tc.json {
				t.Errorf("IO.JSON = %v, want %v", o.JSON, tc.json)
			}
			if !tc.wantErr && tc.args0 != "--json" && len(o.args) != 1 {
				t.Errorf("prepare did not fill the options before %s: %+v", tc.command, o)
			}
		})
	}
}
