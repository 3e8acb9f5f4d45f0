//go:build failpoints

package failpoint

import (
	"os"
	"syscall"
)

// Hit kills the process when SPONSON_FAILPOINT names this step.
func Hit(name string) {
	if os.Getenv("SPONSON_FAILPOINT") == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

// Enabled reports whether this build honours SPONSON_FAILPOINT.
const Enabled = true
