// Package engine finds the OpenTofu or Terraform binary a run uses and
// prepares what the engine needs to find Sponson's own provider: a CLI
// configuration in a temporary directory (never in the user's home) and the
// backend override that points the engine at Sponson's state server. The
// engine itself is driven only through terraform-exec (see Session).
//
// Locate looks, in order, at --engine, SPONSON_ENGINE, tofu then terraform on
// PATH, then the build of `make tools`. A session sets its own variables in
// the process environment (Open): the engine inherits sponson's environment
// (TF_VAR_*, credentials), since terraform-exec refuses TF_VAR_* in an
// explicit environment and -var flags would change their precedence; so
// there is one session per process (docs/design.md §7.1). A
// TF_CLI_CONFIG_FILE naming a missing file is replaced by an empty one
// (MissingCLIConfig).
//
// The engine starts only when needed (docs/design.md §8): its version is
// cached per binary, keyed by resolved path, size and modification time
// (versioncache.go); init runs only when the scope's data directory lacks a
// current InitStamp over everything init's result depends on (the root
// module's files, the lock file, the backend configuration, the modules, the
// engine, the user's CLI configuration files); a plan borrows the scope's
// initialisation (BorrowInit), and a new scope copies a sibling's
// (scoperun's copySiblingInit), which is safe because the backend
// configuration never names a scope and the stamp computed on the copy must
// equal the sibling's. An apply may start before the run has decided to
// apply (Session.StartApply, PendingApply, early.go). During an apply every
// resource in flight is spoken of at least every SPONSON_HEARTBEAT (30 s),
// from sponson's clock when the engine says nothing (stream.go).
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
