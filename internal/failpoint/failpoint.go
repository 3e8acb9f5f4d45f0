//go:build !failpoints

// Package failpoint lets tests stop a sponson process at a named step, to
// prove what holds when a run dies between two steps. In normal builds Hit
// does nothing and costs nothing; builds with the `failpoints` tag kill the
// process (SIGKILL, like a crash) at the step named by SPONSON_FAILPOINT.
package failpoint

// Hit marks the named step.
func Hit(string) {}

// Enabled reports whether this build honours SPONSON_FAILPOINT.
const Enabled = false
