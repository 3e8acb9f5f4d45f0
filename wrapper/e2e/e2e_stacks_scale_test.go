package e2e_test

import (
	"encoding/json"
	"fmt"
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
	git := newGitCounter(t)
	env := []string{deriveStack, git.path}
	starts := func(root string, args ...string) (int, []string) {
		t.Helper()
		git.reset(t)
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
		n, _ := git.starts(t)
		return n, dirs
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

// TestE2EPlanAllGitProcesses: a plan of many stacks asks git about the
// repository once, not once per stack (issue 50 item 2): each stack's run
// takes the answers its parent shared (runctx.GitAnswersVar), so the git
// processes of `plan --all` do not grow with the stacks.
func TestE2EPlanAllGitProcesses(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	git := newGitCounter(t)
	var starts [2]int
	var asked [2]string
	for i, n := range []int{2, 5} {
		files := map[string]string{}
		for j := range n {
			src := `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
}

resource "sponson_scope" "this" {}
`
			if j > 0 {
				// Each stack reads the one before it: the provider's
				// reading of another stack asks git too.
				src += fmt.Sprintf("\ndata \"sponson_outputs\" \"up\" {\n  stack = \"stacks/s%d\"\n}\n", j-1)
			}
			files[fmt.Sprintf("stacks/s%d/main.tf", j)] = src
		}
		root := repoWith(t, files)
		env := []string{deriveStack, "SPONSON_STORE=file://" + filepath.Join(t.TempDir(), "store"), git.path}
		git.reset(t)
		r := h.mustRunEnv(root, env, "plan", "--all", "--branch", "main", "--parallelism", "2")
		if !strings.Contains(r.stdout, fmt.Sprintf("%d succeeded, 0 failed", n)) {
			t.Fatalf("plan --all of %d stacks:\n%s\n%s", n, r.stdout, r.stderr)
		}
		starts[i], asked[i] = git.starts(t)
	}
	if starts[0] == 0 {
		t.Fatal("the shim saw no git start: the test would pass whatever sponson does")
	}
	if starts[0] != starts[1] {
		t.Errorf("git started %d times for a plan of 2 stacks, %d for 5: want the same\n2 stacks:\n%s\n5 stacks:\n%s", starts[0], starts[1], asked[0], asked[1])
	}
}

// gitCounter is a git on PATH that logs each start, then runs the real one.
type gitCounter struct {
	path string // PATH=..., for the run's environment
	log  string
}

func newGitCounter(t *testing.T) gitCounter {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	g := gitCounter{path: "PATH=" + shim + string(os.PathListSeparator) + os.Getenv("PATH"), log: filepath.Join(t.TempDir(), "starts")}
	script := "#!/bin/sh\necho \"$*\" >>'" + g.log + "'\nexec '" + gitPath + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return g
}

// reset forgets the starts logged so far.
func (g gitCounter) reset(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(g.log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// starts is how many times git started since the last reset, and the
// command lines.
func (g gitCounter) starts(t *testing.T) (int, string) {
	t.Helper()
	data, err := os.ReadFile(g.log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n"), string(data)
}
