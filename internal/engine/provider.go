package engine

import (
	"os"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// ProviderType is the provider's type name; its binary is
// terraform-provider-<ProviderType>.
const ProviderType = "sponson"

// ProviderBinaryPrefix is the name the engine gives a provider plugin. The
// sponson binary serves the provider when it is started under this name (by
// an engine that installed it from a registry or a mirror, without the
// wrapper; under the wrapper the provider is served in process).
const ProviderBinaryPrefix = "terraform-provider-" + ProviderType

// WithProvider returns what every engine session of sponson's needs beyond
// its own variables (docs/design.md §7.2 "The provider, served in process"):
// the variables of the provider serve starts in this process
// (provider.EngineEnv, which the wrapper hands to whoever starts the
// engine), and an empty CLI configuration file in tmp in place of a missing
// one the user names (MissingCLIConfig). stop ends the provider; warn hears
// what the user should know. A nil serve serves no provider (an engine
// stand-in needs none).
func WithProvider(tmp string, serve func() (env []string, stop func(), err error), warn func(string)) (env []string, stop func(), err error) {
	missing, warning, err := MissingCLIConfig(tmp, os.Getenv)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "writing an empty CLI configuration for the engine")
	}
	if warning != "" {
		warn(warning)
	}
	if serve == nil {
		return missing, func() {}, nil
	}
	provEnv, stop, err := serve()
	if err != nil {
		return nil, nil, err
	}
	return append(missing, provEnv...), stop, nil
}
