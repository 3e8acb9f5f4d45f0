package clidocs_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/clidocs"
	"github.com/sponson/terraform-provider-sponson/wrapper"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// docsDir is the committed CLI reference.
const docsDir = "../../docs/cli"

// TestCLIDocsAreCurrent fails when docs/cli no longer says what the commands
// say, or holds the page of a command that is gone: run `make generate`.
func TestCLIDocsAreCurrent(t *testing.T) {
	t.Parallel()
	pages := clidocs.Render(wrapper.NewCmdRoot(cmdutil.NewFactory(), nil))

	var want, got []string
	for _, p := range pages {
		want = append(want, p.Name)
		b, err := os.ReadFile(filepath.Join(docsDir, p.Name))
		if err != nil {
			t.Errorf("docs/cli/%s: %v (run `make generate`)", p.Name, err)
			continue
		}
		if diff := cmp.Diff(string(p.Content), string(b)); diff != "" {
			t.Errorf("docs/cli/%s is stale; run `make generate` (-want +got):\n%s", p.Name, diff)
		}
	}
	entries, err := os.ReadDir(docsDir)
	if err != nil {
		t.Fatalf("reading the CLI reference: %v (run `make generate`)", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			got = append(got, e.Name())
		}
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/cli has pages of commands that do not exist, or lacks some; run `make generate` (-want +got):\n%s", diff)
	}
}

// TestCLIDocsCoverEveryCommand guards the generator against skipping a
// command of docs/design.md §4 (a command marked hidden by mistake, say).
func TestCLIDocsCoverEveryCommand(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, p := range clidocs.Render(wrapper.NewCmdRoot(cmdutil.NewFactory(), nil)) {
		names[p.Name] = true
	}
	for _, cmd := range []string{"plan", "apply", "destroy", "status", "receipt", "gc", "version"} {
		if !names["sponson_"+cmd+".md"] {
			t.Errorf("no page for sponson %s; pages: %v", cmd, names)
		}
	}
}
