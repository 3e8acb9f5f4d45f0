package fixtureprovider

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// uuidPattern matches the ids of created objects.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestAccObjectResource_basic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sameID := statecheck.CompareValue(compare.ValuesSame())

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckObjectGone(dir, "app"),
		Steps: []resource.TestStep{
			{
				Config: testAccObjectResourceConfig(dir, "app", "one"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_object.this", tfjsonpath.New("id"), knownvalue.StringRegexp(uuidPattern)),
					statecheck.ExpectKnownValue("fixture_object.this", tfjsonpath.New("name"), knownvalue.StringExact("app")),
					statecheck.ExpectKnownValue("fixture_object.this", tfjsonpath.New("value"), knownvalue.StringExact("one")),
					statecheck.ExpectKnownValue("fixture_object.this", tfjsonpath.New("parent"), knownvalue.StringExact("vars")),
					sameID.AddStateValue("fixture_object.this", tfjsonpath.New("id")),
				},
				Check: testAccCheckObjectFile(dir, "fixture_object.this", "app", "one"),
			},
			{
				Config: testAccObjectResourceConfig(dir, "app", "two"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_object.this", plancheck.ResourceActionUpdate),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_object.this", tfjsonpath.New("value"), knownvalue.StringExact("two")),
					// An update keeps the object, so its id.
					sameID.AddStateValue("fixture_object.this", tfjsonpath.New("id")),
				},
				Check: testAccCheckObjectFile(dir, "fixture_object.this", "app", "two"),
			},
			{
				ResourceName:      "fixture_object.this",
				ImportState:       true,
				ImportStateId:     "app",
				ImportStateVerify: true,
				// parent is kept in state only.
				ImportStateVerifyIgnore: []string{"parent"},
			},
		},
	})
}

func TestAccObjectResource_nullValue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccProviderBlock(dir) + `
resource "fixture_object" "this" {
  name = "bare"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_object.this", tfjsonpath.New("value"), knownvalue.Null()),
					statecheck.ExpectKnownValue("fixture_object.this", tfjsonpath.New("parent"), knownvalue.Null()),
				},
				Check: func(*terraform.State) error {
					obj, err := ReadObject(dir, "bare")
					if err != nil {
						return err
					}
					if obj.Value != nil {
						return fmt.Errorf("objects/bare.json has value %q, want null", *obj.Value)
					}
					return nil
				},
			},
		},
	})
}

func TestAccObjectResource_renameGetsNewID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	differentID := statecheck.CompareValue(compare.ValuesDiffer())

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            testAccObjectResourceConfig(dir, "first", "v"),
				ConfigStateChecks: []statecheck.StateCheck{differentID.AddStateValue("fixture_object.this", tfjsonpath.New("id"))},
			},
			{
				Config: testAccObjectResourceConfig(dir, "second", "v"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_object.this", plancheck.ResourceActionDestroyBeforeCreate),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{differentID.AddStateValue("fixture_object.this", tfjsonpath.New("id"))},
				Check: resource.ComposeAggregateTestCheckFunc(
					testAccCheckObjectGone(dir, "first"),
					testAccCheckObjectFile(dir, "fixture_object.this", "second", "v"),
				),
			},
		},
	})
}

// TestAccObjectResource_alreadyExists is the collision of two scopes on one
// name: the object another configuration created is refused, and left as it
// was.
func TestAccObjectResource_alreadyExists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	theirs := "theirs"
	owner := Object{ID: newID(), Name: "taken", Value: &theirs}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			got, err := ReadObject(dir, "taken")
			if err != nil {
				return fmt.Errorf("the other owner's object is gone: %w", err)
			}
			if got.ID != owner.ID || got.Value == nil || *got.Value != theirs {
				return fmt.Errorf("the other owner's object changed: %+v", got)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					if err := createObject(dir, owner); err != nil {
						t.Fatal(err)
					}
				},
				Config:      testAccObjectResourceConfig(dir, "taken", "mine"),
				ExpectError: regexp.MustCompile(`(?s)Object Already Exists.*"taken".*` + owner.ID),
			},
		},
	})
}

// TestAccObjectResource_changedOutside checks that Read refreshes from the
// file: a changed value plans an update back, a deleted file a create.
func TestAccObjectResource_changedOutside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	differentID := statecheck.CompareValue(compare.ValuesDiffer())

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            testAccObjectResourceConfig(dir, "app", "one"),
				ConfigStateChecks: []statecheck.StateCheck{differentID.AddStateValue("fixture_object.this", tfjsonpath.New("id"))},
			},
			{
				PreConfig: func() {
					obj, err := ReadObject(dir, "app")
					if err != nil {
						t.Fatal(err)
					}
					changed := "changed"
					obj.Value = &changed
					if err := writeObject(dir, obj); err != nil {
						t.Fatal(err)
					}
				},
				Config: testAccObjectResourceConfig(dir, "app", "one"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_object.this", plancheck.ResourceActionUpdate),
					},
				},
				Check: testAccCheckObjectFile(dir, "fixture_object.this", "app", "one"),
			},
			{
				PreConfig: func() {
					if err := os.Remove(ObjectPath(dir, "app")); err != nil {
						t.Fatal(err)
					}
				},
				Config: testAccObjectResourceConfig(dir, "app", "one"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_object.this", plancheck.ResourceActionCreate),
					},
				},
				// Created again, so with a new id.
				ConfigStateChecks: []statecheck.StateCheck{differentID.AddStateValue("fixture_object.this", tfjsonpath.New("id"))},
				Check:             testAccCheckObjectFile(dir, "fixture_object.this", "app", "one"),
			},
		},
	})
}

func TestAccObjectResource_invalidName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      testAccObjectResourceConfig(dir, "../escape", "v"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Invalid Name`),
			},
			{
				ResourceName:  "fixture_object.this",
				Config:        testAccObjectResourceConfig(dir, "app", "v"),
				ImportState:   true,
				ImportStateId: "a/b",
				ExpectError:   regexp.MustCompile(`Invalid Import ID`),
			},
		},
	})
}

func testAccObjectResourceConfig(dir, name, value string) string {
	return testAccProviderBlock(dir) + fmt.Sprintf(`
resource "fixture_object" "this" {
  name   = %[1]q
  value  = %[2]q
  parent = "vars"
}
`, name, value)
}

// testAccCheckObjectFile checks that the file of the object name holds value
// and the id of the resource at address.
func testAccCheckObjectFile(dir, address, name, value string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[address]
		if !ok {
			return fmt.Errorf("%s is not in state", address)
		}
		obj, err := ReadObject(dir, name)
		if err != nil {
			return err
		}
		if obj.ID != rs.Primary.ID {
			return fmt.Errorf("objects/%s.json has id %q, state has %q", name, obj.ID, rs.Primary.ID)
		}
		if obj.Name != name {
			return fmt.Errorf("objects/%s.json has name %q", name, obj.Name)
		}
		if obj.Value == nil || *obj.Value != value {
			return fmt.Errorf("objects/%s.json has value %v, want %q", name, obj.Value, value)
		}
		return nil
	}
}

// testAccCheckObjectGone checks that there is no object name.
func testAccCheckObjectGone(dir, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if _, err := ReadObject(dir, name); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("objects/%s.json still exists, or cannot be read: %v", name, err)
		}
		return nil
	}
}
