package ancestry

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a real repository with a line of three commits and a side
// branch from the first, and returns its directory and the commits.
func repo(t *testing.T) (dir string, c1, c2, c3, side string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir = t.TempDir()
	home := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "gitconfig"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet")
	commit := func(msg string) string {
		git("commit", "--quiet", "--allow-empty", "-m", msg)
		return git("rev-parse", "HEAD")
	}
	c1 = commit("one")
	c2 = commit("two")
	c3 = commit("three")
	git("checkout", "--quiet", "-b", "side", c1)
	side = commit("side")
	return dir, c1, c2, c3, side
}

func TestCompare(t *testing.T) {
	t.Parallel()
	dir, c1, c2, c3, side := repo(t)
	g := GitIn(dir)
	for _, tc := range []struct {
		name         string
		commit, last string
		want         Verdict
	}{
		{"parent of the last", c2, c3, Older},
		{"grandparent of the last", c1, c3, Older},
		{"the same commit", c3, c3, NotOlder},
		{"the same, abbreviated", c3[:7], c3, NotOlder},
		{"a descendant", c3, c1, NotOlder},
		{"another line of work", side, c3, NotOlder},
		{"nothing applied yet", c1, "", NotOlder},
		{"an abbreviated ancestor", c1[:10], c3, Older},
		{"a commit the clone lacks", strings.Repeat("f", 40), c3, Unknown},
		{"the last is unknown to the clone", c1, strings.Repeat("f", 40), Unknown},
		{"no commit for this run", "", c3, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Compare(context.Background(), g, tc.commit, tc.last)
			if got.Verdict != tc.want {
				t.Fatalf("Compare(%s, %s) = %+v, want verdict %d", tc.commit, tc.last, got, tc.want)
			}
			if (got.Verdict == Unknown) != (got.Why != "") {
				t.Errorf("Compare(%s, %s) = %+v: Why must say exactly why an Unknown is unknown", tc.commit, tc.last, got)
			}
		})
	}
}

func TestCompareOutsideARepository(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	got := Compare(context.Background(), GitIn(t.TempDir()), strings.Repeat("a", 40), strings.Repeat("b", 40))
	if got.Verdict != Unknown || !strings.Contains(got.Why, "not a git repository") {
		t.Errorf("outside a repository: %+v", got)
	}
}

// TestCompareShallow: in a clone of depth 1, the last applied commit's
// history is missing; "not an ancestor" must not be believed.
func TestCompareShallow(t *testing.T) {
	t.Parallel()
	src, c1, _, c3, _ := repo(t)
	dst := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "--quiet", "--depth", "1", "--branch", "main", "file://"+src, dst).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	// c1 is unknown in the shallow clone; c3 (its tip) is known.
	got := Compare(context.Background(), GitIn(dst), c1, c3)
	if got.Verdict != Unknown {
		t.Errorf("Compare in a shallow clone = %+v, want Unknown", got)
	}
	// A fake git that knows both commits but answers "not an ancestor", as a
	// shallow history can: still Unknown, naming the shallow clone.
	fake := func(_ context.Context, args ...string) (int, string, string, error) {
		if args[0] == "merge-base" {
			return 1, "", "", nil
		}
		return 0, "true", "", nil
	}
	got = Compare(context.Background(), fake, c1, c3)
	if got.Verdict != Unknown || !strings.Contains(got.Why, "shallow") {
		t.Errorf("Compare with a shallow history = %+v, want Unknown naming the shallow clone", got)
	}
}
