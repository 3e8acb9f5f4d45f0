package fixtureprovider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

func TestAccObjectDataSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	value := "from another scope"
	theirs := Object{ID: newID(), Name: "theirs", Value: &value}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					if err := createObject(dir, theirs); err != nil {
						t.Fatal(err)
					}
				},
				Config: testAccProviderBlock(dir) + `
data "fixture_object" "theirs" {
  name = "theirs"
}

resource "fixture_object" "mine" {
  name = "mine"
}

data "fixture_object" "mine" {
  name = fixture_object.mine.name
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.fixture_object.theirs", tfjsonpath.New("id"), knownvalue.StringExact(theirs.ID)),
					statecheck.ExpectKnownValue("data.fixture_object.theirs", tfjsonpath.New("value"), knownvalue.StringExact(value)),
					statecheck.ExpectKnownValue("data.fixture_object.mine", tfjsonpath.New("value"), knownvalue.Null()),
					statecheck.CompareValuePairs(
						"data.fixture_object.mine", tfjsonpath.New("id"),
						"fixture_object.mine", tfjsonpath.New("id"),
						compare.ValuesSame(),
					),
				},
			},
		},
	})
}

func TestAccObjectDataSource_missing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccProviderBlock(dir) + fmt.Sprintf(`
data "fixture_object" "this" {
  name = %[1]q
}
`, "nobody"),
				ExpectError: regexp.MustCompile(`(?s)Object Not Found.*"nobody"`),
			},
		},
	})
}
