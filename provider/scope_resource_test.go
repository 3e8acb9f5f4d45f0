package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

func TestParseScopeID(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		id              string
		wantEnvironment string
		wantScope       string
		wantErr         bool
	}{
		"pull request":      {id: "preview/pr-42", wantEnvironment: "preview", wantScope: "pr-42"},
		"branch":            {id: "staging/branch-feat-Search", wantEnvironment: "staging", wantScope: "branch-feat-Search"},
		"no slash":          {id: "pr-42", wantErr: true},
		"empty environment": {id: "/pr-42", wantErr: true},
		"empty scope":       {id: "preview/", wantErr: true},
		"extra segment":     {id: "preview/pr-42/x", wantErr: true},
		"traversal":         {id: "preview/..", wantErr: true},
		"empty":             {id: "", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			environment, scope, err := parseScopeID(tt.id)

			if (err != nil) != tt.wantErr {
				t.Fatalf("parseScopeID(%q) error = %v, want error %v", tt.id, err, tt.wantErr)
			}
			got := [2]string{environment, scope}
			if diff := cmp.Diff([2]string{tt.wantEnvironment, tt.wantScope}, got); diff != "" {
				t.Errorf("parseScopeID(%q) (-want +got):\n%s", tt.id, diff)
			}
			if err == nil && scopeID(environment, scope) != tt.id {
				t.Errorf("scopeID does not give back %q", tt.id)
			}
		})
	}
}

// The tests below set variables with t.Setenv, so none is parallel.

func TestAccScopeResource_basic(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionCreate),
						// The wrapper reads the scope from the plan.
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("name"), knownvalue.StringExact("pr-42")),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("predecessor"), knownvalue.StringExact("branch-feat-search")),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("id"), knownvalue.StringExact("preview/pr-42")),
					},
				},
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				ResourceName:      "sponson_scope.this",
				ImportState:       true,
				ImportStateVerify: true,
			},
		},
	})
}

func TestAccScopeResource_otherScopeReplaces(t *testing.T) {
	isolateContext(t)
	onMain := runctx.Context{Environment: "preview", Scope: "main", Branch: "main", Source: runctx.SourceGit}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig:         func() { handOver(t, githubContext) },
				Config:            testAccScopeResourceConfig(),
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				// The same configuration applied on main is another scope.
				PreConfig: func() { handOver(t, onMain) },
				Config:    testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("name"), knownvalue.StringExact("main")),
					},
				},
				ConfigStateChecks: expectScope("preview", "main", knownvalue.Null()),
			},
		},
	})
}

func TestAccScopeResource_environment(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            testAccScopeResourceConfigEnvironment("staging"),
				ConfigStateChecks: expectScope("staging", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				Config: testAccScopeResourceConfigEnvironment("qa"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionDestroyBeforeCreate),
					},
				},
				ConfigStateChecks: expectScope("qa", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				// Unset, the environment follows the run.
				Config: testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("environment"), knownvalue.StringExact("preview")),
					},
				},
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				// The run moves to production: the default follows it.
				PreConfig: func() {
					production := githubContext
					production.Environment = "production"
					handOver(t, production)
				},
				Config: testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionDestroyBeforeCreate),
					},
				},
				ConfigStateChecks: expectScope("production", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
		},
	})
}

func TestAccScopeResource_invalidEnvironment(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      testAccScopeResourceConfigEnvironment("../prod"),
				ExpectError: regexp.MustCompile(`Invalid Name`),
			},
		},
	})
}

func TestAccScopeResource_importRefused(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccScopeResourceConfig(),
			},
			{
				ResourceName:  "sponson_scope.this",
				ImportState:   true,
				ImportStateId: "preview/pr-7",
				ExpectError:   regexp.MustCompile(`Import Of Another Scope Refused`),
			},
			{
				ResourceName:  "sponson_scope.this",
				ImportState:   true,
				ImportStateId: "pr-42",
				ExpectError:   regexp.MustCompile(`Invalid Import ID`),
			},
		},
	})
}

func TestAccScopeResource_noContext(t *testing.T) {
	isolateContext(t)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactories(t.TempDir()),
		Steps: []resource.TestStep{
			{
				Config:      testAccScopeResourceConfig(),
				ExpectError: regexp.MustCompile(`(?s)Run Context Not Decided.*CTX_NULL:`),
			},
			{
				PreConfig:         func() { handOver(t, githubContext) },
				Config:            testAccScopeResourceConfig(),
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
		},
	})
}

func testAccScopeResourceConfig() string {
	return `
resource "sponson_scope" "this" {}
`
}

func testAccScopeResourceConfigEnvironment(environment string) string {
	return fmt.Sprintf(`
resource "sponson_scope" "this" {
  environment = %[1]q
}
`, environment)
}

// expectScope checks the state of sponson_scope.this.
func expectScope(environment, name string, predecessor knownvalue.Check) []statecheck.StateCheck {
	return expectContext("sponson_scope.this", map[string]knownvalue.Check{
		"id":          knownvalue.StringExact(environment + "/" + name),
		"environment": knownvalue.StringExact(environment),
		"name":        knownvalue.StringExact(name),
		"predecessor": predecessor,
	})
}
