// Package version holds the release version of the sponson binaries, set at
// build time with -ldflags "-X .../internal/version.Version=1.2.3".
package version

import "strings"

// Version of this build.
var Version = "0.1.0"

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
