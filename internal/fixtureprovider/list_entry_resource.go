package fixtureprovider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
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
	_ resource.ResourceWithConfigure   = (*listEntryResource)(nil)
	_ resource.ResourceWithImportState = (*listEntryResource)(nil)
)

// NewListEntryResource returns the fixture_list_entry resource.
func NewListEntryResource() resource.Resource {
	return &listEntryResource{}
}

// listEntryResource is one entry of a parent list, <dir>/lists/<list>.json:
// a shared, list-valued parent object such as a project's variable list, that
// configurations of several scopes add entries to.
//
// Create and Delete update the list the way a naive API client does, with a
// deliberately non-atomic read-modify-write of the whole list (modifyList):
// read the array, sleep FIXTURE_LIST_DELAY, add or remove the entry, write
// the array back. Two scopes writing one list at the same time therefore
// lose entries, the later write dropping the earlier one's entry, unless
// something outside the provider (sponson's lease) serialises them. The
// write itself is atomic, so the file is always a valid list: what is lost
// is an entry, never the file.
//
// Within one engine run (one provider instance) the rewrites are serialised
// (providerData.listMu), like a client that is consistent with itself: the
// engine applies a configuration's entries in parallel, and one scope adding
// several entries must not race itself. The race is between scopes.
type listEntryResource struct {
	data *providerData
}

// listEntryResourceModel is the resource's state.
type listEntryResourceModel struct {
	ID    types.String `tfsdk:"id"`
	List  types.String `tfsdk:"list"`
	Entry types.String `tfsdk:"entry"`
}

func (r *listEntryResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_list_entry"
}

func (r *listEntryResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "One entry of a parent list, the JSON array of strings `lists/<list>.json` in the " +
			"provider's directory, which is created when missing. Creating and destroying an entry rewrite the " +
			"whole list with a read, a pause of `FIXTURE_LIST_DELAY` (default `0s`) and a write, without any " +
			"locking between runs: two runs (for example of two scopes) writing one list at the same time lose " +
			"entries, which models a shared parent object that needs a lease. Within one run the writes are " +
			"serialised, so a configuration never loses its own entries. Importing accepts `<list>/<entry>`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The list and the entry joined by a slash, `<list>/<entry>`.",
				Computed:            true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
				},
			},
			"list": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("The name of the parent list, which is its file name: 1 to %d "+
					"letters, digits, `.`, `_` and `-`, not starting with `.`. Changing it replaces the entry.",
					MaxNameLength),
				Required: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
				Validators: []validator.String{validNameValidator()},
			},
			"entry": schema.StringAttribute{
				MarkdownDescription: "The value this resource adds to the list, any string. An entry already in " +
					"the list is not added twice. Changing it replaces the entry.",
				Required: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
			},
		},
	}
}

func (r *listEntryResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// Create adds the entry to the list with an unlocked read-modify-write.
func (r *listEntryResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var data listEntryResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	entry := data.Entry.ValueString()
	resp.Diagnostics.Append(r.modify(ctx, data, "added to", func(entries []string) []string {
		if slices.Contains(entries, entry) {
			return entries
		}
		return append(entries, entry)
	})...)
	if resp.Diagnostics.HasError() {
		return
	}

	data.ID = types.StringValue(listEntryID(data.List.ValueString(), entry))
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Read removes the entry from state when it is not in the list.
func (r *listEntryResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var data listEntryResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dir, diags := r.data.root(listEntryWhat(data))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	list := data.List.ValueString()
	entries, err := ReadList(dir, list)
	if err != nil {
		resp.Diagnostics.AddError("List Not Readable",
			fmt.Sprintf("Reading the list %q from %s failed. Check the file, or delete it if it is corrupt.\n\n%s",
				list, dir, err))
		return
	}
	if !slices.Contains(entries, data.Entry.ValueString()) {
		tflog.Debug(ctx, "The list entry is gone; removing it from state", map[string]any{
			"list": list, "entry": data.Entry.ValueString(), "dir": dir,
		})
		resp.State.RemoveResource(ctx)
		return
	}

	data.ID = types.StringValue(listEntryID(list, data.Entry.ValueString()))
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Update is never called with a change: every configurable attribute
// requires replacement. It keeps the planned state.
func (r *listEntryResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var data listEntryResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Delete removes the entry from the list with an unlocked
// read-modify-write; an entry already gone is no error.
func (r *listEntryResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var data listEntryResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	entry := data.Entry.ValueString()
	resp.Diagnostics.Append(r.modify(ctx, data, "removed from", func(entries []string) []string {
		return slices.DeleteFunc(entries, func(e string) bool { return e == entry })
	})...)
}

// ImportState accepts `<list>/<entry>`; the entry may hold slashes, the
// list name cannot.
func (r *listEntryResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	list, entry, ok := strings.Cut(req.ID, "/")
	err := validName(list)
	if !ok {
		err = fmt.Errorf("no slash in %q", req.ID)
	}
	if err != nil {
		resp.Diagnostics.AddError("Invalid Import ID",
			fmt.Sprintf("The import ID %q is not of the form <list>/<entry>. Import a fixture_list_entry by its "+
				"list's name and the entry joined by a slash, for example vars/FOO.\n\n%s", req.ID, err))
		return
	}

	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("list"), list)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("entry"), entry)...)
}

// modify rewrites the list of data with change (modifyList); done says what
// happens to the entry, for diagnostics.
func (r *listEntryResource) modify(ctx context.Context, data listEntryResourceModel, done string, change func([]string) []string) diag.Diagnostics {
	what := listEntryWhat(data)
	dir, diags := r.data.root(what)
	if diags.HasError() {
		return diags
	}
	delay, diags := r.data.delay(what)
	if diags.HasError() {
		return diags
	}

	list := data.List.ValueString()
	fields := map[string]any{"list": list, "entry": data.Entry.ValueString(), "dir": dir, "delay": delay.String()}
	tflog.Debug(ctx, "Rewriting a fixture list", fields)
	r.data.listMu.Lock()
	entries, err := modifyList(ctx, dir, list, delay, change)
	r.data.listMu.Unlock()
	if err != nil {
		diags.AddError("List Not Updated",
			fmt.Sprintf("The entry %q was not %s the list %q in %s: reading or writing the list failed, or the "+
				"run was cancelled during the list delay. Check the file and the directory, then retry.\n\n%s",
				data.Entry.ValueString(), done, list, dir, err))
		return diags
	}
	fields["entries"] = len(entries)
	tflog.Debug(ctx, "Rewrote a fixture list", fields)
	return diags
}

// listEntryID is the id of entry in list.
func listEntryID(list, entry string) string {
	return list + "/" + entry
}

// listEntryWhat names the entry in diagnostics.
func listEntryWhat(data listEntryResourceModel) string {
	return fmt.Sprintf("The fixture_list_entry %q", listEntryID(data.List.ValueString(), data.Entry.ValueString()))
}
