package engine

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// DeclaredBackend returns the type of the backend the configuration in dir
// declares (`terraform { backend "s3" {} }`, or "cloud" for a cloud block),
// "" when it declares none. Sponson's own override file is not the user's
// declaration and is skipped. Only the block structure is read; a file that
// does not parse is left for the engine to report.
func DeclaredBackend(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || n == OverrideFileName || (!strings.HasSuffix(n, ".tf") && !strings.HasSuffix(n, ".tf.json")) {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	parser := hclparse.NewParser()
	found := ""
	for _, n := range names {
		path := filepath.Join(dir, n)
		var f *hcl.File
		if strings.HasSuffix(n, ".json") {
			f, _ = parser.ParseJSONFile(path)
		} else {
			f, _ = parser.ParseHCLFile(path)
		}
		if f == nil || f.Body == nil {
			continue
		}
		top, _, _ := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}})
		if top == nil {
			continue
		}
		for _, tb := range top.Blocks {
			inner, _, _ := tb.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
				{Type: "backend", LabelNames: []string{"type"}},
				{Type: "cloud"},
			}})
			if inner == nil {
				continue
			}
			for _, b := range inner.Blocks {
				if b.Type == "cloud" {
					found = "cloud"
				} else {
					found = b.Labels[0]
				}
			}
		}
	}
	return found, nil
}
