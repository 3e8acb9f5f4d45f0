package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore/pgtest"
)

// TestE2EMigrateOldLayout: a store written before stacks (the layout-1
// fixtures in internal/store/testdata/layout1, applied with
// testdata/oldlayout) is refused with STORE_LAYOUT_OLD by plan, apply and
// status, never read as empty; after `sponson migrate` a plan of the same
// configuration shows no change, per store kind.
func TestE2EMigrateOldLayout(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	const fixtures = "../../internal/store/testdata/layout1"
	kinds := []struct {
		name  string
		store func(t *testing.T) (flag string, env []string)
	}{
		{"file", func(t *testing.T) (string, []string) {
			dir := filepath.Join(t.TempDir(), "store")
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(fixtures, "file"))); err != nil {
				t.Fatal(err)
			}
			return "--store=file://" + dir, nil
		}},
		{"git", func(t *testing.T) (string, []string) {
			bare := filepath.Join(t.TempDir(), "origin.git")
			bundle, _ := filepath.Abs(filepath.Join(fixtures, "git.bundle"))
			if out, err := exec.Command("git", "clone", "--quiet", "--mirror", bundle, bare).CombinedOutput(); err != nil {
				t.Fatalf("git clone: %v\n%s", err, out)
			}
			_, _, env := gitRemote(t) // the state key the fixture was sealed with
			return "--store=git+file://" + bare, env
		}},
		{"postgres", func(t *testing.T) (string, []string) {
			srv := pgtest.Own(t)
			db := srv.NewDatabase(t)
			dump := readFile(t, filepath.Join(fixtures, "postgres.sql"))
			sql := regexp.MustCompile(`(?m)^\\.*$`).ReplaceAllString(string(dump), "")
			if err := srv.Exec(t.Context(), db, sql); err != nil {
				t.Fatalf("loading the layout-1 dump: %v", err)
			}
			return "--store=" + srv.URL(db), nil
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			flag, env := k.store(t)
			dir := h.workdir("testdata/oldlayout")
			for _, args := range [][]string{
				{"plan", flag, "--pr", "7", "--json"},
				{"apply", flag, "--pr", "7", "--json"},
				{"status", flag, "--json"},
			} {
				r := h.run(dir, env, args...)
				if r.exit != 2 || r.code(t) != "STORE_LAYOUT_OLD" {
					t.Fatalf("%s on an old store: exit %d %q, want 2 STORE_LAYOUT_OLD\n%s\n%s", args[0], r.exit, r.code(t), r.stdout, r.stderr)
				}
			}
			r := h.run(dir, env, "migrate", flag, "--json")
			if r.exit != 0 {
				t.Fatalf("migrate: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
			}
			res := r.envelope(t)["result"].(map[string]any)
			if res["stack"] != e2eStack || len(res["scopes"].([]any)) != 2 {
				t.Errorf("migrate result %v, want main and pr-7 into %s", res, e2eStack)
			}
			for _, scope := range []string{"7", "main"} {
				args := []string{"plan", flag, "--json", "--pr", scope}
				if scope == "main" {
					args = []string{"plan", flag, "--json", "--scope", "main"}
				}
				r := h.run(dir, env, args...)
				if r.exit != 0 {
					t.Fatalf("plan after migrate: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
				}
				sum := r.envelope(t)["result"].(map[string]any)["summary"].(map[string]any)
				for _, n := range []string{"add", "change", "destroy"} {
					if v, _ := sum[n].(float64); v != 0 {
						t.Errorf("plan of %s after migrate: %v, want no change", scope, sum)
					}
				}
			}
			if r := h.run(dir, env, "migrate", flag, "--json"); r.exit != 0 || len(r.envelope(t)["result"].(map[string]any)["scopes"].([]any)) != 0 {
				t.Errorf("second migrate: exit %d\n%s", r.exit, r.stdout)
			}
			if strings.Contains(r.stderr, "panic") {
				t.Error(r.stderr)
			}
		})
	}
}
