package scoperun

import (
	"context"
	"os"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/provider"
)

// ServeProvider is what every engine session of sponson's needs beyond its
// own variables (docs/design.md §7.2): the provider served from this process
// (TF_REATTACH_PROVIDERS, merged with the user's), and an empty CLI
// configuration file in tmp in place of a missing one the user names. It
// returns the engine's variables and the function that stops the provider;
// warn hears what the user should know; states is the run's store, which
// sponson_outputs reads other stacks' outputs from.
func ServeProvider(ctx context.Context, version, dir, tmp string, states provider.StateReader, warn func(string)) (env []string, stop func(), err error) {
	missing, warning, err := engine.MissingCLIConfig(tmp, os.Getenv)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "writing an empty CLI configuration for the engine")
	}
	if warning != "" {
		warn(warning)
	}
	srv, err := provider.ServeInProcess(ctx, version, dir, states)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "serving the provider to the engine")
	}
	reattach, err := srv.Environ(os.Getenv(provider.ReattachEnvVar))
	if err != nil {
		srv.Close()
		return nil, nil, errcode.Wrap(errcode.Usage, err, "reading %s", provider.ReattachEnvVar).
			WithHint("Unset it, or set it to the JSON the provider you debug printed.")
	}
	return append(missing, provider.ReattachEnvVar+"="+reattach), srv.Close, nil
}
