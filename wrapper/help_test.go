package wrapper

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

var updateHelp = flag.Bool("update-help", false, "rewrite testdata/help.golden from the command tree")

// TestHelpGolden holds the --help of every command, hidden ones included,
// against testdata/help.golden: a restructuring of the command families
// must leave every help text byte-identical (issue 47). After a deliberate
// change of a help text, rewrite it with `go test ./wrapper -run
// TestHelpGolden -update-help` and review the diff.
func TestHelpGolden(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	f, _, _ := testFactory(nil)
	walk(NewCmdRoot(f, &cmdutil.Outcome{}), nil)
	if len(paths) < 40 {
		t.Fatalf("walked %d commands; the tree has more", len(paths))
	}
	var got strings.Builder
	for _, p := range paths {
		f, out, errOut := testFactory(nil)
		code := Run(context.Background(), append(append([]string{}, p...), "--help"), f)
		got.WriteString("==== sponson " + strings.Join(p, " ") + " --help\n")
		got.WriteString(out.String())
		got.WriteString(errOut.String())
		if code != 0 {
			t.Errorf("sponson %s --help: exit %d", strings.Join(p, " "), code)
		}
	}
	golden := filepath.Join("testdata", "help.golden")
	if *updateHelp {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with -update-help)", err)
	}
	if d := cmp.Diff(string(want), got.String()); d != "" {
		t.Errorf("--help changed (-golden +now); if deliberate, rerun with -update-help:\n%s", d)
	}
}
