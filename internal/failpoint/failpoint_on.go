//go:build failpoints

package failpoint

import (
	"os"
	"sync/atomic"
	"syscall"
)

var hook atomic.Pointer[func(string)]

// SetHook makes Hit call f (nil: nothing) in this process.
func SetHook(f func(string)) {
	if f == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&f)
}

// Hit calls the hook, then kills the process when SPONSON_FAILPOINT names
// this step.
func Hit(name string) {
	if h := hook.Load(); h != nil {
		(*h)(name)
	}
	if os.Getenv("SPONSON_FAILPOINT") == name {
		// SIGKILL to our own pid cannot fail; if it somehow did, the
		// select still stops this step for good.
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

// Enabled reports whether this build honours SPONSON_FAILPOINT.
const Enabled = true

// Disabled reports whether SPONSON_DISABLE names the mechanism: test builds
// switch a safety mechanism off to show that its test can fail.
func Disabled(name string) bool { return os.Getenv("SPONSON_DISABLE") == name }

// Setting returns SPONSON_TEST_<name>: a test build's setting of a
// threshold (lease.Config's CompactFrom) small enough for an end-to-end
// test to reach it.
func Setting(name string) string { return os.Getenv("SPONSON_TEST_" + name) }
