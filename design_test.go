package main

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citation is a reference to docs/design.md in a comment: a section number
// (§2.8), a heading's title ("Fenced write"), or both.
var citation = regexp.MustCompile(`docs/design\.md,?\s+(?:§([0-9]+(?:\.[0-9]+)*)\s*)?(?:"([^"]+)"|([A-Z][a-z]+)\b)?`)

var heading = regexp.MustCompile(`^#{2,4} ([0-9]+(?:\.[0-9]+)*)\.? (.+)$`)

// TestDesignCitations: every citation of docs/design.md in a comment of the
// Go code names a heading the design has: its number, and its title when it
// gives one. A section renumbered or renamed fails here, not in a reader's
// head.
func TestDesignCitations(t *testing.T) {
	t.Parallel()
	titles := designHeadings(t)
	byTitle := map[string]bool{}
	for _, title := range titles {
		byTitle[title] = true
	}
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			text := strings.Join(strings.Fields(g.Text()), " ")
			for _, m := range citation.FindAllStringSubmatch(text, -1) {
				num, quoted, bare := m[1], m[2], m[3]
				at := fset.Position(g.Pos())
				switch {
				case num != "":
					checked++
					want, ok := titles[num]
					if !ok {
						t.Errorf("%s: %q cites §%s, which docs/design.md does not have", at, m[0], num)
					} else if quoted != "" && quoted != want {
						t.Errorf("%s: %q cites §%s as %q; its heading is %q", at, m[0], num, quoted, want)
					}
				case quoted != "" || bare != "":
					checked++
					name := quoted + bare
					if !byTitle[name] {
						t.Errorf("%s: %q cites a heading %q that docs/design.md does not have", at, m[0], name)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Errorf("checked only %d citations: the pattern no longer finds them", checked)
	}
}

// designHeadings returns the numbered headings of docs/design.md by number.
func designHeadings(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := heading.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
