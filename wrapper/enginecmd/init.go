package enginecmd

import (
	"context"
	"flag"

	"github.com/hashicorp/terraform-exec/tfexec"
)

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
