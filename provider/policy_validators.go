package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The validators of the sponson_scope policy and of sponson_lease. They are
// written here rather than taken from terraform-plugin-framework-validators
// because that module is not a dependency of this one yet; each is small and
// says in its message what to write instead.

var (
	_ validator.List   = stringListValidator{}
	_ validator.Map    = stringMapValidator{}
	_ validator.Map    = parentsValidator{}
	_ validator.Object = anyAttributeValidator{}
	_ validator.Int64  = int64RangeValidator{}
	_ validator.String = notBlankValidator{}
)

// resourceTypePat is a resource type name as configurations spell it.
var resourceTypePat = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// checkResourceType says what is wrong with a resource type name, "" when
// nothing is.
func checkResourceType(s string) string {
	if !resourceTypePat.MatchString(s) {
		return "is not a resource type name such as `vercel_project`"
	}
	return ""
}

// checkStackReference says what is wrong with a reference to a stack: a
// directory of the repository or a full stack name, both stack names.
func checkStackReference(s string) string {
	if err := store.CheckStack(strings.Trim(s, "/")); err != nil {
		return "is not a stack directory or name such as `stacks/network`"
	}
	return ""
}

// checkAddressPattern says what is wrong with an address pattern.
func checkAddressPattern(s string) string {
	switch {
	case s == "":
		return "is empty"
	case strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\r\n"):
		return "contains white space, which no resource address does"
	}
	return ""
}

// checkAttributePath says what is wrong with an attribute name or a dotted
// path such as `tags.Environment`.
func checkAttributePath(s string) string {
	if s == "" {
		return "is empty"
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return "has an empty segment between dots"
		}
	}
	if strings.TrimSpace(s) != s {
		return "starts or ends with white space"
	}
	return ""
}

// checkApprover says what is wrong with an approver's name.
func checkApprover(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "is empty or only white space, which counts as no approver"
	case strings.TrimSpace(s) != s:
		return "starts or ends with white space; approvers are compared without it"
	}
	return ""
}

// stringListValidator checks every element of a list of strings with check,
// and that the list has at least min elements.
type stringListValidator struct {
	what  string // the elements, for messages: "resource type"
	min   int
	check func(string) string
}

func (v stringListValidator) Description(_ context.Context) string {
	if v.min > 0 {
		return fmt.Sprintf("at least %d valid %s values", v.min, v.what)
	}
	return fmt.Sprintf("valid %s values", v.what)
}

func (v stringListValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v stringListValidator) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	checkStringList(req.Path, req.ConfigValue, v.what, v.min, v.check, &resp.Diagnostics)
}

// checkStringList is the work of stringListValidator, shared with the
// values of parentsValidator.
func checkStringList(p path.Path, list types.List, what string, minLen int, check func(string) string, diags *diag.Diagnostics) {
	elems := list.Elements()
	if len(elems) < minLen {
		diags.AddAttributeError(p, "Too Few Values",
			fmt.Sprintf("The list needs at least %d %s value(s); it has %d. Add one, or remove the attribute.", minLen, what, len(elems)))
	}
	for i, e := range elems {
		s, ok := e.(types.String)
		if !ok || s.IsUnknown() {
			continue
		}
		if s.IsNull() {
			diags.AddAttributeError(p.AtListIndex(i), "Null Value",
				fmt.Sprintf("Element %d of the list is null; give a %s or remove the element.", i, what))
			continue
		}
		if why := check(s.ValueString()); why != "" {
			diags.AddAttributeError(p.AtListIndex(i), "Invalid Value",
				fmt.Sprintf("The %s %q %s.", what, s.ValueString(), why))
		}
	}
}

// stringMapValidator checks every key of a map.
type stringMapValidator struct {
	what     string // the keys, for messages
	checkKey func(string) string
}

func (v stringMapValidator) Description(_ context.Context) string {
	return fmt.Sprintf("keys must be valid %s values", v.what)
}

func (v stringMapValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v stringMapValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for k := range req.ConfigValue.Elements() {
		if why := v.checkKey(k); why != "" {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(k), "Invalid Key",
				fmt.Sprintf("The %s %q %s.", v.what, k, why))
		}
	}
}

// parentsValidator checks the parents policy: resource types as keys, and
// for each at least one attribute name, none twice.
type parentsValidator struct{}

func (parentsValidator) Description(_ context.Context) string {
	return "keys must be resource types, each with at least one attribute name"
}

func (v parentsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (parentsValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for k, v := range req.ConfigValue.Elements() {
		p := req.Path.AtMapKey(k)
		if why := checkResourceType(k); why != "" {
			resp.Diagnostics.AddAttributeError(p, "Invalid Key", fmt.Sprintf("The resource type %q %s.", k, why))
		}
		list, ok := v.(types.List)
		if !ok || list.IsUnknown() {
			continue
		}
		if list.IsNull() {
			resp.Diagnostics.AddAttributeError(p, "Null Value",
				fmt.Sprintf("The parent attributes of %s are null; list the attributes that name its parent object.", k))
			continue
		}
		checkStringList(p, list, "attribute name", 1, checkAttributePath, &resp.Diagnostics)
		seen := map[string]bool{}
		for _, e := range list.Elements() {
			if s, ok := e.(types.String); ok && !s.IsNull() && !s.IsUnknown() {
				if seen[s.ValueString()] {
					resp.Diagnostics.AddAttributeError(p, "Duplicate Value",
						fmt.Sprintf("The attribute %q is listed twice for %s; list it once.", s.ValueString(), k))
				}
				seen[s.ValueString()] = true
			}
		}
	}
}

// anyAttributeValidator requires an object, when set, to set at least one
// of its attributes.
type anyAttributeValidator struct {
	names []string
}

func (v anyAttributeValidator) Description(_ context.Context) string {
	return "at least one of " + strings.Join(v.names, ", ") + " must be set"
}

func (v anyAttributeValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v anyAttributeValidator) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	attrs := req.ConfigValue.Attributes()
	for _, n := range v.names {
		if a, ok := attrs[n]; ok && !a.IsNull() {
			return
		}
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Empty Policy",
		fmt.Sprintf("The object sets none of %s, so it says nothing. Set at least one of them, or remove the "+
			"object.", strings.Join(v.names, ", ")))
}

// int64RangeValidator requires min <= value <= max.
type int64RangeValidator struct {
	min, max int64
}

func (v int64RangeValidator) Description(_ context.Context) string {
	return fmt.Sprintf("value must be between %d and %d", v.min, v.max)
}

func (v int64RangeValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v int64RangeValidator) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if n := req.ConfigValue.ValueInt64(); n < v.min || n > v.max {
		resp.Diagnostics.AddAttributeError(req.Path, "Value Out Of Range",
			fmt.Sprintf("The value %d is outside the allowed range: use a value from %d to %d.", n, v.min, v.max))
	}
}

// notBlankValidator refuses a string that is empty or only white space;
// give says what to write instead (the lease's object when empty).
type notBlankValidator struct{ give string }

func (notBlankValidator) Description(_ context.Context) string {
	return "value must not be empty or only white space"
}

func (v notBlankValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v notBlankValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if strings.TrimSpace(req.ConfigValue.ValueString()) == "" {
		give := v.give
		if give == "" {
			give = "Give the name of the object the lease is on."
		}
		resp.Diagnostics.AddAttributeError(req.Path, "Empty Value", "The value is empty or only white space. "+give)
	}
}
