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
	found := ""
	err := terraformBlocks(dir, []hcl.BlockHeaderSchema{{Type: "backend", LabelNames: []string{"type"}}, {Type: "cloud"}}, func(b *hcl.Block) {
		if b.Type == "cloud" {
			found = "cloud"
		} else {
			found = b.Labels[0]
		}
	})
	return found, err
}

// DeclaresEncryption reports whether the configuration in dir declares
// OpenTofu's state and plan encryption (`terraform { encryption { ... } }`).
// The engine would then encrypt the state it hands to sponson's state
// server, whose ledger, outputs and ownership check read that state: a run
// refuses such a configuration before the engine writes (docs/design.md
// §7.3 "The state server").
func DeclaresEncryption(dir string) (bool, error) {
	found := false
	err := terraformBlocks(dir, []hcl.BlockHeaderSchema{{Type: "encryption"}}, func(*hcl.Block) { found = true })
	return found, err
}

// terraformBlocks calls found for every block of one of kinds inside the
// terraform blocks of the configuration in dir, Sponson's override file
// skipped.
func terraformBlocks(dir string, kinds []hcl.BlockHeaderSchema, found func(*hcl.Block)) error {
	files, err := rootmodule.Files(dir, OverrideFileName)
	if err != nil {
		return err
	}
	for _, f := range files {
		top, _, _ := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}})
		if top == nil {
			continue
		}
		for _, tb := range top.Blocks {
			inner, _, _ := tb.Body.PartialContent(&hcl.BodySchema{Blocks: kinds})
			if inner == nil {
				continue
			}
			for _, b := range inner.Blocks {
				found(b)
			}
		}
	}
	return nil
}
