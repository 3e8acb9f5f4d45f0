package enginecmd

import (
	"context"
	"flag"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

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
