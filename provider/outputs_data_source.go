package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackoutputs"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

var _ datasource.DataSourceWithConfigure = (*outputsDataSource)(nil)

// mainScope is the scope of the default branch, which sponson_outputs falls
// back to.
const mainScope = "main"

// StateReader reads a scope's state from a store: all sponson_outputs needs
// of one.
type StateReader = store.StateReader

// NewOutputsDataSource returns the sponson_outputs data source.
func NewOutputsDataSource() datasource.DataSource {
	return &outputsDataSource{}
}

// outputsDataSource reads the root module outputs of another stack of the
// same environment, from the store (docs/design.md §6.4 "sponson_outputs"): the
// stack's state in the run's scope, or in main when the stack has none
// there, so that a pull request that does not touch the upstream stack
// reads main's.
type outputsDataSource struct {
	data *providerData
}

// outputsDataSourceModel is the data source's state.
type outputsDataSourceModel struct {
	ID              types.String  `tfsdk:"id"`
	Stack           types.String  `tfsdk:"stack"`
	Scope           types.String  `tfsdk:"scope"`
	StackName       types.String  `tfsdk:"stack_name"`
	ReadScope       types.String  `tfsdk:"read_scope"`
	Serial          types.Int64   `tfsdk:"serial"`
	Values          types.Dynamic `tfsdk:"values"`
	SensitiveValues types.Dynamic `tfsdk:"sensitive_values"`
	Planned         types.Bool    `tfsdk:"planned"`
	Provisional     types.List    `tfsdk:"provisional"`
	PlannedRun      types.String  `tfsdk:"planned_run"`
}

func (d *outputsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_outputs"
}

func (d *outputsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The root module outputs of another stack of this repository, in the same " +
			"environment, read from the store, for example `data.sponson_outputs.network.values.vpc_id`. " +
			"It reads the stack's state in the run's scope, and in `main` when the stack has no state in " +
			"that scope (it was never applied there, or was destroyed), so that a pull request that does " +
			"not change the upstream stack reads main's. Runs of several stacks (`sponson plan --all`, " +
			"`apply --all`) run the stack named here first, and in `plan --all` this gives the values the " +
			"stack's own plan will give (`planned`, `provisional`). The stacks must share one store (`--store`): " +
			"with the default store each directory keeps its own `.sponson/`. Reading fails when the " +
			"stack has no state in either scope.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The stack's name and the scope read, joined by a slash and a colon, " +
					"for example `github.com/acme/infra//stacks/network:main`.",
				Computed: true,
			},
			"stack": schema.StringAttribute{
				MarkdownDescription: "The stack to read: its directory relative to the repository root, for " +
					"example `stacks/network`, named the way runs in that directory name it (its `stack` " +
					"attribute, else the repository and the directory); or a full stack name such as " +
					"`github.com/acme/infra//stacks/network`, which is how a stack of another repository is " +
					"named. The wrapper reads it from the `.tf` files to order the stacks before any engine " +
					"runs, so it must be a literal string.",
				Required:   true,
				Validators: []validator.String{stackReferenceValidator{}},
			},
			"scope": schema.StringAttribute{
				MarkdownDescription: "The scope to read, overriding the run's own; then there is no fallback " +
					"to `main`. It defaults to the run's scope.",
				Optional:   true,
				Validators: []validator.String{validName("scope")},
			},
			"stack_name": schema.StringAttribute{
				MarkdownDescription: "The full name of the stack read.",
				Computed:            true,
			},
			"read_scope": schema.StringAttribute{
				MarkdownDescription: "The scope whose state was read: the run's (or `scope`), or `main` after " +
					"the fallback.",
				Computed: true,
			},
			"serial": schema.Int64Attribute{
				MarkdownDescription: "The serial of the state read: it grows with every write of that state. " +
					"With `planned`, that of the stack's applied state in this scope, 0 when it has none.",
				Computed: true,
			},
			"planned": schema.BoolAttribute{
				MarkdownDescription: "True when the values are those the stack's own plan in the same " +
					"`sponson plan --all` (or `--changed`) will give, rather than its applied state: a plan of " +
					"many stacks plans the upstream first and hands its planned outputs on, so this plan shows " +
					"the change the upstream's brings. False otherwise, and always in an apply, which reads " +
					"the state the upstream's apply left.",
				Computed: true,
			},
			"provisional": schema.ListAttribute{
				MarkdownDescription: "With `planned`, the outputs whose value the upstream's plan knows only " +
					"after its apply. Their values here are the upstream's applied ones (null when it has " +
					"none), so this plan is provisional: the apply plans again with the real values. Empty " +
					"otherwise.",
				ElementType: types.StringType,
				Computed:    true,
			},
			"planned_run": schema.StringAttribute{
				MarkdownDescription: "With `planned`, the run id of the upstream's plan whose outputs were " +
					"read. A saved plan of many stacks (`sponson plan --all -out DIR`) applies this stack's " +
					"plan after the upstream's apply of exactly that plan changed the state read. Empty otherwise.",
				Computed: true,
			},
			"values": schema.DynamicAttribute{
				MarkdownDescription: "The stack's outputs that are not sensitive, as an object of their " +
					"values by name. Referring to an output the stack does not have fails at plan time.",
				Computed: true,
			},
			"sensitive_values": schema.DynamicAttribute{
				MarkdownDescription: "The stack's sensitive outputs, as an object of their values by name; " +
					"the attribute is sensitive, so the engine redacts it and everything computed from it.",
				Computed:  true,
				Sensitive: true,
			},
		},
	}
}

func (d *outputsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *outputsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var data outputsDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	rc, diags := d.data.runContext("the sponson_outputs data source")
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ref, diags := d.data.resolveStack(data.Stack.ValueString())
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	states, release, diags := d.data.stateReader(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	defer release()
	key := store.Key{Stack: ref.Name, Environment: rc.Environment, Scope: rc.Scope}
	fallback := data.Scope.IsNull()
	if !fallback {
		key.Scope = data.Scope.ValueString()
	}
	planned, isPlanned, err := d.data.plannedOutputs(key, fallback)
	if err != nil {
		resp.Diagnostics.AddError("Planned Outputs Not Read",
			fmt.Sprintf("The sponson provider could not read the planned outputs of %s that this run of many "+
				"stacks handed over. This is a bug in sponson; report it with the command line.\n\n%s", key, err))
		return
	}
	st, key, found, tried, err := readWithFallback(ctx, states, key, fallback)
	if err == nil && isPlanned {
		st = withPlanned(st, key.Scope, planned)
		key.Scope, found = planned.Scope, true
	}
	if err != nil {
		resp.Diagnostics.Append(storeErrorDiag("Stack Outputs Not Read",
			fmt.Sprintf("The sponson provider could not read the state of %s.", key), err))
		return
	}
	if !found {
		resp.Diagnostics.AddAttributeError(path.Root("stack"), "Stack Has No State",
			fmt.Sprintf("The stack %s has no state in environment %s, scope %s, so its outputs cannot be read. "+
				"Apply that stack first (sponson apply --all runs it before this one), or check the name. "+
				"The stacks must share one store: with the default store each directory keeps its own "+
				".sponson/, so pass the same --store (or SPONSON_STORE) to every stack.",
				ref.Name, rc.Environment, strings.Join(tried, " nor in ")))
		return
	}
	tflog.Debug(ctx, "Read the outputs of another stack", map[string]any{
		"stack": ref.Name, "scope": key.Scope, "serial": st.Serial, "outputs": len(st.Outputs),
	})

	values, secrets, err := outputValues(ctx, st.Outputs)
	if err != nil {
		resp.Diagnostics.AddError("Stack Outputs Not Decoded",
			fmt.Sprintf("The outputs of %s could not be decoded. This is a bug in the sponson provider, or the "+
				"state was written by an engine it does not know; report it with the engine's version.\n\n%s", key, err))
		return
	}
	data.ID = types.StringValue(ref.Name + ":" + key.Scope)
	data.StackName = types.StringValue(ref.Name)
	data.ReadScope = types.StringValue(key.Scope)
	data.Serial = types.Int64Value(st.Serial)
	data.Values = values
	data.SensitiveValues = secrets
	data.Planned = types.BoolValue(isPlanned)
	data.Provisional = stringList(planned.Unknown)
	data.PlannedRun = types.StringValue(planned.RunID)
	resp.Diagnostics.Append(resp.State.Set(ctx, &data)...)
}

// resolveStack resolves the stack a sponson_outputs names from the
// configuration directory, with stack.Resolve as the wrapper resolves a
// stack reference, so that both mean one stack by one name.
func (d *providerData) resolveStack(name string) (stack.Reference, diag.Diagnostics) {
	var diags diag.Diagnostics
	dir, err := d.records.dir()
	if err != nil {
		diags.Append(storeErrorDiag("Configuration Directory Not Read", "The sponson provider could not read its working directory.", err))
		return stack.Reference{}, diags
	}
	ref, err := stack.Resolve(dir, name, stack.Sources{Getenv: d.records.getenv, Git: runctx.ProcessSources(dir).Git})
	if err != nil {
		diags.AddAttributeError(path.Root("stack"), "Invalid Stack",
			fmt.Sprintf("The stack %q names no stack: write the stack's directory relative to the repository "+
				"root, for example stacks/network, or its full name.\n\n%s", name, err))
	}
	return ref, diags
}

// readWithFallback reads the outputs at key. Where no scope is configured
// (fallback) and the run's own scope has no state yet, it reads main's:
// a new scope's stacks read what main applied until they apply their own.
// It returns the key it read last and the scopes it tried, which the
// "no state" error names.
func readWithFallback(ctx context.Context, states StateReader, key store.Key, fallback bool) (stateOutputs, store.Key, bool, []string, error) {
	st, found, err := readOutputs(ctx, states, key)
	tried := []string{key.Scope}
	if err == nil && !found && fallback && key.Scope != mainScope {
		key.Scope = mainScope
		tried = append(tried, key.Scope)
		st, found, err = readOutputs(ctx, states, key)
	}
	return st, key, found, tried, err
}

// withPlanned is st, the applied outputs read from scope readScope, under
// the upstream's plan: the plan says what its outputs will be; those it
// knows only after its apply keep their applied values (null where it has
// none). Applied values of another scope than the plan's (main's, read as
// the fallback) have no serial in common with it: the serial is 0.
func withPlanned(st stateOutputs, readScope string, planned stackoutputs.Planned) stateOutputs {
	if readScope != planned.Scope {
		st.Serial = 0
	}
	applied := st.Outputs
	st.Outputs = map[string]stateOutput{}
	for name, o := range planned.Outputs {
		st.Outputs[name] = stateOutput{Value: o.Value, Type: o.Type, Sensitive: o.Sensitive}
	}
	for _, name := range planned.Unknown {
		if o, ok := applied[name]; ok {
			st.Outputs[name] = o
		} else {
			st.Outputs[name] = stateOutput{Value: json.RawMessage("null"), Type: json.RawMessage(`"dynamic"`)}
		}
	}
	return st
}

// stringList is names as a list value, empty rather than null when there
// are none.
func stringList(names []string) types.List {
	elems := []attr.Value{}
	for _, name := range names {
		elems = append(elems, types.StringValue(name))
	}
	return types.ListValueMust(types.StringType, elems)
}

// stateReader returns the run's store, or else opens the store this
// provider writes its records to (scopeStore.source); release closes what
// was opened.
func (d *providerData) stateReader(ctx context.Context) (StateReader, func(), diag.Diagnostics) {
	var diags diag.Diagnostics
	if d.states != nil {
		return d.states, func() {}, diags
	}
	s := d.records
	raw, source, err := s.source()
	if url := strings.TrimSpace(s.getenv(lease.EnvStore)); url != "" {
		raw, source, err = url, "the run's hand-over", nil
	}
	var dir string
	if err == nil {
		dir, err = s.dir()
	}
	if err != nil {
		diags.Append(storeErrorDiag("Store Not Opened",
			"The sponson provider could not decide which store to read the other stack's outputs from.", err))
		return nil, nil, diags
	}
	st, _, err := s.open(raw, dir)
	if err != nil {
		diags.Append(storeErrorDiag("Store Not Opened",
			fmt.Sprintf("The sponson provider could not open the store %s (from %s) to read another stack's outputs.",
				describeStore(raw, dir), source), err))
		return nil, nil, diags
	}
	tflog.Debug(ctx, "Opened the store for sponson_outputs", map[string]any{"store_from": source})
	return st, func() { st.Close() }, diags
}

// plannedOutputs returns the planned outputs of key's stack that the run
// of many stacks this plan belongs to handed over (stackoutputs), if any.
// Only a read of the run's own scope takes them: the run planned that one.
func (d *providerData) plannedOutputs(key store.Key, ownScope bool) (stackoutputs.Planned, bool, error) {
	dir := d.records.getenv(stackoutputs.EnvVar)
	if dir == "" || !ownScope {
		return stackoutputs.Planned{}, false, nil
	}
	return stackoutputs.Read(dir, key)
}

// stateOutputs is what sponson_outputs takes from a state document.
type stateOutputs = tfstate.Outputs

// stateOutput is one root module output of a state.
type stateOutput = tfstate.Output

// readOutputs reads the outputs of key's state; found is false for a scope
// with no state, or an empty one (never applied, or destroyed).
func readOutputs(ctx context.Context, states StateReader, key store.Key) (stateOutputs, bool, error) {
	b, err := states.ReadState(ctx, key)
	if err != nil {
		return stateOutputs{}, false, err
	}
	st, err := tfstate.ReadOutputs(b)
	if err != nil {
		return st, false, fmt.Errorf("the state of %s: %w", key, err)
	}
	return st, st.Holds, nil
}

// outputValues turns outputs into two objects, the values that are not
// sensitive and those that are, each as a dynamic value of the types the
// state records.
func outputValues(ctx context.Context, outputs map[string]stateOutput) (values, secrets types.Dynamic, err error) {
	plain, hidden := map[string]stateOutput{}, map[string]stateOutput{}
	for name, o := range outputs {
		if o.Sensitive {
			hidden[name] = o
		} else {
			plain[name] = o
		}
	}
	if values, err = dynamicObject(ctx, plain); err != nil {
		return values, secrets, err
	}
	secrets, err = dynamicObject(ctx, hidden)
	return values, secrets, err
}

// dynamicObject is an object value with one attribute per output.
func dynamicObject(ctx context.Context, outputs map[string]stateOutput) (types.Dynamic, error) {
	names := make([]string, 0, len(outputs))
	for n := range outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	attrTypes := map[string]tftypes.Type{}
	attrs := map[string]tftypes.Value{}
	for _, n := range names {
		o := outputs[n]
		typ, err := tftypes.ParseJSONType(o.Type) //nolint:staticcheck // the state's own type notation
		if err != nil {
			return types.DynamicNull(), fmt.Errorf("output %q: type %s: %w", n, o.Type, err)
		}
		v, err := tftypes.ValueFromJSONWithOpts(o.Value, typ, tftypes.ValueFromJSONOpts{})
		if err != nil {
			return types.DynamicNull(), fmt.Errorf("output %q: %w", n, err)
		}
		attrTypes[n], attrs[n] = typ, v
	}
	obj := tftypes.NewValue(tftypes.Object{AttributeTypes: attrTypes}, attrs)
	v, err := types.DynamicType.ValueFromTerraform(ctx, obj)
	if err != nil {
		return types.DynamicNull(), err
	}
	dv, ok := v.(types.Dynamic)
	if !ok {
		return types.DynamicNull(), fmt.Errorf("unexpected value %T", v)
	}
	return dv, nil
}

// stackReferenceValidator checks the form of a stack reference; whether it
// names a stack is known only when it is read.
type stackReferenceValidator struct{}

func (stackReferenceValidator) Description(context.Context) string {
	return "a stack directory such as stacks/network, or a full stack name"
}

func (v stackReferenceValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (stackReferenceValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if msg := checkStackReference(req.ConfigValue.ValueString()); msg != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Stack",
			fmt.Sprintf("The stack %q %s.", req.ConfigValue.ValueString(), msg))
	}
}
