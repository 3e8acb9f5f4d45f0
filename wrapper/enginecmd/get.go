package enginecmd

import (
	"context"
	"flag"

	"github.com/hashicorp/terraform-exec/tfexec"
)

func getFlags(fs *flag.FlagSet) engineRun {
	update := fs.Bool("update", false, "update the modules already downloaded")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if err := noArgs("get", args); err != nil {
			return nil, err
		}
		return nil, c.sess.Get(ctx, tfexec.Update(*update))
	}
}
