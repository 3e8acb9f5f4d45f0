// Package provider is the sponson Terraform/OpenTofu provider: the scope a
// configuration runs in (sponson_scope) with its policy, the run context it
// was decided from (the sponson_context data source), and leases on shared
// objects (the sponson_lease ephemeral resource).
//
// The provider decides the run context once, in Configure. Under the sponson
// wrapper it does not detect anything itself: it reads the context the wrapper
// decided from runctx.EnvVar, so both always agree on the environment and the
// scope. Used on its own it detects the context the way the wrapper would.
//
// sponson_scope writes its record to the scope's store under the scope's
// lease, with the wrapper's own lease and store packages: under the wrapper
// it joins the run's lease (fenced by the run's token), on its own it takes
// the lease for each write (scope_store.go). The wrapper hands its lease
// over in SPONSON_RUN_STORE, SPONSON_RUN_HOLDER and SPONSON_RUN_TOKEN
// (lease.HandoverEnv, lease.FromHandover, lease.Joined), so the provider's
// writes are fenced exactly like the run's (docs/design.md §6.1).
//
// Under the wrapper the provider is served from the wrapper's own process
// (ServeInProcess, docs/design.md §7.2): debug serving on a private unix
// socket, named in TF_REATTACH_PROVIDERS under both registry hosts
// (ReattachHosts), so both engines treat it as unmanaged. It reads the
// wrapper's hand-over from the engine's environment and logs by TF_LOG as
// the engine does. The wrapper hands EngineEnv to internal/scoperun and
// internal/adopt as Options.ServeProvider, so neither imports this package.
package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

var (
	_ provider.Provider                       = (*sponsonProvider)(nil)
	_ provider.ProviderWithEphemeralResources = (*sponsonProvider)(nil)
)

// Address is the provider's registry address. The engine uses it to match a
// provider started in debug mode (TF_REATTACH_PROVIDERS) to configurations.
const Address = "registry.terraform.io/sponson/sponson"

// New returns a constructor of the provider for providerserver, which calls
// it once per provider instance the engine starts.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &sponsonProvider{version: version, resolver: processResolver{}, getenv: os.Getenv, openStore: storeurl.Open, now: time.Now}
	}
}

// Serve runs the provider as a plugin of the engine until the engine stops
// it. The provider binary and the sponson CLI (when the engine launches it as
// a plugin) both serve through it; debug runs it for a debugger and prints
// the TF_REATTACH_PROVIDERS value to hand to the engine.
func Serve(ctx context.Context, version string, debug bool) error {
	return providerserver.Serve(ctx, New(version), providerserver.ServeOpts{
		Address: Address,
		Debug:   debug,
	})
}

// sponsonProvider is the provider. Its dependencies are handed to the objects
// in Configure, and tests replace them the way the time provider injects its
// clock: the run context comes from resolver; getenv reads the lease
// hand-over and SPONSON_STORE; openStore opens stores; now stamps records;
// workDir holds the embedded default store. A nil dependency is the
// process's own, and workDir "" the working directory.
type sponsonProvider struct {
	version   string
	resolver  contextResolver
	getenv    func(string) string
	openStore storeOpener
	now       func() time.Time
	workDir   string
	// states reads other stacks' states for sponson_outputs; nil opens
	// the store of each read (outputs_data_source.go).
	states StateReader
}

// sponsonProviderModel is the provider block.
type sponsonProviderModel struct {
	Environment types.String `tfsdk:"environment"`
	Store       types.String `tfsdk:"store"`
}

func (p *sponsonProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "sponson"
	resp.Version = p.version
}

func (p *sponsonProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The sponson provider gives a configuration the coordinates of its run: an " +
			"environment (`preview` by default) and a scope (`pr-<n>`, `main` or `branch-<name>`). Under the " +
			"`sponson` wrapper it uses exactly the context the wrapper decided; used on its own it detects the " +
			"context from `SPONSON_CTX_*` variables, the CI host (GitHub Actions, GitLab CI, CircleCI, " +
			"Bitbucket) or the local git checkout. A configuration that uses no sponson resource or data " +
			"source works even where no context can be detected.",
		Attributes: map[string]schema.Attribute{
			"environment": schema.StringAttribute{
				MarkdownDescription: "The environment of the run, for example `preview` or `production`. Without " +
					"the wrapper it overrides the detected environment, which is `SPONSON_CTX_ENV` or `preview` " +
					"when that is unset; the environment is never inferred from a branch. Under the wrapper the " +
					"wrapper has already decided the environment, so this value must be left unset or equal it, " +
					"otherwise configuring the provider fails. A name uses letters, digits, `.`, `_` and `-`.",
				Optional:   true,
				Validators: []validator.String{validName("environment")},
			},
			"store": schema.StringAttribute{
				MarkdownDescription: "The store that `sponson_scope` writes its record to, and `sponson_lease` " +
					"takes its leases in, when the provider runs without the wrapper, as a URL in the form the wrapper's `--store` takes, for example " +
					"`file:///var/lib/sponson`. When it is unset the provider uses `SPONSON_STORE`, and when that is unset " +
					"too the embedded store in `.sponson/` of the working directory, which is the configuration " +
					"directory: the same store the wrapper uses by default. Each write takes the scope's lease and " +
					"releases it afterwards. Under the `sponson` wrapper this value is ignored: the provider writes " +
					"to the run's store under the run's lease, which the wrapper hands over, and `sponson_lease` " +
					"takes its leases in the run's store.",
				Optional: true,
			},
		},
	}
}

func (p *sponsonProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg sponsonProviderModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}

	data := &providerData{records: newScopeStore(p.getenv, p.openStore, p.now, p.workDir)}
	data.leases = newLeaseManager(data.records)
	data.states = p.states
	if cfg.Store.IsUnknown() {
		// Like an unknown environment, this fails only the writes.
		data.records.urlErr = errcode.New(errcode.Usage, "the provider's store attribute is not known until apply").
			WithHint("Set it to a literal URL or a variable, not to a value computed during the apply.")
	} else {
		data.records.url = cfg.Store.ValueString()
	}
	if cfg.Environment.IsUnknown() {
		// Failing here would break configurations that use no sponson
		// object; the objects that need the context report it instead.
		data.err = errors.New("the provider's environment attribute is not known until apply")
	} else {
		rc, handedOver, err := p.resolver.Resolve(cfg.Environment.ValueString())
		if err == nil && handedOver && !cfg.Environment.IsNull() && cfg.Environment.ValueString() != rc.Environment {
			resp.Diagnostics.AddAttributeError(path.Root("environment"), "Environment Differs From The Wrapper's",
				fmt.Sprintf("The provider block sets environment %q, but the sponson wrapper runs this "+
					"configuration in environment %q and the provider must use the wrapper's decision. Remove "+
					"the environment attribute, or run the wrapper with --env %s.",
					cfg.Environment.ValueString(), rc.Environment, cfg.Environment.ValueString()))
			return
		}
		data.runCtx, data.err = rc, err
		fields := map[string]any{
			"environment": rc.Environment,
			"scope":       rc.Scope,
			"source":      rc.Source,
			"handed_over": handedOver,
		}
		if err != nil {
			fields["error"] = err.Error()
		}
		tflog.Debug(ctx, "Resolved the run context", fields)
	}

	resp.DataSourceData = data
	resp.ResourceData = data
	resp.EphemeralResourceData = data
}

func (p *sponsonProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewScopeResource,
	}
}

func (p *sponsonProvider) EphemeralResources(_ context.Context) []func() ephemeral.EphemeralResource {
	return []func() ephemeral.EphemeralResource{
		NewLeaseEphemeralResource,
	}
}

func (p *sponsonProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewContextDataSource,
		NewOutputsDataSource,
	}
}

// contextResolver decides the run context. The provider calls it once per
// Configure.
type contextResolver interface {
	// Resolve returns the run context and whether the wrapper handed it over.
	// environment is the provider block's value, "" when unset.
	Resolve(environment string) (rc runctx.Context, handedOver bool, err error)
}

// processResolver resolves the context of the provider process: the one the
// wrapper handed over in runctx.EnvVar, else what detection finds in dir.
type processResolver struct {
	// dir is where local git is asked; "" means the working directory, which is
	// the engine's own (the configuration directory) when it launches us.
	dir string
}

func (r processResolver) Resolve(environment string) (runctx.Context, bool, error) {
	rc, ok, err := runctx.FromEnv(os.Getenv)
	if ok || err != nil {
		// The wrapper decided; use its context exactly, and never fall back to
		// detection when it is malformed, which could pick another scope.
		return rc, true, err
	}
	dir := r.dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return runctx.Context{}, false, errcode.Wrap(errcode.CtxNull, err, "cannot read the working directory")
		}
	}
	src := runctx.ProcessSources(dir)
	rc, err = runctx.Detect(runctx.Flags{Environment: environment}, src)
	if err != nil {
		return rc, false, err
	}
	// Without the wrapper the stack is named the way the wrapper names it
	// (internal/stack), so a run with and one without it share the keys.
	declared, err := stack.Declared(dir)
	if err != nil {
		return rc, false, err
	}
	st, err := stack.Detect(dir, "", declared, stack.Sources{Getenv: os.Getenv, Git: src.Git})
	rc.Stack = st.Name
	return rc, false, err
}

// providerData is what Configure hands to resources, data sources and
// ephemeral resources: the run context decided once for this provider
// instance, or why there is none, where sponson_scope keeps its record, and
// how sponson_lease takes its leases (in the same store).
type providerData struct {
	runCtx  runctx.Context
	err     error
	records *scopeStore
	leases  *leaseManager
	// states is the run's store for sponson_outputs, nil without one.
	states StateReader
}

// runContext returns the run context, or a diagnostic saying why there is
// none; what names the object that needs it.
func (d *providerData) runContext(what string) (runctx.Context, diag.Diagnostics) {
	var diags diag.Diagnostics
	if d == nil {
		diags.AddError("Provider Not Configured",
			fmt.Sprintf("The sponson provider was not configured before %s needed the run context. This is a bug "+
				"in the provider or the engine; report it with the engine's output.", what))
		return runctx.Context{}, diags
	}
	if d.err != nil {
		hint := "Run it under the sponson wrapper, or set SPONSON_CTX_BRANCH or SPONSON_CTX_PR, or run it in a " +
			"git checkout or a supported CI host (GitHub Actions, GitLab CI, CircleCI, Bitbucket)."
		var ce *errcode.Error
		if errors.As(d.err, &ce) && ce.Hint != "" {
			hint = ce.Hint
		}
		diags.AddError("Run Context Not Decided",
			fmt.Sprintf("The sponson provider could not decide the environment and scope of this run, which %s "+
				"needs. %s Under the sponson wrapper the context is handed over in %s; on its own the provider "+
				"detects it from SPONSON_CTX_* variables, the CI host or the local git checkout.\n\n%s",
				what, hint, runctx.EnvVar, d.err))
		return runctx.Context{}, diags
	}
	return d.runCtx, diags
}

// providerDataFrom is the Configure step shared by every resource and data
// source. A nil result with no error means the provider is not configured
// yet, which happens while the engine validates a configuration.
func providerDataFrom(v any, diags *diag.Diagnostics) *providerData {
	if v == nil {
		return nil
	}
	data, ok := v.(*providerData)
	if !ok {
		diags.AddError("Unexpected Provider Data Type",
			fmt.Sprintf("Expected *provider.providerData, got %T. This is a bug in the sponson provider; report it "+
				"with the engine's output.", v))
		return nil
	}
	return data
}

// stringOrNull maps "" (Go's "none") to null, which configurations test with
// `== null`.
func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}
