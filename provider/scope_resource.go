package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
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
	Stack       types.String `tfsdk:"stack"`
	Name        types.String `tfsdk:"name"`
	Predecessor types.String `tfsdk:"predecessor"`
	Identity    types.Map    `tfsdk:"identity"`
	URLOutput   types.String `tfsdk:"url_output"`
	Production  types.Object `tfsdk:"production"`
	Parents     types.Map    `tfsdk:"parents"`
	After       types.List   `tfsdk:"after"`
	StateOnly   types.List   `tfsdk:"state_only"`
}

// productionAttrTypes are the attributes of the production policy, for null
// values (ImportState).
var productionAttrTypes = map[string]attr.Type{
	"types":      types.ListType{ElemType: types.StringType},
	"addresses":  types.ListType{ElemType: types.StringType},
	"attributes": types.MapType{ElemType: types.StringType},
	"approvers":  types.ListType{ElemType: types.StringType},
}

// parentsElemType is the element type of the parents policy.
var parentsElemType = types.ListType{ElemType: types.StringType}

func (r *scopeResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_scope"
}

func (r *scopeResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The scope this configuration runs in: the environment and the run's scope " +
			"(`pr-<n>`, `main` or `branch-<name>`), with the scope it inherits from. The scope's name is " +
			"decided by the run, not configured, and the plan shows it. Applying the same configuration in " +
			"another scope replaces this resource, because another scope is another object. It also carries the " +
			"scope's policy, which the `sponson` wrapper reads from the plan: how resources are identified " +
			"(`identity`), which changes write production and who may approve them (`production`), which " +
			"resources are entries of a shared parent object (`parents`), and which keep nothing outside the " +
			"state (`state_only`). Importing accepts an ID of the form " +
			"`<environment>/<scope>` and only for the run's own scope.",
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
			"stack": schema.StringAttribute{
				MarkdownDescription: "The stack of this configuration: one root module of one repository, whose " +
					"state, lease, receipts and ledger are its own in the store. It defaults to the name the run " +
					"derives: the repository (from the CI host's variables or the `origin` URL, without " +
					"credentials) and the configuration's directory in it joined by `//`, for example " +
					"`github.com/acme/infra//stacks/app`. The `sponson` wrapper reads this attribute from the " +
					"`.tf` files before it takes the lease, so it must be a literal string (no variables, " +
					"functions or interpolation); `--stack` and `SPONSON_STACK` override it. A name uses " +
					"letters, digits, `.`, `_`, `-` and `/`. A value other than the run's stack is an error; " +
					"changing it replaces the resource. A resource created before stacks existed keeps a null " +
					"stack unless one is configured.",
				Optional: true,
				Computed: true,
			},
			"after": schema.ListAttribute{
				MarkdownDescription: "The stacks of this repository that runs of several stacks (`sponson plan " +
					"--all`, `apply --all`, `--changed`) must finish before this one, for a dependency that no " +
					"`sponson_outputs` data source shows, for example `[\"stacks/network\"]`. Each is the " +
					"stack's directory relative to the repository root, or a full stack name such as " +
					"`github.com/acme/infra//stacks/network`. The wrapper reads it from the `.tf` files before " +
					"any engine runs, so it must be a literal list of strings; a cycle between stacks is refused. " +
					"It changes nothing else: the provider only records it.",
				ElementType: types.StringType,
				Optional:    true,
				Validators: []validator.List{
					stringListValidator{what: "stack", check: checkStackReference},
				},
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
			"url_output": schema.StringAttribute{
				MarkdownDescription: "The name of the root module output that holds the scope's address, for " +
					"example `\"url\"` for a preview. After an apply the sponson wrapper shows it as the " +
					"summary's link, records a GitHub deployment of environment `ENV/SCOPE` with that URL " +
					"(the pull request's \"View deployment\" button; the scope's destroy marks it inactive) and " +
					"writes it to GitLab's dotenv report (`--gitlab-dotenv`). The output must be a string that " +
					"is not sensitive. `--preview-url-output` names another output for one run. The provider " +
					"only records it.",
				Optional:   true,
				Validators: []validator.String{notBlankValidator{give: "Give the name of a root module output, such as \"url\", or leave url_output out."}},
			},
			"production": schema.SingleNestedAttribute{
				MarkdownDescription: "Which planned changes write production, and who may approve them. A run " +
					"of the sponson wrapper that can write production needs a named approver (`--approved-by " +
					"NAME` or `SPONSON_APPROVED_BY`), or it is refused with `ENV_NOT_APPROVED` before the engine " +
					"writes anything; `sponson plan` still runs and says that the apply will need approval. " +
					"Every run with `--env production` can write production. A planned create, update, " +
					"replacement or delete writes production when any rule here matches it: its resource type " +
					"is in `types`, its address matches a pattern in `addresses`, or one of its attributes has " +
					"the value `attributes` gives. Reads and no-ops never do. The wrapper reads this policy " +
					"from the plan, so every value must be known at plan time; the provider only records it.",
				Optional: true,
				Attributes: map[string]schema.Attribute{
					"types": schema.ListAttribute{
						MarkdownDescription: "Resource types whose every change writes production, matched " +
							"exactly, for example `[\"vercel_project_domain\"]`.",
						ElementType: types.StringType,
						Optional:    true,
						Validators: []validator.List{
							stringListValidator{what: "resource type", check: checkResourceType},
						},
					},
					"addresses": schema.ListAttribute{
						MarkdownDescription: "Patterns of resource addresses whose changes write production, " +
							"for example `[\"module.prod.*\"]`. A pattern matches the whole address, or the " +
							"previous address of a moved resource: `*` matches any run of characters, dots " +
							"and brackets included, `?` matches one character, and every other character, " +
							"`[` included, matches itself, so `aws_instance.web[0]` names one instance.",
						ElementType: types.StringType,
						Optional:    true,
						Validators: []validator.List{
							stringListValidator{what: "address pattern", check: checkAddressPattern},
						},
					},
					"attributes": schema.MapAttribute{
						MarkdownDescription: "Attribute values that mark an object as production, for example " +
							"`{ environment = \"production\" }`. A key is an attribute name or a dotted path " +
							"into nested maps and objects, such as `\"tags.Environment\"`. The values after a " +
							"create count, the values before a delete, and both for an update or a " +
							"replacement, so moving an object out of production needs approval too. Strings " +
							"compare exactly; numbers and bools compare by their text (`\"true\"`, `\"3\"`). " +
							"An attribute whose planned value is unknown until apply counts as a match.",
						ElementType: types.StringType,
						Optional:    true,
						Validators: []validator.Map{
							stringMapValidator{what: "attribute path", checkKey: checkAttributePath},
						},
					},
					"approvers": schema.ListAttribute{
						MarkdownDescription: "The names that may approve a production write, for example " +
							"`[\"alice\", \"release-bot\"]`. When it is set, the approver a run names must " +
							"be one of them, compared exactly, or the run is refused with " +
							"`ENV_NOT_APPROVED`; when it is unset, any non-empty name approves. It applies to " +
							"every run that needs approval, `--env production` included. The wrapper records " +
							"the approver in the run's receipt.",
						ElementType: types.StringType,
						Optional:    true,
						Validators: []validator.List{
							stringListValidator{what: "approver", min: 1, check: checkApprover},
						},
					},
				},
				Validators: []validator.Object{
					anyAttributeValidator{names: []string{"types", "addresses", "attributes", "approvers"}},
				},
			},
			"parents": schema.MapAttribute{
				MarkdownDescription: "Resource types whose objects are entries of a shared parent object, with " +
					"the attributes whose values name that parent, for example `{ " +
					"vercel_project_environment_variable = [\"project_id\"], fixture_list_entry = " +
					"[\"list\"] }`. Before the engine writes, the sponson wrapper takes a lease on every " +
					"parent object whose entries the plan creates, updates, replaces or deletes, in one fixed " +
					"order, and holds them until the apply ends, so that scopes writing entries of one object " +
					"(a project's variable list, an allow-list of URLs) never lose each other's entries. A " +
					"parent is named `<provider type>|<attribute>=<value>[,...]`, attributes sorted by name, " +
					"for example `vercel|project_id=prj_123`; the `sponson_lease` ephemeral resource with that " +
					"name takes the same lease for a configuration applied without the wrapper. The wrapper " +
					"reads this policy from the plan, so every value must be known at plan time.",
				ElementType: parentsElemType,
				Optional:    true,
				Validators:  []validator.Map{parentsValidator{}},
			},
			"state_only": schema.ListAttribute{
				MarkdownDescription: "Resource types whose objects keep nothing outside the state, besides those " +
					"the sponson wrapper knows (`terraform_data`, `null_resource`, the `random_*`, `time_*` and " +
					"`tls_*` resources of the HashiCorp utility providers, `cloudinit_config`, `sponson_scope`), " +
					"for example `[\"acme_token\"]`. When a run stops while creating one, the next run settles " +
					"it as not created, without asking a person, and the next apply creates it again (its " +
					"provisioners run again). Name only types whose create calls nothing outside Terraform: " +
					"for any other, a stopped create may have left an object that nothing would own.",
				ElementType: types.StringType,
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

	config, plan, state, diags := scopePlanInputs(ctx, req)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	if config.Environment.IsNull() {
		plan.Environment = types.StringValue(rc.Environment)
	}
	resp.Diagnostics.Append(planStack(config, state, &plan, rc)...)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.Name = types.StringValue(rc.Scope)
	plan.Predecessor = stringOrNull(rc.Predecessor)
	plan.ID = types.StringUnknown()
	if !plan.Environment.IsUnknown() {
		plan.ID = types.StringValue(scopeID(plan.Environment.ValueString(), rc.Scope))
	}
	if state != nil {
		resp.RequiresReplace.Append(scopeReplacements(*state, plan)...)
	}

	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// Create writes the scope record to the store under the scope's lease, then
// records the scope in state. Under the wrapper the write is fenced by the
// run's own lease (docs/design.md §2.8 "Fenced write"): when the run lost its lease
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
		Stack:       stringOrNull(rc.Stack),
		Name:        types.StringValue(scope),
		Predecessor: stringOrNull(rc.Predecessor),
		Identity:    types.MapNull(types.ListType{ElemType: types.StringType}),
		URLOutput:   types.StringNull(),
		Production:  types.ObjectNull(productionAttrTypes),
		Parents:     types.MapNull(parentsElemType),
		After:       types.ListNull(types.StringType),
		StateOnly:   types.ListNull(types.StringType),
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

// requireKnown refuses a policy attribute that is not wholly known at plan
// time: the wrapper decides approval and parent leases from the plan, before
// the engine writes, and cannot decide on a value the apply computes.
func requireKnown(ctx context.Context, name string, v attr.Value) diag.Diagnostics {
	var diags diag.Diagnostics
	tv, err := v.ToTerraformValue(ctx)
	if err != nil {
		diags.AddAttributeError(path.Root(name), "Policy Not Readable",
			fmt.Sprintf("The sponson provider could not read the %s policy. This is a bug in the provider; report "+
				"it with the engine's output.\n\n%s", name, err))
		return diags
	}
	if !tv.IsFullyKnown() {
		diags.AddAttributeError(path.Root(name), "Policy Not Known At Plan Time",
			fmt.Sprintf("The %s policy of sponson_scope depends on a value that is known only after apply. The "+
				"sponson wrapper decides from the plan, before the engine writes anything, so the policy must be "+
				"known at plan time: use literals, variables and locals, not attributes of resources this "+
				"configuration creates.", name))
	}
	return diags
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

// scopePlanInputs reads what ModifyPlan decides from: the configuration,
// the plan and the prior state (nil on create). The flags that choose what
// the apply does (production, parents, state_only) must be known at plan
// time, so that the plan shows what will happen.
func scopePlanInputs(ctx context.Context, req resource.ModifyPlanRequest) (config, plan scopeResourceModel, state *scopeResourceModel, diags diag.Diagnostics) {
	diags.Append(req.Config.Get(ctx, &config)...)
	diags.Append(req.Plan.Get(ctx, &plan)...)
	if diags.HasError() {
		return config, plan, nil, diags
	}
	diags.Append(requireKnown(ctx, "production", config.Production)...)
	diags.Append(requireKnown(ctx, "parents", config.Parents)...)
	diags.Append(requireKnown(ctx, "state_only", config.StateOnly)...)
	if diags.HasError() || req.State.Raw.IsNull() {
		return config, plan, nil, diags
	}
	state = &scopeResourceModel{}
	diags.Append(req.State.Get(ctx, state)...)
	return config, plan, state, diags
}

// planStack plans the stack: the run's unless configured. A scope created
// before stacks keeps its null stack, so that the upgrade alone plans no
// change; a configured stack other than the run's is an error, as the store
// would keep one configuration under two names.
func planStack(config scopeResourceModel, state *scopeResourceModel, plan *scopeResourceModel, rc runctx.Context) diag.Diagnostics {
	var diags diag.Diagnostics
	switch {
	case config.Stack.IsNull() && state != nil && state.Stack.IsNull():
		plan.Stack = types.StringNull()
	case config.Stack.IsNull():
		plan.Stack = stringOrNull(rc.Stack)
	case !config.Stack.IsUnknown() && config.Stack.ValueString() != rc.Stack:
		diags.AddAttributeError(path.Root("stack"), "Stack Differs From The Run's",
			fmt.Sprintf("This configuration declares the stack %q, but the run is in stack %q (from --stack, "+
				"SPONSON_STACK or detection). Declare the run's stack, or remove the override, so that the "+
				"store keeps this configuration under one name.", config.Stack.ValueString(), rc.Stack))
	}
	return diags
}

// scopeReplacements are the attributes whose planned change from state
// replaces the scope: its name, a stack it had, and its environment. A
// configured environment change is already caught by the attribute's
// RequiresReplace; this catches the default following the run.
func scopeReplacements(state, plan scopeResourceModel) path.Paths {
	var paths path.Paths
	if !state.Name.Equal(plan.Name) {
		paths = append(paths, path.Root("name"))
	}
	if !state.Stack.IsNull() && !plan.Stack.IsUnknown() && !state.Stack.Equal(plan.Stack) {
		paths = append(paths, path.Root("stack"))
	}
	if !plan.Environment.IsUnknown() && !state.Environment.Equal(plan.Environment) {
		paths = append(paths, path.Root("environment"))
	}
	return paths
}
