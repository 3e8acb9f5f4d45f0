package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

var _ validator.String = nameValidator{}

// validName returns a validator that accepts exactly the names
// runctx.ValidName accepts for kind, so a configuration is refused at
// validation for a name the wrapper would refuse (scope and environment names
// become paths and refs in the stores, docs/design.md §9).
func validName(kind string) validator.String {
	return nameValidator{kind: kind}
}

// nameValidator is the validator validName returns.
type nameValidator struct {
	kind string
}

func (v nameValidator) Description(_ context.Context) string {
	return fmt.Sprintf("value must be a valid sponson %s name", v.kind)
}

func (v nameValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v nameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := runctx.ValidName(v.kind, req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Name",
			fmt.Sprintf("The value %q cannot be used as %s name: names become paths and refs in the store. "+
				"Use 1 to %d letters, digits, '.', '_' and '-', not starting with '.'.\n\n%s",
				req.ConfigValue.ValueString(), article(v.kind), runctx.MaxNameLength, err))
	}
}

// article prefixes kind with "a" or "an" for messages.
func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
