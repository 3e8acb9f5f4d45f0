package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// testAccProtoV6ProviderFactories serves the provider in the test process
// (the engine reattaches to it), detecting in the package directory when no
// context is handed over. Tests that hand a context over use it.
var testAccProtoV6ProviderFactories = testAccProviderFactories("")

// testAccProviderFactories is testAccProtoV6ProviderFactories detecting in
// dir. The provider runs in the test process, whose working directory is this
// package inside the git checkout, so tests of detection pass a directory of
// their own.
func testAccProviderFactories(dir string) map[string]func() (tfprotov6.ProviderServer, error) {
	return testAccProviderFactoriesFor(&sponsonProvider{version: "test", resolver: processResolver{dir: dir}})
}

// testAccProviderFactoriesFor serves p; its nil dependencies are the test
// process's own.
func testAccProviderFactoriesFor(p *sponsonProvider) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"sponson": providerserver.NewProtocol6WithError(p),
	}
}

// testAccPreCheck stops early, with the fix, where the engine would fail in a
// less readable way.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	engine := filepath.Base(os.Getenv("TF_ACC_TERRAFORM_PATH"))
	if strings.Contains(engine, "tofu") && os.Getenv("TF_ACC_PROVIDER_HOST") == "" && os.Getenv("TF_ACC_PROVIDER_NAMESPACE") == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is OpenTofu: set TF_ACC_PROVIDER_HOST=registry.opentofu.org, " +
			"or init fails on the provider address (engine-notes §4)")
	}
}

// githubContext is what the wrapper decides in a GitHub Actions run of pull
// request 42 from feat/search.
var githubContext = runctx.Context{
	Stack:         "acme/app",
	Environment:   "preview",
	Scope:         "pr-42",
	Branch:        "feat/search",
	PullRequest:   42,
	Commit:        "9fceb02d0ae598e95dc970b74767f19372d61af8",
	DefaultBranch: "main",
	Predecessor:   "branch-feat-search",
	Source:        runctx.SourceGitHub,
}

// isolateContext clears every variable the run context is read or detected
// from, so that a test decides its context alone, on a laptop, in CI or under
// the sponson wrapper. A lease a wrapper handed over goes with them, and
// SPONSON_STORE points at a store of the test's own, so that sponson_scope
// never writes to .sponson/ in this package. It uses t.Setenv, so the test
// cannot be parallel.
func isolateContext(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if contextVariable(name) {
			unsetenv(t, name)
		}
	}
	for _, name := range []string{runctx.EnvEnvironment, runctx.EnvScope, runctx.EnvBranch, runctx.EnvCommit, runctx.EnvPullRequest} {
		t.Setenv(name, "")
	}
	// The tests' configurations live in temporary directories outside any
	// repository; they are all one stack.
	t.Setenv("SPONSON_STACK", "acme/app")
	useStore(t, t.TempDir())
}

// useStore makes dir the store of the provider's own leases, through
// SPONSON_STORE.
func useStore(t *testing.T, dir string) {
	t.Helper()
	t.Setenv(storeurl.EnvVar, "file://"+dir)
}

// contextVariable reports whether detection may read the variable name.
func contextVariable(name string) bool {
	switch name {
	case "CI", "CIRCLECI", "GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES":
		return true
	}
	for _, prefix := range []string{"SPONSON_", "GITHUB_", "GITLAB_", "CI_", "CIRCLE_", "BITBUCKET_"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// unsetenv unsets name for the rest of the test; t.Setenv restores it.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "")
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

// handOver sets the context the way the wrapper hands it to the engine and
// so to the provider.
func handOver(t *testing.T, rc runctx.Context) {
	t.Helper()
	s, err := rc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(runctx.EnvVar, s)
}

// resolverFunc is a contextResolver for unit tests.
type resolverFunc func(environment string) (runctx.Context, bool, error)

func (f resolverFunc) Resolve(environment string) (runctx.Context, bool, error) {
	return f(environment)
}

// configure runs the provider's Configure with the given environment value
// and no store.
func configure(t *testing.T, p *sponsonProvider, environment tftypes.Value) (*providerData, *provider.ConfigureResponse) {
	t.Helper()
	return configureStore(t, p, environment, tftypes.NewValue(tftypes.String, nil))
}

// configureStore runs the provider's Configure with the given environment
// and store values.
func configureStore(t *testing.T, p *sponsonProvider, environment, storeURL tftypes.Value) (*providerData, *provider.ConfigureResponse) {
	t.Helper()
	ctx := context.Background()
	var sresp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &sresp)
	raw := tftypes.NewValue(sresp.Schema.Type().TerraformType(ctx), map[string]tftypes.Value{
		"environment": environment,
		"store":       storeURL,
	})
	resp := &provider.ConfigureResponse{}
	p.Configure(ctx, provider.ConfigureRequest{Config: tfsdk.Config{Schema: sresp.Schema, Raw: raw}}, resp)
	data, _ := resp.ResourceData.(*providerData)
	if resp.DataSourceData != resp.ResourceData || resp.EphemeralResourceData != resp.ResourceData {
		t.Error("resources, data sources and ephemeral resources get different provider data")
	}
	return data, resp
}

func TestConfigure(t *testing.T) {
	t.Parallel()

	production := runctx.Context{Stack: "acme/app", Environment: "production", Scope: "main", Source: runctx.SourceFlags}
	detectErr := errcode.New(errcode.CtxNull, "cannot decide the scope")
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	null := tftypes.NewValue(tftypes.String, nil)
	unknown := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)

	tests := map[string]struct {
		environment tftypes.Value
		rc          runctx.Context
		handedOver  bool
		err         error
		wantAsked   []string // environments the resolver was asked with
		wantCtx     runctx.Context
		wantErr     bool // providerData carries an error for the objects
		wantDiag    string
	}{
		"handed over": {
			environment: null, rc: githubContext, handedOver: true,
			wantAsked: []string{""}, wantCtx: githubContext,
		},
		"handed over, same environment": {
			environment: str("production"), rc: production, handedOver: true,
			wantAsked: []string{"production"}, wantCtx: production,
		},
		"handed over, other environment": {
			environment: str("preview"), rc: production, handedOver: true,
			wantAsked: []string{"preview"}, wantDiag: "Environment Differs From The Wrapper's",
		},
		"handed over, malformed": {
			environment: str("preview"), handedOver: true, err: errors.New("bad JSON"),
			wantAsked: []string{"preview"}, wantErr: true,
		},
		"detected with the environment": {
			environment: str("production"), rc: production,
			wantAsked: []string{"production"}, wantCtx: production,
		},
		"detection failed": {
			environment: null, err: detectErr,
			wantAsked: []string{""}, wantErr: true,
		},
		"environment unknown": {
			environment: unknown,
			wantAsked:   nil, wantErr: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var asked []string
			p := &sponsonProvider{resolver: resolverFunc(func(env string) (runctx.Context, bool, error) {
				asked = append(asked, env)
				return tt.rc, tt.handedOver, tt.err
			})}

			data, resp := configure(t, p, tt.environment)

			if diff := cmp.Diff(tt.wantAsked, asked); diff != "" {
				t.Errorf("resolver calls (-want +got):\n%s", diff)
			}
			if tt.wantDiag != "" {
				if !resp.Diagnostics.HasError() || resp.Diagnostics.Errors()[0].Summary() != tt.wantDiag {
					t.Fatalf("diagnostics = %v, want an error %q", resp.Diagnostics, tt.wantDiag)
				}
				return
			}
			if resp.Diagnostics.HasError() {
				t.Fatalf("Configure failed: %v", resp.Diagnostics)
			}
			if data == nil {
				t.Fatal("no provider data")
			}
			if (data.err != nil) != tt.wantErr {
				t.Fatalf("provider data error = %v, want error %v", data.err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantCtx, data.runCtx); diff != "" {
				t.Errorf("run context (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigure_environmentAttributeError(t *testing.T) {
	t.Parallel()
	p := &sponsonProvider{resolver: resolverFunc(func(string) (runctx.Context, bool, error) {
		return githubContext, true, nil
	})}

	_, resp := configure(t, p, tftypes.NewValue(tftypes.String, "production"))

	errs := resp.Diagnostics.Errors()
	if len(errs) != 1 {
		t.Fatalf("diagnostics = %v, want one error", resp.Diagnostics)
	}
	withPath, ok := errs[0].(interface{ Path() path.Path })
	if !ok || !withPath.Path().Equal(path.Root("environment")) {
		t.Errorf("error is not on the environment attribute: %v", errs[0])
	}
	if !strings.Contains(errs[0].Detail(), `"production"`) || !strings.Contains(errs[0].Detail(), `"preview"`) {
		t.Errorf("detail does not name both environments: %s", errs[0].Detail())
	}
}

// TestProcessResolver covers the hand-over and the fall-back to detection.
// It sets variables, so it is not parallel.
func TestConfigure_store(t *testing.T) {
	t.Parallel()
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	handedOver := func(string) (runctx.Context, bool, error) { return githubContext, true, nil }

	tests := map[string]struct {
		store   tftypes.Value
		wantURL string
		wantErr bool
	}{
		"unset":   {store: tftypes.NewValue(tftypes.String, nil)},
		"set":     {store: str("file:///var/lib/sponson"), wantURL: "file:///var/lib/sponson"},
		"unknown": {store: tftypes.NewValue(tftypes.String, tftypes.UnknownValue), wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := &sponsonProvider{resolver: resolverFunc(handedOver), workDir: "/config"}

			data, resp := configureStore(t, p, tftypes.NewValue(tftypes.String, nil), tt.store)

			// An unusable store fails only sponson_scope's writes, like an
			// unusable context: configuring the provider still succeeds.
			if resp.Diagnostics.HasError() || data == nil || data.records == nil {
				t.Fatalf("Configure = %v, %v; want provider data with a store", data, resp.Diagnostics)
			}
			if data.records.url != tt.wantURL || (data.records.urlErr != nil) != tt.wantErr {
				t.Errorf("store = %q, %v; want %q, error %v", data.records.url, data.records.urlErr, tt.wantURL, tt.wantErr)
			}
			if data.records.workDir != "/config" || data.records.getenv == nil || data.records.open == nil || data.records.now == nil {
				t.Errorf("the store's dependencies were not handed over: %+v", data.records)
			}
		})
	}
}

func TestProcessResolver(t *testing.T) {
	t.Run("handed over wins over detection", func(t *testing.T) {
		isolateContext(t)
		handOver(t, githubContext)
		t.Setenv(runctx.EnvBranch, "other")
		t.Setenv(runctx.EnvEnvironment, "production")

		rc, handedOver, err := processResolver{dir: t.TempDir()}.Resolve("")

		if err != nil || !handedOver {
			t.Fatalf("Resolve = %v, %v; want the handed-over context", handedOver, err)
		}
		if diff := cmp.Diff(githubContext, rc); diff != "" {
			t.Errorf("context (-want +got):\n%s", diff)
		}
	})
	t.Run("malformed hand-over is an error, not detection", func(t *testing.T) {
		isolateContext(t)
		t.Setenv(runctx.EnvVar, `{"environment":"preview","scope":"../up"}`)
		t.Setenv(runctx.EnvBranch, "feat/x")

		_, handedOver, err := processResolver{dir: t.TempDir()}.Resolve("")

		if err == nil || !handedOver {
			t.Fatalf("Resolve = %v, %v; want a hand-over error", handedOver, err)
		}
	})
	t.Run("detected in dir", func(t *testing.T) {
		isolateContext(t)
		t.Setenv(runctx.EnvBranch, "feat/x")
		t.Setenv(runctx.EnvPullRequest, "7")
		t.Setenv("SPONSON_STACK", "acme/app") // the directory is in no repository

		rc, handedOver, err := processResolver{dir: t.TempDir()}.Resolve("staging")

		if err != nil || handedOver {
			t.Fatalf("Resolve = %v, %v; want a detected context", handedOver, err)
		}
		want := runctx.Context{Stack: "acme/app", Environment: "staging", Scope: "pr-7", Branch: "feat/x", PullRequest: 7,
			Predecessor: "branch-feat-x", Source: runctx.SourceEnv}
		if diff := cmp.Diff(want, rc); diff != "" {
			t.Errorf("context (-want +got):\n%s", diff)
		}
	})
	t.Run("nothing to detect", func(t *testing.T) {
		isolateContext(t)

		_, handedOver, err := processResolver{dir: t.TempDir()}.Resolve("")

		if !errcode.Is(err, errcode.CtxNull) || handedOver {
			t.Fatalf("Resolve = %v, %v; want CTX_NULL", handedOver, err)
		}
	})
}

func TestRunContextDiagnostics(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		data        *providerData
		wantSummary string
		wantDetail  []string
	}{
		"not configured": {
			data:        nil,
			wantSummary: "Provider Not Configured",
			wantDetail:  []string{"the thing"},
		},
		"coded error": {
			data: &providerData{err: errcode.New(errcode.CtxNull, "cannot decide the scope").
				WithHint("Pass --scope NAME.")},
			wantSummary: "Run Context Not Decided",
			wantDetail:  []string{"the thing needs", "Pass --scope NAME.", runctx.EnvVar},
		},
		"plain error": {
			data:        &providerData{err: errors.New("boom")},
			wantSummary: "Run Context Not Decided",
			wantDetail:  []string{"SPONSON_CTX_BRANCH"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			_, diags := tt.data.runContext("the thing")

			if len(diags) != 1 || diags[0].Summary() != tt.wantSummary {
				t.Fatalf("diagnostics = %v, want %q", diags, tt.wantSummary)
			}
			detail := diags[0].Detail()
			for _, s := range tt.wantDetail {
				if !strings.Contains(detail, s) {
					t.Errorf("detail does not contain %q:\n%s", s, detail)
				}
			}
			if tt.data != nil && !strings.HasSuffix(detail, tt.data.err.Error()) {
				t.Errorf("detail does not end with the original error:\n%s", detail)
			}
		})
	}

	rc, diags := (&providerData{runCtx: githubContext}).runContext("the thing")
	if diags.HasError() || rc != githubContext {
		t.Errorf("runContext = %v, %v; want the context", rc, diags)
	}
}
