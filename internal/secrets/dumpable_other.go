//go:build !linux

package secrets

// nondumpable does nothing where Linux's PR_SET_DUMPABLE does not exist:
// the keys are still out of the environment, not out of reach of a
// debugger of the same user.
func nondumpable() {}
