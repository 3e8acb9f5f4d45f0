package fixtureprovider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// TestAccTokenResource: the id is a number kept across plans, and a change
// of triggers replaces it with another, unknown at plan.
func TestAccTokenResource(t *testing.T) {
	t.Parallel()
	differ := statecheck.CompareValue(compare.ValuesDiffer())
	config := func(trigger string) string {
		return `
resource "fixture_token" "this" {
  triggers = { name = "` + trigger + `" }
}
`
	}
	number := knownvalue.StringRegexp(regexp.MustCompile(`^[0-9]+$`))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("one"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_token.this", tfjsonpath.New("id"), number),
					differ.AddStateValue("fixture_token.this", tfjsonpath.New("id")),
				},
			},
			{
				Config: config("one"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("fixture_token.this", plancheck.ResourceActionNoop)},
				},
			},
			{
				Config: config("two"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_token.this", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectUnknownValue("fixture_token.this", tfjsonpath.New("id")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_token.this", tfjsonpath.New("id"), number),
					differ.AddStateValue("fixture_token.this", tfjsonpath.New("id")),
				},
			},
		},
	})
}
