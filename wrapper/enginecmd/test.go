package enginecmd

import (
	"context"
	"flag"
)

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
