package fixtureprovider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = nameValidator{}

// validNameValidator returns a validator that accepts exactly the names
// validName accepts, so a configuration is refused at validation for a name
// that cannot be a file name. (terraform-plugin-framework-validators is not a
// dependency of this module; this one rule does not justify adding it.)
func validNameValidator() validator.String {
	return nameValidator{}
}

// nameValidator is the validator validNameValidator returns.
type nameValidator struct{}

func (v nameValidator) Description(_ context.Context) string {
	return fmt.Sprintf("value must be 1 to %d letters, digits, '.', '_' and '-', not starting with '.'", MaxNameLength)
}

func (v nameValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v nameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := validName(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Name",
			fmt.Sprintf("The value %q cannot be used as a fixture name: names become file names in the fixture "+
				"directory. Use 1 to %d letters, digits, '.', '_' and '-', not starting with '.'.\n\n%s",
				req.ConfigValue.ValueString(), MaxNameLength, err))
	}
}
