package engine

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/sponson/terraform-provider-sponson/internal/rootmodule"
)

// DeclaredBackend returns the type of the backend the configuration in dir
// declares (`terraform { backend "s3" {} }`, or "cloud" for a cloud block),
// "" when it declares none. Sponson's own override file is not the user's
// declaration and is skipped. Only the block structure is read; a file that
// does not parse is left for the engine to report.
func DeclaredBackend(dir string) (string, error) {
	files, err := rootmodule.Files(dir, OverrideFileName)
	if err != nil {
		return "", err
	}
	found := ""
	for _, f := range files {
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
