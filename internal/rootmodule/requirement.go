package rootmodule

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// UnrequiredSponson returns the first block of files that uses a sponson_*
// resource, data source or ephemeral resource under the provider's default
// local name when no terraform block's required_providers names `sponson`,
// as "sponson_scope.this (main.tf:3)"; "" when there is none. Without
// the requirement the engine looks for hashicorp/sponson, which does not
// exist, and says only that (issue 52). A block with a provider argument
// uses another local name, which the engine checks itself.
func UnrequiredSponson(files []*hcl.File) string {
	schema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "terraform"},
		{Type: "resource", LabelNames: []string{"type", "name"}},
		{Type: "data", LabelNames: []string{"type", "name"}},
		{Type: "ephemeral", LabelNames: []string{"type", "name"}},
	}}
	first := ""
	for _, f := range files {
		top, _, _ := f.Body.PartialContent(schema)
		if top == nil {
			continue
		}
		for _, b := range top.Blocks {
			if b.Type == "terraform" {
				if requiresSponson(b.Body) {
					return ""
				}
				continue
			}
			if first != "" || !strings.HasPrefix(b.Labels[0], "sponson_") {
				continue
			}
			attrs, _, _ := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "provider"}}})
			if attrs != nil && attrs.Attributes["provider"] != nil {
				continue
			}
			name := b.Labels[0] + "." + b.Labels[1]
			if b.Type != "resource" {
				name = b.Type + "." + name
			}
			first = fmt.Sprintf("%s (%s:%d)", name, filepath.Base(b.DefRange.Filename), b.DefRange.Start.Line)
		}
	}
	return first
}

// requiresSponson reports whether a terraform block's required_providers
// names the local name sponson.
func requiresSponson(body hcl.Body) bool {
	c, _, _ := body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "required_providers"}}})
	if c == nil {
		return false
	}
	for _, rp := range c.Blocks {
		attrs, _ := rp.Body.JustAttributes()
		if _, ok := attrs["sponson"]; ok {
			return true
		}
	}
	return false
}
