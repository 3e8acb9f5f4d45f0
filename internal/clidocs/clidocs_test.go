package clidocs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

// testTree is a small command tree with what the generator must handle:
// a hidden and a deprecated command, a persistent flag, Long text with an
// indented table and Markdown-special characters, and an example.
func testTree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "Do things per scope", Long: "Tool runs in pr-<n> scopes.\n\nUse 'tool run' where you used 'make'."}
	root.PersistentFlags().Bool("json", false, "print JSON")
	run := &cobra.Command{
		Use:     "run [flags]",
		Short:   "Run the thing.",
		Long:    "Run runs it.\n\nRules:\n\n  a    the first\n       rule\n  b    the second\n\nIt reads SPONSON_* variables and SPONSON_CTX_ENV.",
		Example: "  tool run --env preview\n",
		Aliases: []string{"go"},
		Run:     func(*cobra.Command, []string) {},
	}
	run.Flags().String("env", "", "environment (default \"preview\")")
	hidden := &cobra.Command{Use: "secret", Short: "Hidden", Hidden: true, Run: func(*cobra.Command, []string) {}}
	old := &cobra.Command{Use: "old", Short: "Old", Deprecated: "use run", Run: func(*cobra.Command, []string) {}}
	root.AddCommand(run, hidden, old)
	return root
}

func TestCLIDocsRenderPages(t *testing.T) {
	t.Parallel()
	pages := Render(testTree())
	var names []string
	for _, p := range pages {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"tool.md", "tool_run.md"}, names); diff != "" {
		t.Fatalf("pages (-want +got):\n%s", diff)
	}

	want := "# tool run\n\n" + generatedNote + `

Run the thing.

## Usage

` + "```text\ntool run [flags]\n```" + `

Aliases: go.

## Description

Run runs it.

Rules:

` + "```text\n  a    the first\n       rule\n  b    the second\n```" + `

It reads SPONSON\_\* variables and SPONSON_CTX_ENV.

## Examples

` + "```sh\n  tool run --env preview\n```" + `

## Flags

` + "```text\n      --env string   environment (default \"preview\")\n  -h, --help         help for run\n```" + `

## Flags inherited from parent commands

` + "```text\n      --json   print JSON\n```" + `

## See also

- [` + "`tool`" + `](tool.md): Do things per scope.
`
	if diff := cmp.Diff(want, string(pages[1].Content)); diff != "" {
		t.Errorf("tool_run.md (-want +got):\n%s", diff)
	}

	root := string(pages[0].Content)
	for _, s := range []string{
		"Tool runs in pr-\\<n\\> scopes.",
		"Use `tool run` where you used `make`.",
		"| [`tool run`](tool_run.md) | Run the thing. |",
		"```text\ntool [command]\n```",
		"[Error codes](../errors.md)",
	} {
		if !strings.Contains(root, s) {
			t.Errorf("tool.md lacks %q:\n%s", s, root)
		}
	}
	for _, s := range []string{"secret", "old"} {
		if strings.Contains(root, "tool "+s) {
			t.Errorf("tool.md lists the %s command, which --help does not:\n%s", s, root)
		}
	}
}

func TestCLIDocsEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"pr-<n>", `pr-\<n\>`},
		{"SPONSON_CTX_ENV", "SPONSON_CTX_ENV"},
		{"SPONSON_* variables", `SPONSON\_\* variables`},
		{"_leading and trailing_", `\_leading and trailing\_`},
		{"the scope's lease", "the scope's lease"},
		{"run 'sponson destroy --scope S' now", "run `sponson destroy --scope S` now"},
		{"`a*b` and a*b", "`a*b` and a\\*b"},
		{"[x] | y", `\[x\] \| y`},
	} {
		if got := escape(tc.in); got != tc.want {
			t.Errorf("escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCLIDocsWriteRemovesStalePages: the page of a removed command must not
// outlive it, and files that are not pages are not the generator's to touch.
func TestCLIDocsWriteRemovesStalePages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"tool_gone.md": "old", "notes.txt": "mine"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(dir, Render(testTree())); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff([]string{"notes.txt", "tool.md", "tool_run.md"}, got); diff != "" {
		t.Errorf("files after Write (-want +got):\n%s", diff)
	}
}
