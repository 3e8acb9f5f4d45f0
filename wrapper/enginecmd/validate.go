package enginecmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

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
		cmdutil.AnnotateDiagnostics(c.io, c.dir, v.Diagnostics)
		if !v.Valid {
			return v, errcode.New(errcode.EngineFailed, "the configuration in %s is not valid: %d errors", c.dir, v.ErrorCount).
				WithHint("The engine's diagnostics above say where.").With("step", "validate")
		}
		return v, nil
	}
}
