package fixtureprovider

import (
	"context"
	"crypto/rand"
	"math"
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ resource.Resource = (*tokenResource)(nil)

// NewTokenResource returns the fixture_token resource.
func NewTokenResource() resource.Resource {
	return &tokenResource{}
}

// tokenResource is a random number kept in state, whose id is that number,
// as hashicorp/null's null_resource: any change of its triggers replaces it
// (RequiresReplace), and the new id is unknown until the apply, so the
// object a scope will own after the apply is not known at plan.
type tokenResource struct{}

// tokenResourceModel is the resource's state.
type tokenResourceModel struct {
	ID       types.String `tfsdk:"id"`
	Triggers types.Map    `tfsdk:"triggers"`
}

func (r *tokenResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_token"
}

func (r *tokenResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A random number kept in state as its id, as `null_resource`'s: a change of " +
			"`triggers` replaces it with a new number, unknown until the apply.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "A random non-negative decimal number, new with every creation, known after apply.",
				Computed:            true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
				},
			},
			"triggers": schema.MapAttribute{
				MarkdownDescription: "Arbitrary strings; changing any replaces the token.",
				ElementType:         types.StringType,
				Optional:            true,
				PlanModifiers: []planmodifier.Map{
					mapplanmodifier.RequiresReplace(),
				},
			},
		},
	}
}

func (r *tokenResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var data tokenResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	n, _ := rand.Int(rand.Reader, big.NewInt(math.MaxInt64)) // crypto/rand never fails (Go 1.24)
	data.ID = types.StringValue(n.String())
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Read keeps the state: the token exists nowhere else.
func (r *tokenResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var data tokenResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Update is never called: triggers replace the token.
func (r *tokenResource) Update(_ context.Context, _ resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.AddError("Token Not Updated",
		"fixture_token has no attribute that changes in place; the engine should have planned a replacement. This "+
			"is a bug in the fixture provider.")
}

// Delete forgets the token; the engine removes it from state.
func (r *tokenResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
