// Package version holds the release version of the sponson binaries, set at
// build time with -ldflags "-X .../internal/version.Version=1.2.3" (make
// build, the release), or taken from the module version Go records when the
// binary is built with `go install ...@v1.2.3`.
package version

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// fallback is the version of a build that was given none.
const fallback = "0.1.0"

// Version of this build.
var Version = fallback

func init() {
	if bi, ok := debug.ReadBuildInfo(); ok {
		Version = fromModule(Version, bi.Main.Version)
	}
}

var release = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// fromModule is the version of a build stamped with version (ldflags, or
// the fallback) whose main module Go recorded at module: `go install` of a
// tag records that tag, which is the truth when nothing was stamped. A
// pseudo-version (a build from a commit, not a tag), "(devel)" or a dirty
// checkout says nothing about the release and is ignored.
func fromModule(version, module string) string {
	if version != fallback || !release.MatchString(module) {
		return version
	}
	return strings.TrimPrefix(module, "v")
}

// Mirror returns the plain release number (no pre-release or build suffix)
// under which the wrapper offers its provider to the engine: version
// constraints such as "~> 0.1" never match a pre-release.
func Mirror() string {
	v := strings.TrimPrefix(Version, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	if v == "" || strings.Count(v, ".") != 2 {
		return "0.0.0"
	}
	return v
}
