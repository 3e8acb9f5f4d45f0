package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ProviderHosts are the registry hosts under which configurations name the
// provider: `sponson/sponson` means registry.opentofu.org under OpenTofu and
// registry.terraform.io under Terraform. The CLI configuration serves both.
var ProviderHosts = []string{"registry.opentofu.org", "registry.terraform.io"}

// ProviderType is the provider's type name; its binary is
// terraform-provider-<ProviderType>.
const ProviderType = "sponson"

// ProviderBinaryPrefix is the name the engine gives a provider plugin. The
// sponson binary serves the provider when it is started under this name.
const ProviderBinaryPrefix = "terraform-provider-" + ProviderType

// CLIConfig is a generated engine CLI configuration and the directories it
// refers to, all under Dir.
type CLIConfig struct {
	Dir  string // the temporary directory holding everything
	File string // the configuration file to name in TF_CLI_CONFIG_FILE
	// Warning is set when the user's own CLI configuration could not be
	// merged in full.
	Warning string
}

// placeholder is what the filesystem mirror holds instead of a real provider
// binary. `init` needs a mirror to install from (dev_overrides alone makes
// init fail, DESIGN.md §7), and records the mirror package's hash in the
// lock file; a real binary would change that hash with every build and break
// the next init. dev_overrides decides what actually runs, so the mirror only
// needs to be stable: this text never changes.
const placeholder = "#!/bin/sh\n" +
	"echo 'This is a placeholder installed by sponson; the provider itself is served through dev_overrides.' >&2\n" +
	"exit 1\n"

// WriteCLIConfig writes, under dir, a CLI configuration that makes the engine
// run providerBinary for `sponson/sponson` (dev_overrides) while `init`
// installs it from a filesystem mirror of version mirrorVersion, and leaves
// every other provider to the usual installation. userConfig is the path of
// the user's own CLI configuration (from TF_CLI_CONFIG_FILE), merged in when
// it exists.
func WriteCLIConfig(dir, providerBinary, mirrorVersion, userConfig string) (*CLIConfig, error) {
	plugins := filepath.Join(dir, "plugins")
	mirror := filepath.Join(dir, "mirror")
	if err := os.MkdirAll(plugins, 0o700); err != nil {
		return nil, err
	}
	if err := os.Symlink(providerBinary, filepath.Join(plugins, ProviderBinaryPrefix)); err != nil {
		return nil, err
	}
	var sources []string
	for _, host := range ProviderHosts {
		pkg := filepath.Join(mirror, host, ProviderType, ProviderType, mirrorVersion, runtime.GOOS+"_"+runtime.GOARCH)
		if err := os.MkdirAll(pkg, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(pkg, ProviderBinaryPrefix+"_v"+mirrorVersion), []byte(placeholder), 0o700); err != nil {
			return nil, err
		}
		sources = append(sources, host+"/"+ProviderType+"/"+ProviderType)
	}

	cfg := &CLIConfig{Dir: dir, File: filepath.Join(dir, "cli.tfrc")}
	var own []byte
	if userConfig != "" {
		if b, err := os.ReadFile(userConfig); err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
			// A JSON configuration is one object: HCL added to it would be
			// ignored, dev_overrides with it.
			cfg.Warning = fmt.Sprintf("%s is a JSON CLI configuration, which sponson cannot merge; its settings are not used during sponson runs", userConfig)
		} else if err == nil {
			own = b
		}
	}
	merged := mergeProviderInstallation(own, plugins, mirror, sources)
	if err := os.WriteFile(cfg.File, merged, 0o600); err != nil {
		return nil, err
	}
	return cfg, nil
}
func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
