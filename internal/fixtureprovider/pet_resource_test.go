package fixtureprovider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

func TestPetName(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "pr-1"} {
		name := petName(prefix)
		parts := strings.Split(strings.TrimPrefix(name, prefix+"-"), "-")
		if prefix != "" && !strings.HasPrefix(name, prefix+"-") || len(parts) != 2 {
			t.Errorf("petName(%q) = %q", prefix, name)
		}
	}
}

// TestAccPetResource: the id is a name starting with the prefix; a new
// prefix replaces it with a name unknown at plan.
func TestAccPetResource(t *testing.T) {
	t.Parallel()
	config := func(prefix string) string {
		return `
resource "fixture_pet" "this" {
  prefix = "` + prefix + `"
}
`
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("branch-feat-x"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_pet.this", tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^branch-feat-x-[a-z]+-[a-z]+$`))),
				},
			},
			{
				Config: config("branch-feat-x"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("fixture_pet.this", plancheck.ResourceActionNoop)},
				},
			},
			{
				Config: config("pr-3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_pet.this", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectUnknownValue("fixture_pet.this", tfjsonpath.New("id")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_pet.this", tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^pr-3-[a-z]+-[a-z]+$`))),
				},
			},
		},
	})
}
