package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ datasource.DataSourceWithConfigure = (*contextDataSource)(nil)

// NewContextDataSource returns the sponson_context data source.
func NewContextDataSource() datasource.DataSource {
	return &contextDataSource{}
}

// contextDataSource exposes the run context so that configurations name
// things per scope, e.g. "app-${data.sponson_context.this.scope}".
type contextDataSource struct {
	data *providerData
}

// contextDataSourceModel is the data source's state.
type contextDataSourceModel struct {
	ID          types.String `tfsdk:"id"`
	Environment types.String `tfsdk:"environment"`
	Scope       types.String `tfsdk:"scope"`
	Branch      types.String `tfsdk:"branch"`
	PullRequest types.Int64  `tfsdk:"pull_request"`
	Commit      types.String `tfsdk:"commit"`
	ShortCommit types.String `tfsdk:"short_commit"`
	Predecessor types.String `tfsdk:"predecessor"`
}

func (d *contextDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_context"
}

func (d *contextDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The context of the current run: its environment and scope, and the branch, pull " +
			"request and commit they were decided from. Use it to name things per scope, for example " +
			"`\"app-${data.sponson_context.this.scope}\"`. Under the `sponson` wrapper it is exactly the context " +
			"the wrapper decided. Reading it fails when no context can be decided.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The environment and the scope joined by a slash, for example `preview/pr-42`.",
				Computed:            true,
			},
			"environment": schema.StringAttribute{
				MarkdownDescription: "The environment of the run, for example `preview` (the default) or " +
					"`production`.",
				Computed: true,
			},
			"scope": schema.StringAttribute{
				MarkdownDescription: "The scope of the run: `pr-<n>` inside a pull request, `main` on `main`, " +
					"`master` or the repository's default branch, and `branch-<name>` otherwise, where every run of " +
					"characters outside letters, digits, `.`, `_` and `-` becomes `-`.",
				Computed: true,
			},
			"branch": schema.StringAttribute{
				MarkdownDescription: "The branch the run was decided from (the head branch of a pull request). It " +
					"is null when no branch is known, for example when the scope was given explicitly.",
				Computed: true,
			},
			"pull_request": schema.Int64Attribute{
				MarkdownDescription: "The number of the pull request the run belongs to. It is null when the run " +
					"is not in a pull request.",
				Computed: true,
			},
			"commit": schema.StringAttribute{
				MarkdownDescription: "The full commit hash of the run. It is null when no commit is known.",
				Computed:            true,
			},
			"short_commit": schema.StringAttribute{
				MarkdownDescription: "The abbreviated commit hash of the run, for labels and names. It is null " +
					"when no commit is known.",
				Computed: true,
			},
			"predecessor": schema.StringAttribute{
				MarkdownDescription: "The scope this scope inherits from: `branch-<head>` for a `pr-<n>` scope " +
					"whose head branch is known. It is null when there is none.",
				Computed: true,
			},
		},
	}
}

func (d *contextDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *contextDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var data contextDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	rc, diags := d.data.runContext("the sponson_context data source")
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	data.ID = types.StringValue(scopeID(rc.Environment, rc.Scope))
	data.Environment = types.StringValue(rc.Environment)
	data.Scope = types.StringValue(rc.Scope)
	data.Branch = stringOrNull(rc.Branch)
	data.PullRequest = types.Int64Null()
	if rc.PullRequest > 0 {
		data.PullRequest = types.Int64Value(int64(rc.PullRequest))
	}
	data.Commit = stringOrNull(rc.Commit)
	data.ShortCommit = stringOrNull(rc.ShortCommit())
	data.Predecessor = stringOrNull(rc.Predecessor)

	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}
