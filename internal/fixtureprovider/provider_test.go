package fixtureprovider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// testAccProtoV6ProviderFactories serves the provider in the test process;
// the engine reattaches to it.
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	TypeName: providerserver.NewProtocol6WithError(New("test")()),
}

// testAccPreCheck stops early, with the fix, where the engine would fail in a
// less readable way.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	engine := filepath.Base(os.Getenv("TF_ACC_TERRAFORM_PATH"))
	if strings.Contains(engine, "tofu") && os.Getenv("TF_ACC_PROVIDER_HOST") == "" && os.Getenv("TF_ACC_PROVIDER_NAMESPACE") == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is OpenTofu: set TF_ACC_PROVIDER_HOST=registry.opentofu.org, " +
			"or init fails on the provider address")
	}
}

// testAccProviderBlock is a provider block using dir, so that tests need no
// environment variable and can run in parallel.
func testAccProviderBlock(dir string) string {
	return fmt.Sprintf(`
provider "fixture" {
  dir = %[1]q
}
`, dir)
}

func TestNewProviderData(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		dir           types.String
		env           map[string]string
		wantDir       string
		wantDelay     time.Duration
		wantDiag      string // summary of root's error, "" for none
		wantDelayDiag bool
	}{
		"attribute":                  {dir: types.StringValue("/a"), env: map[string]string{EnvDir: "/b"}, wantDir: "/a"},
		"environment":                {dir: types.StringNull(), env: map[string]string{EnvDir: "/b"}, wantDir: "/b"},
		"empty attribute":            {dir: types.StringValue(""), env: map[string]string{EnvDir: "/b"}, wantDir: "/b"},
		"neither":                    {dir: types.StringNull(), wantDiag: "Fixture Directory Not Set"},
		"unknown":                    {dir: types.StringUnknown(), env: map[string]string{EnvDir: "/b"}, wantDiag: "Fixture Directory Not Set"},
		"delay":                      {dir: types.StringValue("/a"), env: map[string]string{EnvListDelay: "300ms"}, wantDir: "/a", wantDelay: 300 * time.Millisecond},
		"invalid delay":              {dir: types.StringValue("/a"), env: map[string]string{EnvListDelay: "soon"}, wantDir: "/a", wantDelayDiag: true},
		"negative delay":             {dir: types.StringValue("/a"), env: map[string]string{EnvListDelay: "-1s"}, wantDir: "/a", wantDelayDiag: true},
		"no directory, delay usable": {dir: types.StringNull(), env: map[string]string{EnvListDelay: "1s"}, wantDiag: "Fixture Directory Not Set", wantDelay: time.Second},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := newProviderData(tt.dir, func(k string) string { return tt.env[k] })

			dir, diags := data.root("The test")
			if got := summaries(diags.Errors()); tt.wantDiag != "" || got != "" {
				if got != tt.wantDiag {
					t.Fatalf("root diagnostics = %q, want %q", got, tt.wantDiag)
				}
			}
			if dir != tt.wantDir {
				t.Errorf("root() = %q, want %q", dir, tt.wantDir)
			}
			delay, diags := data.delay("The test")
			if diags.HasError() != tt.wantDelayDiag {
				t.Errorf("delay diagnostics = %v, want an error %v", diags, tt.wantDelayDiag)
			}
			if delay != tt.wantDelay {
				t.Errorf("delay() = %v, want %v", delay, tt.wantDelay)
			}
		})
	}
}

func TestProviderDataNotConfigured(t *testing.T) {
	t.Parallel()
	var data *providerData

	if _, diags := data.root("The test"); summaries(diags.Errors()) != "Provider Not Configured" {
		t.Errorf("root() diagnostics = %v, want Provider Not Configured", diags)
	}
	if _, diags := data.delay("The test"); diags.HasError() {
		t.Errorf("delay() diagnostics = %v, want none", diags)
	}
}

// TestSchemas checks the provider's schemas as the engine gets them, and that
// every attribute is documented (STYLE.md, "Provider code").
func TestSchemas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server, err := testAccProtoV6ProviderFactories[TypeName]()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("GetProviderSchema: %s: %s", d.Summary, d.Detail)
	}
	var names []string
	for name := range resp.ResourceSchemas {
		names = append(names, "resource "+name)
	}
	for name := range resp.DataSourceSchemas {
		names = append(names, "data "+name)
	}
	slices.Sort(names)
	want := []string{"data fixture_object", "resource fixture_file", "resource fixture_list_entry", "resource fixture_object", "resource fixture_pet", "resource fixture_timestamp", "resource fixture_token"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}

	p := New("test")()
	var presp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &presp)
	checkDescribed(t, "provider", presp.Schema.MarkdownDescription, presp.Schema.Attributes)
	for _, newResource := range p.Resources(ctx) {
		r := newResource()
		var mresp resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: TypeName}, &mresp)
		var sresp resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &sresp)
		checkDescribed(t, mresp.TypeName, sresp.Schema.MarkdownDescription, sresp.Schema.Attributes)
	}
	for _, newDataSource := range p.DataSources(ctx) {
		d := newDataSource()
		var mresp datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: TypeName}, &mresp)
		var sresp datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &sresp)
		checkDescribed(t, "data "+mresp.TypeName, sresp.Schema.MarkdownDescription, sresp.Schema.Attributes)
	}
}

// checkDescribed fails t for a schema or attribute without a
// MarkdownDescription.
func checkDescribed[A interface{ GetMarkdownDescription() string }](t *testing.T, what, description string, attributes map[string]A) {
	t.Helper()
	if description == "" {
		t.Errorf("%s has no MarkdownDescription", what)
	}
	for name, a := range attributes {
		if a.GetMarkdownDescription() == "" {
			t.Errorf("%s.%s has no MarkdownDescription", what, name)
		}
	}
}

// summaries joins the summaries of diagnostics.
func summaries[D interface{ Summary() string }](diags []D) string {
	s := make([]string, len(diags))
	for i, d := range diags {
		s[i] = d.Summary()
	}
	return strings.Join(s, "; ")
}

// The two tests below set variables with t.Setenv, so neither is parallel.

func TestAccProvider_dirFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)

	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckObjectGone(dir, "app"),
		Steps: []tfresource.TestStep{
			{
				Config: `
resource "fixture_object" "this" {
  name  = "app"
  value = "v"
}
`,
				Check: testAccCheckObjectFile(dir, "fixture_object.this", "app", "v"),
			},
		},
	})
}

func TestAccProvider_noDirectory(t *testing.T) {
	t.Setenv(EnvDir, "")
	if err := os.Unsetenv(EnvDir); err != nil {
		t.Fatal(err)
	}

	tfresource.Test(t, tfresource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []tfresource.TestStep{
			{
				Config: `
resource "fixture_object" "this" {
  name = "app"
}
`,
				ExpectError: regexp.MustCompile(`(?s)Fixture Directory Not Set.*FIXTURE_DIR`),
			},
		},
	})
}
