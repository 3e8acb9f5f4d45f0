package fixtureprovider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = (*objectDataSource)(nil)

// NewObjectDataSource returns the fixture_object data source.
func NewObjectDataSource() datasource.DataSource {
	return &objectDataSource{}
}

// objectDataSource reads an object by name, whoever created it: a
// configuration can look at an object another scope owns without managing it.
type objectDataSource struct {
	data *providerData
}

// objectDataSourceModel is the data source's state.
type objectDataSourceModel struct {
	ID    types.String `tfsdk:"id"`
	Name  types.String `tfsdk:"name"`
	Value types.String `tfsdk:"value"`
}

func (d *objectDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_object"
}

func (d *objectDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "An existing object, read by name from `objects/<name>.json` in the provider's " +
			"directory. Reading fails with \"Object Not Found\" when there is no object of that name.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("The name of the object: 1 to %d letters, digits, `.`, `_` and "+
					"`-`, not starting with `.`.", MaxNameLength),
				Required:   true,
				Validators: []validator.String{validNameValidator()},
			},
			"id": schema.StringAttribute{
				MarkdownDescription: "The object's id, the random UUID assigned when it was created.",
				Computed:            true,
			},
			"value": schema.StringAttribute{
				MarkdownDescription: "The object's value. It is null when the object has none.",
				Computed:            true,
			},
		},
	}
}

func (d *objectDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *objectDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var data objectDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := data.Name.ValueString()
	dir, diags := d.data.root(fmt.Sprintf("The fixture_object data source %q", name))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	obj, err := ReadObject(dir, name)
	if errors.Is(err, fs.ErrNotExist) {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Object Not Found",
			fmt.Sprintf("There is no object %q in %s. Create it first (with a fixture_object resource, and a "+
				"reference to it or depends_on so that it exists before it is read), or correct the name.\n\n%s",
				name, dir, err))
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Object Not Readable",
			fmt.Sprintf("Reading the object %q from %s failed. Check the file, or delete it if it is corrupt.\n\n%s",
				name, dir, err))
		return
	}

	data.ID = types.StringValue(obj.ID)
	data.Value = stringOrNull(obj.Value)
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}
