package fixtureprovider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

var (
	_ resource.ResourceWithConfigure   = (*objectResource)(nil)
	_ resource.ResourceWithImportState = (*objectResource)(nil)
)

// NewObjectResource returns the fixture_object resource.
func NewObjectResource() resource.Resource {
	return &objectResource{}
}

// objectResource is a named object, the file <dir>/objects/<name>.json. Its
// name is the collision point between scopes: creating a taken name fails,
// while updates and deletes go by name like a plain API's, whoever created
// the object. The id is random per creation, so the file tells which
// creation (and so which scope) it belongs to.
type objectResource struct {
	data *providerData
}

// objectResourceModel is the resource's state.
type objectResourceModel struct {
	ID     types.String `tfsdk:"id"`
	Name   types.String `tfsdk:"name"`
	Value  types.String `tfsdk:"value"`
	Parent types.String `tfsdk:"parent"`
}

func (r *objectResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_object"
}

func (r *objectResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A named object, kept as `objects/<name>.json` in the provider's directory with its " +
			"`id`, `name` and `value`. Creating an object whose name is taken fails with \"Object Already " +
			"Exists\"; updates and deletes go by name. Importing accepts the object's name.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "A random UUID assigned when the object is created. A re-created object gets " +
					"a new one, so the id tells one creation of a name from another. It is refreshed from the file.",
				Computed: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
				},
			},
			"name": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("The name of the object, which is its file name: 1 to %d letters, "+
					"digits, `.`, `_` and `-`, not starting with `.`. Changing it replaces the object.", MaxNameLength),
				Required: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
				Validators: []validator.String{validNameValidator()},
			},
			"value": schema.StringAttribute{
				MarkdownDescription: "The value of the object, any string. It is null when unset. Changing it " +
					"rewrites the object in place, and a value changed in the file shows as a change in the next plan.",
				Optional: true,
			},
			"parent": schema.StringAttribute{
				MarkdownDescription: "The name of the parent list this object belongs to, for example the list a " +
					"`fixture_list_entry` adds the object's id to. It is informational: kept in state only, not in " +
					"the object's file, and changing it changes nothing on disk. Null when unset, and after an import.",
				Optional: true,
			},
		},
	}
}

func (r *objectResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// Create writes the object's file with a new id, and fails when the name is
// taken: the object then belongs to someone else, and overwriting it would
// take it over.
func (r *objectResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var data objectResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dir, diags := r.data.root(objectWhat(data.Name))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	obj := Object{ID: newID(), Name: data.Name.ValueString(), Value: stringPointer(data.Value)}
	waitCtx := ctx
	if r.data.ignoreStop {
		waitCtx = context.WithoutCancel(ctx)
	}
	if err := wait(waitCtx, r.data.createDelay/2); err != nil {
		resp.Diagnostics.AddError("Object Not Created", fmt.Sprintf("The create of %q was cancelled before it began.\n\n%s", obj.Name, err))
		return
	}
	err := createObject(dir, obj)
	if err == nil {
		// The object exists now: an interrupt only shortens the rest of the
		// create, which still reports the object, as an API client does once
		// the object is made.
		_ = wait(waitCtx, r.data.createDelay-r.data.createDelay/2)
	}
	if errors.Is(err, fs.ErrExist) {
		owner := "an unreadable id"
		if existing, rerr := ReadObject(dir, obj.Name); rerr == nil {
			owner = fmt.Sprintf("id %s", existing.ID)
		}
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Object Already Exists",
			fmt.Sprintf("The object %q already exists in %s (with %s), so it was not created: it belongs to another "+
				"configuration or scope, and creating it here would take it over. Choose another name, import "+
				"the object if this configuration should own it, or delete it where it was created.\n\n%s",
				obj.Name, dir, owner, err))
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Object Not Created",
			fmt.Sprintf("Writing the object %q to %s failed, so it was not created. Check that the directory is "+
				"writable and retry.\n\n%s", obj.Name, dir, err))
		return
	}
	tflog.Debug(ctx, "Created a fixture object", map[string]any{"name": obj.Name, "id": obj.ID, "dir": dir})

	data.ID = types.StringValue(obj.ID)
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Read refreshes id and value from the file, and removes the object from
// state when the file is gone.
func (r *objectResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var data objectResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dir, diags := r.data.root(objectWhat(data.Name))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	obj, err := ReadObject(dir, data.Name.ValueString())
	if errors.Is(err, fs.ErrNotExist) {
		tflog.Debug(ctx, "The fixture object is gone; removing it from state", map[string]any{"name": data.Name.ValueString(), "dir": dir})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Object Not Readable",
			fmt.Sprintf("Reading the object %q from %s failed. Check the file, or delete it if it is corrupt.\n\n%s",
				data.Name.ValueString(), dir, err))
		return
	}

	data.ID = types.StringValue(obj.ID)
	data.Value = stringOrNull(obj.Value)
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Update rewrites the object's value. Only value and parent can change in
// place, and parent is not in the file.
func (r *objectResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var data objectResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dir, diags := r.data.root(objectWhat(data.Name))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	name := data.Name.ValueString()
	if _, err := ReadObject(dir, name); err != nil {
		resp.Diagnostics.AddError("Object Not Updated",
			fmt.Sprintf("The object %q could not be read from %s before updating it, so it was not changed. If it "+
				"was deleted meanwhile, run the apply again to create it.\n\n%s", name, dir, err))
		return
	}
	obj := Object{ID: data.ID.ValueString(), Name: name, Value: stringPointer(data.Value)}
	if err := writeObject(dir, obj); err != nil {
		resp.Diagnostics.AddError("Object Not Updated",
			fmt.Sprintf("Writing the object %q to %s failed, so its value was not changed. Check that the directory "+
				"is writable and retry.\n\n%s", name, dir, err))
		return
	}
	tflog.Debug(ctx, "Updated a fixture object", map[string]any{"name": name, "id": obj.ID, "dir": dir})

	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Delete removes the object's file; a file already gone is no error.
func (r *objectResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var data objectResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dir, diags := r.data.root(objectWhat(data.Name))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	if err := removeObject(dir, data.Name.ValueString()); err != nil {
		resp.Diagnostics.AddError("Object Not Deleted",
			fmt.Sprintf("Removing the object %q from %s failed, so it still exists. Check that the directory is "+
				"writable and retry.\n\n%s", data.Name.ValueString(), dir, err))
		return
	}
	tflog.Debug(ctx, "Deleted a fixture object", map[string]any{"name": data.Name.ValueString(), "dir": dir})
}

// ImportState accepts the object's name, or the id of an existing object
// (the id an engine reports when the create completes); Read then fills in
// id and value.
func (r *objectResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if dir, diags := r.data.root("an import"); !diags.HasError() {
		if name, ok := objectNameByID(dir, req.ID); ok {
			resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
			return
		}
	}
	if err := validName(req.ID); err != nil {
		resp.Diagnostics.AddError("Invalid Import ID",
			fmt.Sprintf("The import ID %q is not an object name. Import a fixture_object by its name, the file "+
				"name of objects/<name>.json without the extension.\n\n%s", req.ID, err))
		return
	}
	resource.ImportStatePassthroughID(ctx, path.Root("name"), req, resp)
}

// objectWhat names the object in diagnostics.
func objectWhat(name types.String) string {
	return fmt.Sprintf("The fixture_object %q", name.ValueString())
}
