package fixtureprovider

import (
	"context"
	"crypto/rand"
	"math/big"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ resource.Resource = (*petResource)(nil)

// NewPetResource returns the fixture_pet resource.
func NewPetResource() resource.Resource {
	return &petResource{}
}

// petResource is a generated name kept in state, whose id is the name, as
// hashicorp/random's random_pet: the prefix is part of it, so a prefix that
// names the scope gives each scope its own id, and a change of prefix (as
// when a pull request takes over a branch's objects) replaces the name with
// one unknown until the apply.
type petResource struct{}

// petResourceModel is the resource's state.
type petResourceModel struct {
	ID     types.String `tfsdk:"id"`
	Prefix types.String `tfsdk:"prefix"`
}

func (r *petResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_pet"
}

func (r *petResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A generated name kept in state, `<prefix>-<adjective>-<animal>`, whose id is the " +
			"name, as `random_pet`'s.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The generated name, known after apply; a replacement generates a new one.",
				Computed:            true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
				},
			},
			"prefix": schema.StringAttribute{
				MarkdownDescription: "The start of the name, followed by `-`; none when unset. Changing it " +
					"replaces the name.",
				Optional: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
			},
		},
	}
}

func (r *petResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var data petResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	data.ID = types.StringValue(petName(data.Prefix.ValueString()))
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Read keeps the state: the name exists nowhere else.
func (r *petResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var data petResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Update is never called: the prefix replaces the name.
func (r *petResource) Update(_ context.Context, _ resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.AddError("Pet Not Updated",
		"fixture_pet has no attribute that changes in place; the engine should have planned a replacement. This is "+
			"a bug in the fixture provider.")
}

// Delete forgets the name; the engine removes it from state.
func (r *petResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}

var (
	petAdjectives = []string{"brave", "calm", "eager", "fond", "glad", "keen", "lucky", "merry", "proud", "quiet", "sunny", "witty"}
	petAnimals    = []string{"badger", "crane", "dingo", "ferret", "gecko", "heron", "ibis", "koala", "lemur", "otter", "panda", "wombat"}
)

// petName is prefix (when not empty), an adjective and an animal, joined by
// "-": 144 names per prefix, so two creations may well get the same one, as
// random_pet's may.
func petName(prefix string) string {
	pick := func(words []string) string {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(words)))) // crypto/rand never fails (Go 1.24)
		return words[n.Int64()]
	}
	parts := []string{pick(petAdjectives), pick(petAnimals)}
	if prefix != "" {
		parts = append([]string{prefix}, parts...)
	}
	return strings.Join(parts, "-")
}
