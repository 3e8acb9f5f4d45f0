package fixtureprovider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ resource.ResourceWithModifyPlan = (*timestampResource)(nil)

// NewTimestampResource returns the fixture_timestamp resource.
func NewTimestampResource() resource.Resource {
	return &timestampResource{now: time.Now}
}

// timestampResource is a moment kept in state, whose id is that moment to
// the second, as hashicorp/time's time_static: two created in the same
// second, by two scopes, have the same id. It has no object outside the
// state.
type timestampResource struct {
	// now is the clock; tests swap it, as the time provider's tests do.
	now func() time.Time
}

// timestampResourceModel is the resource's state.
type timestampResourceModel struct {
	ID       types.String `tfsdk:"id"`
	RFC3339  types.String `tfsdk:"rfc3339"`
	Triggers types.Map    `tfsdk:"triggers"`
}

func (r *timestampResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_timestamp"
}

func (r *timestampResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A moment kept in state, whose id is the moment in RFC 3339 to the second, as " +
			"`time_static`'s: two created in the same second have the same id.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The moment, as `rfc3339`: known at plan when `rfc3339` is set, else after apply.",
				Computed:            true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
				},
			},
			"rfc3339": schema.StringAttribute{
				MarkdownDescription: "The moment in RFC 3339 (UTC, whole seconds). When unset it is the time of the " +
					"create, truncated to the second. Changing it replaces the resource.",
				Optional: true,
				Computed: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
					stringplanmodifier.RequiresReplace(),
				},
			},
			"triggers": schema.MapAttribute{
				MarkdownDescription: "Arbitrary strings; changing any replaces the resource, so it takes a new moment.",
				ElementType:         types.StringType,
				Optional:            true,
				PlanModifiers: []planmodifier.Map{
					mapplanmodifier.RequiresReplace(),
				},
			},
		},
	}
}

// ModifyPlan makes the id known at plan when the moment is configured, as
// time_static does, so a collision is visible before apply.
func (r *timestampResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan timestampResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || plan.RFC3339.IsUnknown() || plan.RFC3339.IsNull() {
		return
	}
	t, err := time.Parse(time.RFC3339, plan.RFC3339.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("rfc3339"), "Invalid Timestamp",
			fmt.Sprintf("The moment %q is not an RFC 3339 timestamp such as 2026-01-02T03:04:05Z.\n\n%s", plan.RFC3339.ValueString(), err))
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("id"), secondID(t))...)
}

func (r *timestampResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var data timestampResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if data.RFC3339.IsNull() || data.RFC3339.IsUnknown() {
		data.RFC3339 = types.StringValue(secondID(r.now()))
	}
	t, err := time.Parse(time.RFC3339, data.RFC3339.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("rfc3339"), "Invalid Timestamp",
			fmt.Sprintf("The moment %q is not an RFC 3339 timestamp.\n\n%s", data.RFC3339.ValueString(), err))
		return
	}
	data.ID = types.StringValue(secondID(t))
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Read keeps the state: the moment exists nowhere else.
func (r *timestampResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var data timestampResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Update is never called: every configurable attribute replaces the resource.
func (r *timestampResource) Update(_ context.Context, _ resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.AddError("Timestamp Not Updated",
		"fixture_timestamp has no attribute that changes in place; the engine should have planned a replacement. "+
			"This is a bug in the fixture provider.")
}

// Delete forgets the moment; the engine removes it from state.
func (r *timestampResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

// secondID is a moment as fixture_timestamp's (and time_static's) id: UTC
// RFC 3339, whole seconds.
func secondID(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}
