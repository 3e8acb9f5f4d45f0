package enginecmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

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
