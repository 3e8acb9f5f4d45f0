package engine

import (
	"errors"
	"fmt"
	"io/fs"
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
// init fail, docs/design.md §7.2), and records the mirror package's hash in the
// lock file; a real binary would change that hash with every build and break
// the next init. dev_overrides decides what actually runs, so the mirror only
// needs to be stable: this text never changes.
const placeholder = "#!/bin/sh\n" +
	"echo 'This is a placeholder installed by sponson; the provider itself is served through dev_overrides.' >&2\n" +
	"exit 1\n"

// WriteCLIConfig writes, under dir, a CLI configuration that makes the engine
// run providerBinary for `sponson/sponson` (dev_overrides) while `init`
// installs it from a filesystem mirror of version mirrorVersion, and leaves
// every other provider to the usual installation. user are the user's own
// CLI configuration files (UserCLIConfig), merged in, in order. dir must be
// private to the run: the result may hold the user's credentials, and is
// written with mode 0600 in directories of mode 0700.
func WriteCLIConfig(dir, providerBinary, mirrorVersion string, user []string) (*CLIConfig, error) {
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
	var unmerged []string
	for _, p := range user {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // as for the engine, a missing file configures nothing
		}
		if err != nil {
			unmerged = append(unmerged, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
			// A JSON configuration is one object: HCL added to it would be
			// ignored, dev_overrides with it.
			unmerged = append(unmerged, p+" (JSON, which sponson cannot merge)")
			continue
		}
		if len(own) > 0 && own[len(own)-1] != '\n' {
			own = append(own, '\n')
		}
		own = append(own, fmt.Sprintf("# From %s\n", p)...)
		own = append(own, b...)
	}
	if len(unmerged) > 0 {
		cfg.Warning = fmt.Sprintf("the CLI configuration %s is not used during sponson runs", strings.Join(unmerged, ", "))
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
