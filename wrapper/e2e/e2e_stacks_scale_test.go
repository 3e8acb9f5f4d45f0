package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EStacksGitProcesses: `sponson stacks` and `stacks --changed` start
// as many git processes for 40 stacks as for 10 (issue 50: they started
// five per stack), counted by a git on PATH that logs each start and runs
// the real one; and list what they list for either size: every stack, and
// the changed stack with the stacks below it in the tree.
func TestE2EStacksGitProcesses(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	log := filepath.Join(t.TempDir(), "starts")
	script := "#!/bin/sh\necho \"$*\" >>'" + log + "'\nexec '" + gitPath + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{deriveStack, "PATH=" + shim + string(os.PathListSeparator) + os.Getenv("PATH")}
	starts := func(root string, args ...string) (int, []string) {
		t.Helper()
		if err := os.WriteFile(log, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r := h.mustRunEnv(root, env, append([]string{"stacks", "--json"}, args...)...)
		var doc struct {
			Result struct {
				Stacks []struct {
					Directory string `json:"directory"`
				} `json:"stacks"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		var dirs []string
		for _, s := range doc.Result.Stacks {
			dirs = append(dirs, s.Directory)
		}
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), "\n"), dirs
	}
	// Below stacks/s00001 in a tree of fan-out 3 (stackRepo): its children
	// 4 to 6, theirs 13 to 21, and 40 to 66 when there are so many.
	below := func(n int) int {
		count := 0
		for lo, hi := 1, 1; lo < n; lo, hi = 3*lo+1, 3*hi+3 {
			count += min(hi, n-1) - lo + 1
		}
		return count
	}
	var listing, changed [2]int
	for i, n := range []int{10, 40} {
		root := stackRepo(t, n)
		var dirs []string
		listing[i], dirs = starts(root)
		if len(dirs) != n {
			t.Errorf("%d stacks: stacks listed %d", n, len(dirs))
		}
		changed[i], dirs = starts(root, "--changed", "--base", "main")
		if len(dirs) != below(n) || len(dirs) == 0 || dirs[0] != "stacks/s00001" {
			t.Errorf("%d stacks: --changed listed %v, want stacks/s00001 and the %d stacks below it", n, dirs, below(n)-1)
		}
	}
	if listing[0] != listing[1] || changed[0] != changed[1] {
		t.Errorf("git started %d times for stacks of 10 stacks, %d of 40; %d for --changed of 10, %d of 40: want the same for both sizes", listing[0], listing[1], changed[0], changed[1])
	}
	if listing[0] == 0 || changed[0] <= listing[0] {
		t.Errorf("git started %d times for stacks, %d for --changed: the shim did not see the starts", listing[0], changed[0])
	}
}
