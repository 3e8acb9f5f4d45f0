package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

var (
	_ resource.ResourceWithConfigure   = (*scopeResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*scopeResource)(nil)
	_ resource.ResourceWithImportState = (*scopeResource)(nil)
)

// NewScopeResource returns the sponson_scope resource.
func NewScopeResource() resource.Resource {
	return &scopeResource{}
}

// scopeResource is the scope a configuration runs in. Its name is the run's
// scope, never configured: one configuration applied in another scope is
// another scope, so a different run scope replaces the resource.
type scopeResource struct {
	data *providerData
}

// scopeResourceModel is the resource's state.
type scopeResourceModel struct {
	ID          types.String `tfsdk:"id"`
	Environment types.String `tfsdk:"environment"`
	Name        types.String `tfsdk:"name"`
	Predecessor types.String `tfsdk:"predecessor"`
	Identity    types.Map    `tfsdk:"identity"`
}

func (r *scopeResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_scope"
}

func (r *scopeResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The scope this configuration runs in: the environment and the run's scope " +
			"(`pr-<n>`, `main` or `branch-<name>`), with the scope it inherits from. The scope's name is " +
			"decided by the run, not configured, and the plan shows it. Applying the same configuration in " +
			"another scope replaces this resource, because another scope is another object. Importing accepts " +
			"an ID of the form `<environment>/<scope>` and only for the run's own scope.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The environment and the scope joined by a slash, for example `preview/pr-42`.",
				Computed:            true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.UseStateForUnknown(),
				},
			},
			"environment": schema.StringAttribute{
				MarkdownDescription: "The environment of the scope, for example `preview` or `production`. It " +
					"defaults to the run's environment. A name uses letters, digits, `.`, `_` and `-`. Changing " +
					"it, or running a configuration that leaves it unset in another environment, replaces the " +
					"resource.",
				Optional: true,
				Computed: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
				Validators: []validator.String{validName("environment")},
			},
			"name": schema.StringAttribute{
				MarkdownDescription: "The name of the scope: the run's scope, `pr-<n>` inside a pull request, " +
					"`main` on the default branch and `branch-<name>` otherwise. It is known at plan time. When " +
					"the run's scope differs from the one in state, the resource is replaced.",
				Computed: true,
			},
			"predecessor": schema.StringAttribute{
				MarkdownDescription: "The scope this scope inherits from: `branch-<head>` for a `pr-<n>` scope " +
					"whose head branch is known. It is null when there is none.",
				Computed: true,
			},
			"identity": schema.MapAttribute{
				MarkdownDescription: "The identifying attributes of each resource type, for example " +
					"`{ vercel_project_environment_variable = [\"project_id\", \"key\", \"target\"] }`. " +
					"Sponson keys what a scope owns by provider, type and these attributes, so that two scopes " +
					"naming the same real object collide even under different addresses, and a `moved` block " +
					"keeps ownership. A type without an entry is identified by the `id` of its objects. The " +
					"sponson wrapper reads this policy from the plan; the provider only records it.",
				ElementType: types.ListType{ElemType: types.StringType},
				Optional:    true,
			},
		},
	}
}

func (r *scopeResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan puts the run's scope into the plan, so that the plan shows the
// real name and predecessor and the wrapper can read them from the plan.
func (r *scopeResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		// Planning a destroy needs no context; Delete does, to know the
		// lease of the scope whose record it removes.
		return
	}

	rc, diags := r.data.runContext("the sponson_scope resource")
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	var config, plan scopeResourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}

	if config.Environment.IsNull() {
		plan.Environment = types.StringValue(rc.Environment)
	}
	plan.Name = types.StringValue(rc.Scope)
	plan.Predecessor = stringOrNull(rc.Predecessor)
	plan.ID = types.StringUnknown()
	if !plan.Environment.IsUnknown() {
		plan.ID = types.StringValue(scopeID(plan.Environment.ValueString(), rc.Scope))
	}

	if !req.State.Raw.IsNull() {
		var state scopeResourceModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
		if !state.Name.Equal(plan.Name) {
			resp.RequiresReplace.Append(path.Root("name"))
		}
		// A configured change is already caught by the attribute's
		// RequiresReplace; this catches the default following the run.
		if !plan.Environment.IsUnknown() && !state.Environment.Equal(plan.Environment) {
			resp.RequiresReplace.Append(path.Root("environment"))
		}
	}

	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// Create writes the scope record to the store under the scope's lease, then
// records the scope in state. Under the wrapper the write is fenced by the
// run's own lease (DESIGN.md §2, "Fenced write"): when the run lost its lease
// the store refuses it, the apply fails with LOCK_LOST and nothing is
// recorded, here or in the store.
func (r *scopeResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var data scopeResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(r.writeRecord(ctx, data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Read keeps the state and does not read the store: every plan refreshes,
// and a plan must work where the store is not reachable (the wrapper's plan
// hands over no store, and a plan without the wrapper need not name one).
func (r *scopeResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var data scopeResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Update rewrites the scope record, fenced like Create, then the state.
func (r *scopeResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var data scopeResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(r.writeRecord(ctx, data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// Delete removes the scope record from the store, fenced like Create; the
// framework then removes the resource from state. It needs the run context
// to know the scope's lease.
func (r *scopeResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var data scopeResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	rc, diags := r.data.runContext("destroying sponson_scope")
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if data.Name.ValueString() != rc.Scope {
		// The object was created by a run of another scope (one state
		// applied in two scopes, without the wrapper). Its record is in
		// that scope, whose lease is not this run's to hold.
		resp.Diagnostics.AddWarning("Scope Record Left In Place",
			fmt.Sprintf("sponson_scope %s was removed from this state by a run in scope %s. Its record stays in "+
				"the store under scope %s, because this run writes only under the lease of its own scope. The "+
				"next apply in scope %s rewrites it; nothing else needs to be done.",
				data.ID.ValueString(), rc.Scope, data.Name.ValueString(), data.Name.ValueString()))
		return
	}

	resp.Diagnostics.Append(r.data.records.remove(ctx, runKey(rc), data.Environment.ValueString(), data.Name.ValueString())...)
}

// ImportState accepts `<environment>/<scope>`, only for the run's own scope:
// importing another scope's object would give this configuration a resource
// another scope owns.
func (r *scopeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	environment, scope, err := parseScopeID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Invalid Import ID",
			fmt.Sprintf("The import ID %q is not of the form <environment>/<scope>, for example preview/pr-42. "+
				"Import the scope with its environment and name joined by a slash.\n\n%s", req.ID, err))
		return
	}

	rc, diags := r.data.runContext("importing sponson_scope")
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if scope != rc.Scope {
		resp.Diagnostics.AddError("Import Of Another Scope Refused",
			fmt.Sprintf("The import ID %q names scope %q, but this run is in scope %q. A configuration manages "+
				"only the scope of its own run: one configuration applied in another scope is another scope. "+
				"Import %q, or run the import in scope %q (with --scope %s under the sponson wrapper).",
				req.ID, scope, rc.Scope, scopeID(environment, rc.Scope), scope, scope))
		return
	}

	data := scopeResourceModel{
		ID:          types.StringValue(scopeID(environment, scope)),
		Environment: types.StringValue(environment),
		Name:        types.StringValue(scope),
		Predecessor: stringOrNull(rc.Predecessor),
		Identity:    types.MapNull(types.ListType{ElemType: types.StringType}),
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// writeRecord writes data as the scope record of the run's scope.
func (r *scopeResource) writeRecord(ctx context.Context, data scopeResourceModel) diag.Diagnostics {
	rc, diags := r.data.runContext("the sponson_scope resource")
	if diags.HasError() {
		return diags
	}
	return r.data.records.put(ctx, runKey(rc), scopeRecord{
		Environment: data.Environment.ValueString(),
		Name:        data.Name.ValueString(),
		Predecessor: data.Predecessor.ValueString(),
	})
}

// scopeID is the ID of a scope in an environment, as sponson_scope and
// sponson_context expose it.
func scopeID(environment, scope string) string {
	return environment + "/" + scope
}

// parseScopeID splits an ID made by scopeID and checks both names.
func parseScopeID(id string) (environment, scope string, err error) {
	environment, scope, ok := strings.Cut(id, "/")
	if !ok {
		return "", "", fmt.Errorf("no slash in %q", id)
	}
	if err := runctx.ValidName("environment", environment); err != nil {
		return "", "", err
	}
	if err := runctx.ValidName("scope", scope); err != nil {
		return "", "", err
	}
	return environment, scope, nil
}
