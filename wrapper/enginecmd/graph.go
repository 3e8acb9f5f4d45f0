package enginecmd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
)

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
			p, cleanup, err := engineSavedPlan(c.io.Getenv, *planFile)
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
func engineSavedPlan(getenv func(string) string, path string) (string, func(), error) {
	key, err := savedplan.Key(getenv)
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
