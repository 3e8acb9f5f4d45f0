package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// stackRepo makes a git repository of n stacks, as a monorepo has them
// (issue 50): stacks/sNNNNN holds one small root module each (its
// sponson_scope, one terraform_data and, but for the first, a
// sponson_outputs edge to its parent, stack (i-1)/3: a tree of fan-out
// 3), committed on main; then the branch change, checked out, commits a
// change of one stack, stacks/s00001 (the parent of a third of the tree).
// The origin remote names the repository, as a CI checkout's does.
func stackRepo(tb testing.TB, n int) string {
	tb.Helper()
	root := tb.TempDir()
	git := func(args ...string) {
		tb.Helper()
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "--quiet", "-b", "main")
	git("remote", "add", "origin", "git@github.com:acme/infra.git")
	for i := range n {
		src := fmt.Sprintf(`resource "sponson_scope" "this" {}

resource "terraform_data" "x" {
  input = "s%05d"
}
`, i)
		if i > 0 {
			src += fmt.Sprintf(`
data "sponson_outputs" "parent" {
  stack = "stacks/s%05d"
}
`, (i-1)/3)
		}
		p := filepath.Join(root, "stacks", fmt.Sprintf("s%05d", i))
		if err := os.MkdirAll(p, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "main.tf"), []byte(src), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "--quiet", "-m", "stacks")
	git("checkout", "--quiet", "-b", "change")
	p := filepath.Join(root, "stacks", "s00001", "main.tf")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("\nlocals { changed = true }\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	git("commit", "--quiet", "-am", "change s00001")
	return root
}

// BenchmarkStacksScale measures `sponson stacks` and `sponson stacks
// --changed --base main` (one stack changed) at 1,000 and 10,000 stacks
// (issue 50 item 1), each beside the raw read of every .tf file of the
// repository in the same run (`git ls-files -z '*.tf' | xargs -0 cat`):
// the wall time of each (medians over the iterations), and of each the CPU
// it took with the processes it started (SPONSON_RUSAGE, the shell's
// rusage), which a loaded machine inflates less than the wall time;
// sponson's peak memory (its own maximum resident set, its git children's
// apart); and the ratio of each command's wall time to the raw read's. No engine runs:
// the command reads the files and asks git.
func BenchmarkStacksScale(b *testing.B) {
	if os.Getenv("SPONSON_E2E") != "1" {
		b.Skip("set SPONSON_E2E=1 and SPONSON_TEST_ENGINE (make bench does)")
	}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("stacks=%d", n), func(b *testing.B) { benchStacks(b, n) })
	}
}

func benchStacks(b *testing.B, n int) {
	h := e2eBench(b)
	root := stackRepo(b, n)
	usageFile := filepath.Join(b.TempDir(), "usage.json")
	sponson := func(args ...string) (runUsage, int) {
		start := time.Now()
		r := h.run(root, []string{deriveStack, "SPONSON_RUSAGE=" + usageFile}, append([]string{"stacks", "--json"}, args...)...)
		u := runUsage{wall: time.Since(start)}
		if r.exit != 0 {
			b.Fatalf("sponson stacks %v: exit %d\n%s", args, r.exit, r.stderr)
		}
		var env struct {
			Result struct {
				Stacks []json.RawMessage `json:"stacks"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &env); err != nil {
			b.Fatalf("sponson stacks %v: %v", args, err)
		}
		data, err := os.ReadFile(usageFile)
		if err == nil {
			err = json.Unmarshal(data, &u)
		}
		if err != nil {
			b.Fatalf("SPONSON_RUSAGE: %v", err)
		}
		return u, len(env.Result.Stacks)
	}
	raw := func() runUsage {
		start := time.Now()
		cmd := exec.Command("sh", "-c", "git ls-files -z '*.tf' | xargs -0 cat >/dev/null")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("reading the .tf files: %v\n%s", err, out)
		}
		// The shell's usage counts the processes it waited for: git,
		// xargs, cat.
		ps := cmd.ProcessState
		return runUsage{wall: time.Since(start), SelfCPU: (ps.UserTime() + ps.SystemTime()).Seconds()}
	}
	// One untimed run of each warms the file cache for all three.
	raw()
	if _, listed := sponson(); listed != n {
		b.Fatalf("sponson stacks listed %d stacks, want %d", listed, n)
	}
	// stacks/s00001 changed: it and every stack below it in the tree.
	_, wantChanged := sponson("--changed", "--base", "main")
	var all, changed []runUsage
	var reads []runUsage
	for b.Loop() {
		u, _ := sponson()
		all = append(all, u)
		u, listed := sponson("--changed", "--base", "main")
		if listed != wantChanged {
			b.Fatalf("sponson stacks --changed listed %d stacks, then %d", wantChanged, listed)
		}
		changed = append(changed, u)
		reads = append(reads, raw())
	}
	wall := func(u runUsage) float64 { return u.wall.Seconds() }
	peak := func(u runUsage) float64 { return float64(u.SelfMaxRSS) / 1024 }
	read := medianOf(reads, wall)
	cpu := func(u runUsage) float64 { return u.SelfCPU + u.ChildrenCPU }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(medianOf(all, wall), "stacks-s")
	b.ReportMetric(medianOf(changed, wall), "changed-s")
	b.ReportMetric(read, "read-tf-s")
	b.ReportMetric(medianOf(all, wall)/read, "stacks-vs-read")
	b.ReportMetric(medianOf(changed, wall)/read, "changed-vs-read")
	b.ReportMetric(medianOf(all, cpu), "stacks-cpu-s")
	b.ReportMetric(medianOf(changed, cpu), "changed-cpu-s")
	b.ReportMetric(medianOf(reads, cpu), "read-tf-cpu-s")
	b.ReportMetric(medianOf(all, peak), "stacks-peak-MiB")
	b.ReportMetric(medianOf(changed, peak), "changed-peak-MiB")
	b.ReportMetric(float64(wantChanged), "changed-stacks")
}
