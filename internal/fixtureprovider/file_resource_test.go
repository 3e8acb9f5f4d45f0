package fixtureprovider

import (
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

func TestContentID(t *testing.T) {
	t.Parallel()
	// sha1sum of "hello\n", as local_file's id of that content.
	if got, want := ContentID("hello\n"), "f572d396fae9206628714fb2ce00f72e94f2258f"; got != want {
		t.Errorf("ContentID = %s, want %s", got, want)
	}
}

// TestAccFileResource_contentID: two files of equal content share their id;
// a change of content replaces the file, with the new content's id.
func TestAccFileResource_contentID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sameID := statecheck.CompareValuePairs("fixture_file.a", tfjsonpath.New("id"), "fixture_file.b", tfjsonpath.New("id"), compare.ValuesSame())

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckFilesGone(dir, "a.txt", "b.txt"),
		Steps: []resource.TestStep{
			{
				Config: testAccFilesConfig(dir, "same\n", "same\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectUnknownValue("fixture_file.a", tfjsonpath.New("id"))},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_file.a", tfjsonpath.New("id"), knownvalue.StringExact(ContentID("same\n"))),
					sameID,
				},
				Check: testAccCheckFileContent(dir, "a.txt", "same\n"),
			},
			{
				Config: testAccFilesConfig(dir, "changed\n", "same\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_file.a", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectResourceAction("fixture_file.b", plancheck.ResourceActionNoop),
						plancheck.ExpectUnknownValue("fixture_file.a", tfjsonpath.New("id")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_file.a", tfjsonpath.New("id"), knownvalue.StringExact(ContentID("changed\n"))),
				},
				Check: testAccCheckFileContent(dir, "a.txt", "changed\n"),
			},
			{
				// Changed on disk: Read drops it, and the apply writes it again.
				PreConfig: func() {
					if err := os.WriteFile(FilePath(dir, "b.txt"), []byte("edited"), 0o644); err != nil {
						t.Fatal(err)
					}
				},
				Config: testAccFilesConfig(dir, "changed\n", "same\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("fixture_file.b", plancheck.ResourceActionCreate)},
				},
				Check: testAccCheckFileContent(dir, "b.txt", "same\n"),
			},
		},
	})
}

func testAccFilesConfig(dir, a, b string) string {
	return testAccProviderBlock(dir) + fmt.Sprintf(`
resource "fixture_file" "a" {
  filename = "a.txt"
  content  = %[1]q
}

resource "fixture_file" "b" {
  filename = "b.txt"
  content  = %[2]q
}
`, a, b)
}

func testAccCheckFileContent(dir, name, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		b, err := os.ReadFile(FilePath(dir, name))
		if err != nil {
			return err
		}
		if string(b) != want {
			return fmt.Errorf("files/%s holds %q, want %q", name, b, want)
		}
		return nil
	}
}

func testAccCheckFilesGone(dir string, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, n := range names {
			if _, err := os.Stat(FilePath(dir, n)); !os.IsNotExist(err) {
				return fmt.Errorf("files/%s is still there after the destroy (%v)", n, err)
			}
		}
		return nil
	}
}
