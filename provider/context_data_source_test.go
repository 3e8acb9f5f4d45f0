package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

// The tests below set variables with t.Setenv, so none is parallel.

func TestAccContextDataSource_handedOverGitHub(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccContextDataSourceConfig(),
				ConfigStateChecks: expectContext("data.sponson_context.this", map[string]knownvalue.Check{
					"id":           knownvalue.StringExact("preview/pr-42"),
					"environment":  knownvalue.StringExact("preview"),
					"scope":        knownvalue.StringExact("pr-42"),
					"branch":       knownvalue.StringExact("feat/search"),
					"pull_request": knownvalue.Int64Exact(42),
					"commit":       knownvalue.StringExact("9fceb02d0ae598e95dc970b74767f19372d61af8"),
					"short_commit": knownvalue.StringExact("9fceb02"),
					"predecessor":  knownvalue.StringExact("branch-feat-search"),
				}),
			},
		},
	})
}

func TestAccContextDataSource_handedOverExplicit(t *testing.T) {
	isolateContext(t)
	// What `sponson apply --env production --scope main` hands over: no
	// branch, pull request or commit.
	handOver(t, runctx.Context{Stack: "acme/app", Environment: "production", Scope: "main", Source: runctx.SourceFlags})

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccContextDataSourceConfig(),
				ConfigStateChecks: expectContext("data.sponson_context.this", map[string]knownvalue.Check{
					"id":           knownvalue.StringExact("production/main"),
					"environment":  knownvalue.StringExact("production"),
					"scope":        knownvalue.StringExact("main"),
					"branch":       knownvalue.Null(),
					"pull_request": knownvalue.Null(),
					"commit":       knownvalue.Null(),
					"short_commit": knownvalue.Null(),
					"predecessor":  knownvalue.Null(),
				}),
			},
		},
	})
}

func TestAccContextDataSource_detectedGitHub(t *testing.T) {
	isolateContext(t)
	// A GitHub Actions pull_request run without the wrapper.
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_HEAD_REF", "feat/search")
	t.Setenv("GITHUB_REF", "refs/pull/42/merge")
	t.Setenv("GITHUB_REF_NAME", "42/merge")
	t.Setenv("GITHUB_SHA", "9fceb02d0ae598e95dc970b74767f19372d61af8")

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactories(t.TempDir()),
		Steps: []resource.TestStep{
			{
				Config: testAccContextDataSourceConfig(),
				ConfigStateChecks: expectContext("data.sponson_context.this", map[string]knownvalue.Check{
					"id":           knownvalue.StringExact("preview/pr-42"),
					"scope":        knownvalue.StringExact("pr-42"),
					"branch":       knownvalue.StringExact("feat/search"),
					"pull_request": knownvalue.Int64Exact(42),
					"short_commit": knownvalue.StringExact("9fceb02"),
					"predecessor":  knownvalue.StringExact("branch-feat-search"),
				}),
			},
		},
	})
}

func TestAccContextDataSource_providerEnvironment(t *testing.T) {
	isolateContext(t)
	t.Setenv(runctx.EnvBranch, "feat/Search")
	t.Setenv(runctx.EnvEnvironment, "preview")

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactories(t.TempDir()),
		Steps: []resource.TestStep{
			{
				// The provider block beats SPONSON_CTX_ENV, as --env would.
				Config: testAccContextDataSourceConfigEnvironment("staging"),
				ConfigStateChecks: expectContext("data.sponson_context.this", map[string]knownvalue.Check{
					"id":           knownvalue.StringExact("staging/branch-feat-Search"),
					"environment":  knownvalue.StringExact("staging"),
					"scope":        knownvalue.StringExact("branch-feat-Search"),
					"pull_request": knownvalue.Null(),
					"predecessor":  knownvalue.Null(),
				}),
			},
		},
	})
}

func TestAccContextDataSource_environmentDiffersFromWrapper(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      testAccContextDataSourceConfigEnvironment("production"),
				ExpectError: regexp.MustCompile(`Environment Differs From The Wrapper's`),
			},
		},
	})
}

func TestAccContextDataSource_noContext(t *testing.T) {
	isolateContext(t)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactories(t.TempDir()),
		Steps: []resource.TestStep{
			{
				Config:      testAccContextDataSourceConfig(),
				ExpectError: regexp.MustCompile(`(?s)Run Context Not Decided.*CTX_NULL:`),
			},
		},
	})
}

// TestAccProvider_noContextUnused shows that a configuration that configures
// the provider but uses no sponson object works where no context exists.
func TestAccProvider_noContextUnused(t *testing.T) {
	isolateContext(t)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactories(t.TempDir()),
		Steps: []resource.TestStep{
			{
				Config: `
provider "sponson" {}

resource "terraform_data" "app" {
  input = "app"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("terraform_data.app", tfjsonpath.New("output"), knownvalue.StringExact("app")),
				},
			},
		},
	})
}

// TestAccContextDataSource_namesPerScope is the use the data source exists for.
func TestAccContextDataSource_namesPerScope(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccContextDataSourceConfig() + `
resource "terraform_data" "app" {
  input = "app-${data.sponson_context.this.scope}"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("terraform_data.app", tfjsonpath.New("output"), knownvalue.StringExact("app-pr-42")),
				},
			},
		},
	})
}

func testAccContextDataSourceConfig() string {
	return `
data "sponson_context" "this" {}
`
}

func testAccContextDataSourceConfigEnvironment(environment string) string {
	return fmt.Sprintf(`
provider "sponson" {
  environment = %[1]q
}

data "sponson_context" "this" {}
`, environment)
}

// expectContext returns one state check per attribute of the object at
// address.
func expectContext(address string, want map[string]knownvalue.Check) []statecheck.StateCheck {
	checks := make([]statecheck.StateCheck, 0, len(want))
	for attr, check := range want {
		checks = append(checks, statecheck.ExpectKnownValue(address, tfjsonpath.New(attr), check))
	}
	return checks
}
