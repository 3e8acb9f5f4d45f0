package fixtureprovider

import (
	"context"
	"crypto/sha1" //nolint:gosec // the id is the SHA-1 of the content, as hashicorp/local's local_file
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

var _ resource.ResourceWithConfigure = (*fileResource)(nil)

// NewFileResource returns the fixture_file resource.
func NewFileResource() resource.Resource {
	return &fileResource{}
}

// fileResource is a file whose id is the SHA-1 of its content, as
// hashicorp/local's local_file and local_sensitive_file: two files of equal
// content, at different paths and of different scopes, have the same id.
// The id is not an identity (issue 24), which is what it is here to test.
type fileResource struct {
	data *providerData
}

// fileResourceModel is the resource's state.
type fileResourceModel struct {
	ID       types.String `tfsdk:"id"`
	Filename types.String `tfsdk:"filename"`
	Content  types.String `tfsdk:"content"`
}

func (r *fileResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_file"
}

func (r *fileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A file `files/<filename>` in the provider's directory whose id is the SHA-1 of its " +
			"content, as `local_file`'s: files of equal content share their id. Changing either attribute " +
			"replaces the file, and a file changed or removed on disk is created again by the next apply.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The hexadecimal SHA-1 of `content`, known after apply.",
				Computed:            true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
				},
			},
			"filename": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("The file's name under `files/`: 1 to %d letters, digits, `.`, "+
					"`_` and `-`, not starting with `.`. Changing it replaces the file.", MaxNameLength),
				Required: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
				Validators: []validator.String{validNameValidator()},
			},
			"content": schema.StringAttribute{
				MarkdownDescription: "The file's content. Changing it replaces the file.",
				Required:            true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
			},
		},
	}
}

func (r *fileResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// Create writes the file, replacing one already there, as local_file does.
func (r *fileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var data fileResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dir, diags := r.data.root(fileWhat(data.Filename))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	path := FilePath(dir, data.Filename.ValueString())
	if err := writeFileAtomic(path, []byte(data.Content.ValueString())); err != nil {
		resp.Diagnostics.AddError("File Not Created",
			fmt.Sprintf("Writing %s failed, so the file was not created. Check that the directory is writable and "+
				"retry.\n\n%s", path, err))
		return
	}
	data.ID = types.StringValue(ContentID(data.Content.ValueString()))
	tflog.Debug(ctx, "Created a fixture file", map[string]any{"path": path, "id": data.ID.ValueString()})
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Read removes the file from state when it is gone or its content no longer
// has the id's hash, as local_file does, so the next apply writes it again.
func (r *fileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var data fileResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dir, diags := r.data.root(fileWhat(data.Filename))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	path := FilePath(dir, data.Filename.ValueString())
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && ContentID(string(b)) != data.ID.ValueString()) {
		tflog.Debug(ctx, "The fixture file is gone or changed; removing it from state", map[string]any{"path": path})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("File Not Readable",
			fmt.Sprintf("Reading %s failed. Check the file's permissions.\n\n%s", path, err))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Update is never called: every attribute replaces the file.
func (r *fileResource) Update(_ context.Context, _ resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.AddError("File Not Updated",
		"fixture_file has no attribute that changes in place; the engine should have planned a replacement. This is "+
			"a bug in the fixture provider.")
}

// Delete removes the file; a file already gone is no error.
func (r *fileResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var data fileResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dir, diags := r.data.root(fileWhat(data.Filename))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	path := FilePath(dir, data.Filename.ValueString())
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		resp.Diagnostics.AddError("File Not Deleted",
			fmt.Sprintf("Removing %s failed, so it still exists. Check that the directory is writable and retry.\n\n%s", path, err))
		return
	}
	tflog.Debug(ctx, "Deleted a fixture file", map[string]any{"path": path})
}

// FilePath is the path of the fixture_file called name in dir.
func FilePath(dir, name string) string {
	return filepath.Join(dir, "files", name)
}

// ContentID is fixture_file's (and local_file's) id of a content: its
// hexadecimal SHA-1.
func ContentID(content string) string {
	sum := sha1.Sum([]byte(content)) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

// fileWhat names the file in diagnostics.
func fileWhat(name types.String) string {
	return fmt.Sprintf("The fixture_file %q", name.ValueString())
}
