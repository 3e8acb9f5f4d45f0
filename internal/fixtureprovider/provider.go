// Package fixtureprovider is a small Terraform/OpenTofu provider used only by
// the tests of sponson: named objects kept as files in a directory, and a
// list-valued parent object that entries are added to. Several scopes (each
// with its own state) applying configurations of this provider against one
// directory can collide on an object's name and share a parent list, which is
// exactly what sponson must keep apart: a scope must never create, update or
// delete an object another scope owns, and concurrent writers to one shared
// parent lose entries unless they hold a lease.
//
// The provider is deliberately a faithful, dumb model of a remote API: it
// refuses to create an object whose name is taken (as an API answers 409),
// but updates and deletes by name whoever created the object, and
// fixture_list_entry rewrites the whole parent list with no locking between
// engine runs (list_entry_resource.go). Guarding against that is sponson's
// job, and the tests check it by looking at the files.
//
// Layout of the directory (provider attribute `dir`, or FIXTURE_DIR):
//
//	objects/<name>.json   one fixture_object: {"id": ..., "name": ..., "value": ...}
//	lists/<list>.json     one parent list: a JSON array of strings
//	files/<filename>      one fixture_file: its content
//
// Four resources mimic the ids of HashiCorp's utility providers, which are
// not all identities (issue 24): fixture_file's is the SHA-1 of its content
// (local_file), fixture_timestamp's the second it stands for (time_static),
// fixture_pet's a generated name with a prefix (random_pet), and
// fixture_token's a random number replaced with an unknown one when its
// triggers change (null_resource). The last three exist only in state.
//
// Configurations name it `sponson/fixture`; WriteCLIConfig makes the engine
// run a binary from Build for that address without any registry access.
package fixtureprovider

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

var _ provider.Provider = (*fixtureProvider)(nil)

// Address is the provider's address under OpenTofu, which is what a
// configuration's `source = "sponson/fixture"` means there. The binary
// serves under it.
const Address = "registry.opentofu.org/sponson/fixture"

// TypeName is the provider's type name: resources are fixture_<kind>.
const TypeName = "fixture"

// EnvDir is the environment variable holding the directory of the objects
// when the provider block does not set `dir`.
const EnvDir = "FIXTURE_DIR"

// EnvListDelay is the environment variable holding how long
// fixture_list_entry waits between reading and writing back its parent list,
// as a Go duration such as "300ms" (default 0). Tests set it to widen the
// window in which concurrent writers lose each other's entries.
const EnvListDelay = "FIXTURE_LIST_DELAY"

// EnvCreateDelay names the variable with the time a fixture_object create
// takes (a Go duration, default none).
const EnvCreateDelay = "FIXTURE_CREATE_DELAY"

// EnvCreateIgnoresStop names the variable that, set to 1, makes a
// fixture_object create ignore the engine's stop (its first interrupt), as
// providers whose API calls take no context do: only the engine's second
// interrupt ends it.
const EnvCreateIgnoresStop = "FIXTURE_CREATE_IGNORES_STOP"

// New returns a constructor of the provider for providerserver, which calls
// it once per provider instance the engine starts.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &fixtureProvider{version: version, getenv: os.Getenv}
	}
}

// fixtureProvider is the provider. getenv reads FIXTURE_DIR and
// FIXTURE_LIST_DELAY; tests replace it, and nil means os.Getenv.
type fixtureProvider struct {
	version string
	getenv  func(string) string
}

// fixtureProviderModel is the provider block.
type fixtureProviderModel struct {
	Dir types.String `tfsdk:"dir"`
}

func (p *fixtureProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = TypeName
	resp.Version = p.version
}

func (p *fixtureProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A fixture provider for sponson's tests: named objects kept as JSON files in a " +
			"directory, and parent lists that entries are added to without any locking, so that configurations " +
			"applied from several scopes can collide on a name and share a parent. The list delay between " +
			"reading and writing a parent list comes from `FIXTURE_LIST_DELAY` (a Go duration, default `0s`).",
		Attributes: map[string]schema.Attribute{
			"dir": schema.StringAttribute{
				MarkdownDescription: "The directory holding the objects (`objects/<name>.json`) and the parent " +
					"lists (`lists/<list>.json`); it is created when missing. A relative path is relative to the " +
					"configuration directory. When it is unset the provider uses `FIXTURE_DIR`; when that is " +
					"unset too, every resource and data source of the provider fails, but configuring the " +
					"provider does not.",
				Optional: true,
			},
		},
	}
}

func (p *fixtureProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg fixtureProviderModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}

	data := newProviderData(cfg.Dir, p.env)
	tflog.Debug(ctx, "Configured the fixture provider", map[string]any{
		"dir":        data.dir,
		"list_delay": data.listDelay.String(),
	})
	resp.DataSourceData = data
	resp.ResourceData = data
}

func (p *fixtureProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewObjectResource,
		NewListEntryResource,
		NewFileResource,
		NewTimestampResource,
		NewPetResource,
		NewTokenResource,
	}
}

func (p *fixtureProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewObjectDataSource,
	}
}

// env reads an environment variable through getenv.
func (p *fixtureProvider) env(name string) string {
	if p.getenv == nil {
		return os.Getenv(name)
	}
	return p.getenv(name)
}

// providerData is what Configure hands to resources and data sources: the
// directory, or why there is none, and the list delay, or why it is invalid.
// Problems are reported by the objects that need the value, so that a
// configuration using none of them still works.
type providerData struct {
	dir       string
	dirErr    string
	listDelay time.Duration
	delayErr  error
	// createDelay is how long a fixture_object create takes: half of it
	// before the object's file appears, half after, so a crash test can
	// kill a run while objects exist that the engine has not reported.
	createDelay time.Duration
	// ignoreStop makes a create wait out its delay whatever the engine
	// says (EnvCreateIgnoresStop).
	ignoreStop bool

	// listMu serialises the list rewrites of this provider instance, that is
	// of one engine run: the engine applies resources in parallel, and a
	// configuration adding several entries to one list must not lose its
	// own. Runs of different scopes are different processes and share
	// nothing, so between them the lost update stays (listEntryResource).
	listMu sync.Mutex
}

// newProviderData decides the directory from the provider block's dir, else
// FIXTURE_DIR, and the list delay from FIXTURE_LIST_DELAY.
func newProviderData(dir types.String, getenv func(string) string) *providerData {
	data := &providerData{}
	switch {
	case dir.IsUnknown():
		data.dirErr = "The provider's dir attribute is not known until apply. Set it to a literal path or a " +
			"variable, not to a value computed during the apply."
	case !dir.IsNull() && dir.ValueString() != "":
		data.dir = dir.ValueString()
	case getenv(EnvDir) != "":
		data.dir = getenv(EnvDir)
	default:
		data.dirErr = fmt.Sprintf("Neither the provider's dir attribute nor %s is set. Set dir in the provider "+
			"block, or export %s with the directory holding the fixture objects.", EnvDir, EnvDir)
	}
	data.listDelay, data.delayErr = parseDelay(getenv(EnvListDelay))
	// An invalid create delay is no delay: it only paces crash tests.
	data.createDelay, _ = parseDelay(getenv(EnvCreateDelay))
	data.ignoreStop = getenv(EnvCreateIgnoresStop) == "1"
	return data
}

// parseDelay reads a non-negative Go duration; empty is none.
func parseDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, err
	case d < 0:
		return 0, fmt.Errorf("negative duration %s", d)
	}
	return d, nil
}

// root returns the directory of the objects, or a diagnostic saying why there
// is none; what names the object that needs it.
func (d *providerData) root(what string) (string, diag.Diagnostics) {
	var diags diag.Diagnostics
	if d == nil {
		diags.AddError("Provider Not Configured",
			fmt.Sprintf("The fixture provider was not configured before %s needed its directory. This is a bug in "+
				"the provider or the engine; report it with the engine's output.", what))
		return "", diags
	}
	if d.dirErr != "" {
		diags.AddError("Fixture Directory Not Set",
			fmt.Sprintf("%s needs the directory holding the fixture objects, but the fixture provider has none. %s",
				what, d.dirErr))
		return "", diags
	}
	return d.dir, diags
}

// delay returns the list delay, or a diagnostic when FIXTURE_LIST_DELAY is
// invalid; what names the object that needs it.
func (d *providerData) delay(what string) (time.Duration, diag.Diagnostics) {
	var diags diag.Diagnostics
	if d == nil {
		return 0, diags
	}
	if d.delayErr != nil {
		diags.AddError("Invalid List Delay",
			fmt.Sprintf("%s waits %s between reading and writing its list, but that variable is not a "+
				"non-negative Go duration. Set it to a value such as 300ms, or unset it for no delay.\n\n%s",
				what, EnvListDelay, d.delayErr))
		return 0, diags
	}
	return d.listDelay, diags
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
			fmt.Sprintf("Expected *fixtureprovider.providerData, got %T. This is a bug in the fixture provider; "+
				"report it with the engine's output.", v))
		return nil
	}
	return data
}

// stringOrNull maps a missing value to null.
func stringOrNull(s *string) types.String {
	if s == nil {
		return types.StringNull()
	}
	return types.StringValue(*s)
}

// stringPointer maps null to a missing value.
func stringPointer(v types.String) *string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	s := v.ValueString()
	return &s
}
