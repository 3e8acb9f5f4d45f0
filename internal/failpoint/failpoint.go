//go:build !failpoints

// Package failpoint lets tests stop a sponson process at a named step, to
// prove what holds when a run dies between two steps. In normal builds Hit
// does nothing but call a test's in-process hook; builds with the `failpoints` tag kill the
// process (SIGKILL, like a crash) at the step named by SPONSON_FAILPOINT.
package failpoint

import "sync/atomic"

var hook atomic.Pointer[func(string)]

// SetHook makes Hit call f (nil: nothing) in this process: in-process tests
// simulate a crash at a step by panicking from f.
func SetHook(f func(string)) {
	if f == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&f)
}

// Hit marks the named step: it calls the hook, if a test set one.
func Hit(name string) {
	if h := hook.Load(); h != nil {
		(*h)(name)
	}
}

// Enabled reports whether this build honours SPONSON_FAILPOINT.
const Enabled = false

// Disabled reports whether a test build switched off the named safety
// mechanism (SPONSON_DISABLE), for control cases that show a test can fail.
// Normal builds never switch anything off.
func Disabled(string) bool { return false }

// Setting returns a test build's value of SPONSON_TEST_<name>, which sets a
// threshold small enough for an end-to-end test to reach it. Normal builds
// have no settings: it returns "".
func Setting(string) string { return "" }
