// Command schemacheck prepares the output of `tofu providers schema -json`
// for tfplugindocs and refuses a schema whose documentation would be poor.
//
//	go run ./.ci/schemacheck IN.json OUT.json
//
// It renames the provider's key, OpenTofu's registry.opentofu.org/sponson/sponson
// or Terraform's registry.terraform.io/sponson/sponson (whichever engine
// SPONSON_ENGINE names), to the short name sponson, because tfplugindocs looks a schema up only by
// the short name or under registry.terraform.io/hashicorp/. And it checks
// that the provider, every resource, data source and ephemeral resource, and
// every attribute at any depth has a Markdown description written as full
// sentences (STYLE.md: "Every attribute has a MarkdownDescription in full
// sentences"): the descriptions are the registry's documentation and what
// editors show, so a missing one is a defect, not a style nit. .ci/gendocs.sh
// runs it before tfplugindocs.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// providerKeys are the provider's address as each engine prints it: the
// configuration's source sponson/sponson under the engine's own registry.
var providerKeys = []string{"registry.opentofu.org/sponson/sponson", "registry.terraform.io/sponson/sponson"}

// shortName is the key tfplugindocs --provider-name sponson looks for.
const shortName = "sponson"

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: schemacheck IN.json OUT.json")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "schemacheck:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	// Decoding into generic maps keeps every field tfplugindocs reads,
	// including ones this program does not know.
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	schemas, _ := doc["provider_schemas"].(map[string]any)
	var provider map[string]any
	for _, k := range providerKeys {
		if p, ok := schemas[k].(map[string]any); ok {
			provider = p
		}
	}
	if provider == nil || len(schemas) != 1 {
		return fmt.Errorf("%s: expected exactly the provider %s, found %v", in, strings.Join(providerKeys, " or "), keys(schemas))
	}
	if problems := checkProvider(provider); len(problems) > 0 {
		return errors.New("descriptions that are missing or not full sentences:\n  " + strings.Join(problems, "\n  "))
	}
	doc["provider_schemas"] = map[string]any{shortName: provider}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// checkProvider returns one line per description that is missing or is not
// a sentence, in a stable order.
func checkProvider(p map[string]any) []string {
	var problems []string
	if s, ok := p["provider"].(map[string]any); ok {
		problems = append(problems, checkSchema("provider", s)...)
	}
	for _, kind := range []string{"resource_schemas", "data_source_schemas", "ephemeral_resource_schemas"} {
		objects, _ := p[kind].(map[string]any)
		for _, name := range keys(objects) {
			s, _ := objects[name].(map[string]any)
			problems = append(problems, checkSchema(name, s)...)
		}
	}
	return problems
}

// checkSchema checks a schema ({"block": ...}): the object's own
// description, then its attributes and nested blocks.
func checkSchema(where string, s map[string]any) []string {
	block, _ := s["block"].(map[string]any)
	if block == nil {
		return []string{where + ": no block"}
	}
	var problems []string
	if p := checkDescription(block); p != "" {
		problems = append(problems, where+": "+p)
	}
	return append(problems, checkBlock(where, block)...)
}

// checkBlock checks the attributes and nested blocks of a block.
func checkBlock(where string, block map[string]any) []string {
	var problems []string
	attrs, _ := block["attributes"].(map[string]any)
	for _, name := range keys(attrs) {
		a, _ := attrs[name].(map[string]any)
		problems = append(problems, checkAttribute(where+"."+name, a)...)
	}
	blocks, _ := block["block_types"].(map[string]any)
	for _, name := range keys(blocks) {
		bt, _ := blocks[name].(map[string]any)
		nested, _ := bt["block"].(map[string]any)
		if p := checkDescription(nested); p != "" {
			problems = append(problems, where+"."+name+": "+p)
		}
		problems = append(problems, checkBlock(where+"."+name, nested)...)
	}
	return problems
}

// checkAttribute checks an attribute and, for nested attributes
// (SingleNestedAttribute and friends), the attributes inside it.
func checkAttribute(where string, a map[string]any) []string {
	var problems []string
	if p := checkDescription(a); p != "" {
		problems = append(problems, where+": "+p)
	}
	if nt, ok := a["nested_type"].(map[string]any); ok {
		problems = append(problems, checkBlock(where, nt)...)
	}
	return problems
}

// checkDescription says what is wrong with the description of v, "" when
// nothing is. A sentence here starts with a capital letter or a code span
// and ends with a period (or a code block or list that a period cannot
// follow).
func checkDescription(v map[string]any) string {
	d, _ := v["description"].(string)
	d = strings.TrimSpace(d)
	switch {
	case d == "":
		return "no description"
	case v["description_kind"] != "markdown":
		return "the description is not Markdown (set MarkdownDescription)"
	}
	first, _ := utf8.DecodeRuneInString(d)
	if !unicode.IsUpper(first) && first != '`' {
		return fmt.Sprintf("%q does not start a sentence", clip(d))
	}
	if !strings.HasSuffix(d, ".") && !strings.HasSuffix(d, "```") {
		return fmt.Sprintf("%q does not end with a period", clip(d))
	}
	return ""
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:30] + "…" + s[len(s)-25:]
	}
	return s
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
