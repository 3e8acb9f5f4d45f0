package engine

// ProviderType is the provider's type name; its binary is
// terraform-provider-<ProviderType>.
const ProviderType = "sponson"

// ProviderBinaryPrefix is the name the engine gives a provider plugin. The
// sponson binary serves the provider when it is started under this name (by
// an engine that installed it from a registry or a mirror, without the
// wrapper; under the wrapper the provider is served in process).
const ProviderBinaryPrefix = "terraform-provider-" + ProviderType
