// Package engine finds the OpenTofu or Terraform binary a run uses and
// prepares what the engine needs to find Sponson's own provider: a CLI
// configuration in a temporary directory (never in the user's home) and the
// backend override that points the engine at Sponson's state server. The
// engine itself is driven only through terraform-exec (see Session).
package engine

import (
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// PinnedTofuVersion is the OpenTofu release `make tools` builds and the
// cached build Locate falls back to. 1.12 is the first release that keeps
// ephemeral resources out of the plan JSON (docs/design.md §7.1).
const PinnedTofuVersion = "v1.12.6"

// EnvEngine names the engine binary when --engine is not given.
const EnvEngine = "SPONSON_ENGINE"

// Lookup is what Locate consults; tests replace it.
type Lookup struct {
	Getenv   func(string) string
	LookPath func(string) (string, error)
	Stat     func(string) (os.FileInfo, error)
}

// ProcessLookup consults the process environment and file system.
func ProcessLookup() Lookup {
	return Lookup{Getenv: os.Getenv, LookPath: exec.LookPath, Stat: os.Stat}
}

// CachedTofuPath is where `make tools` leaves the pinned OpenTofu build:
// outside any checkout, so every clone and every test run shares one build.
func CachedTofuPath(getenv func(string) string) string {
	base := getenv("XDG_CACHE_HOME")
	if base == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "sponson", "tofu", PinnedTofuVersion, "tofu")
}

// Locate returns the engine binary: flag, then SPONSON_ENGINE, then tofu or
// terraform on PATH, then the cached pinned build.
func Locate(flag string, l Lookup) (string, error) {
	for _, explicit := range []struct{ value, from string }{{flag, "--engine"}, {l.Getenv(EnvEngine), EnvEngine}} {
		if explicit.value == "" {
			continue
		}
		p, err := l.LookPath(explicit.value)
		if err != nil {
			return "", errcode.Wrap(errcode.EngineNotFound, err, "engine %q given by %s is not an executable", explicit.value, explicit.from)
		}
		return p, nil
	}
	for _, name := range []string{"tofu", "terraform"} {
		if p, err := l.LookPath(name); err == nil {
			return p, nil
		}
	}
	if cached := CachedTofuPath(l.Getenv); cached != "" {
		if fi, err := l.Stat(cached); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return cached, nil
		}
	}
	return "", errcode.New(errcode.EngineNotFound, "no engine found: --engine and %s are unset, neither tofu nor terraform is on PATH, and there is no cached OpenTofu %s build", EnvEngine, PinnedTofuVersion).
		WithHint("Install OpenTofu (https://opentofu.org/docs/intro/install/) or Terraform (https://developer.hashicorp.com/terraform/install) on PATH, or name the binary with --engine PATH or " + EnvEngine + ". In CI, the sponson action installs one (engine: tofu or terraform). Working on Sponson itself? `make tools` in its checkout builds OpenTofu " + PinnedTofuVersion + ".")
}
