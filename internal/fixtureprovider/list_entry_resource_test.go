package fixtureprovider

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

func TestAccListEntryResource_basic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		// Destroying every entry leaves the list, empty.
		CheckDestroy: testAccCheckList(dir, "vars"),
		Steps: []resource.TestStep{
			{
				Config: testAccListEntryConfig(dir, "vars", "A", "B"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("fixture_list_entry.A", tfjsonpath.New("id"), knownvalue.StringExact("vars/A")),
					statecheck.ExpectKnownValue("fixture_list_entry.B", tfjsonpath.New("id"), knownvalue.StringExact("vars/B")),
				},
				Check: testAccCheckList(dir, "vars", "A", "B"),
			},
			{
				Config: testAccListEntryConfig(dir, "vars", "B"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_list_entry.A", plancheck.ResourceActionDestroy),
						plancheck.ExpectResourceAction("fixture_list_entry.B", plancheck.ResourceActionNoop),
					},
				},
				Check: testAccCheckList(dir, "vars", "B"),
			},
			{
				ResourceName:      "fixture_list_entry.B",
				ImportState:       true,
				ImportStateId:     "vars/B",
				ImportStateVerify: true,
			},
			{
				// Another entry replaces this one: removed, then added.
				Config: testAccListEntryConfig(dir, "vars", "C"),
				Check:  testAccCheckList(dir, "vars", "C"),
			},
		},
	})
}

func TestAccListEntryResource_keepsOtherEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckList(dir, "vars", "theirs"),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { testAccWriteList(t, dir, "vars", "theirs") },
				Config:    testAccListEntryConfig(dir, "vars", "mine"),
				Check:     testAccCheckList(dir, "vars", "theirs", "mine"),
			},
		},
	})
}

// TestAccListEntryResource_removedOutside checks that Read drops an entry
// missing from the list, so the next apply adds it again.
func TestAccListEntryResource_removedOutside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccListEntryConfig(dir, "vars", "A", "B"),
				Check:  testAccCheckList(dir, "vars", "A", "B"),
			},
			{
				PreConfig: func() { testAccWriteList(t, dir, "vars", "B") },
				Config:    testAccListEntryConfig(dir, "vars", "A", "B"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_list_entry.A", plancheck.ResourceActionCreate),
						plancheck.ExpectResourceAction("fixture_list_entry.B", plancheck.ResourceActionNoop),
					},
				},
				Check: testAccCheckList(dir, "vars", "A", "B"),
			},
		},
	})
}

func TestAccListEntryResource_invalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      testAccListEntryConfig(dir, "no/slashes", "A"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Invalid Name`),
			},
			{
				ResourceName:  "fixture_list_entry.A",
				Config:        testAccListEntryConfig(dir, "vars", "A"),
				ImportState:   true,
				ImportStateId: "vars",
				ExpectError:   regexp.MustCompile(`Invalid Import ID`),
			},
		},
	})
}

// TestAccListEntryResource_delay runs creates and destroys with
// FIXTURE_LIST_DELAY set, and refuses an invalid delay. It sets the variable
// with t.Setenv, so it is not parallel.
func TestAccListEntryResource_delay(t *testing.T) {
	dir := t.TempDir()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             testAccCheckList(dir, "vars"),
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { t.Setenv(EnvListDelay, "soon") },
				Config:      testAccListEntryConfig(dir, "vars", "A"),
				ExpectError: regexp.MustCompile(`Invalid List Delay`),
			},
			{
				// The engine creates both at once; within one run the
				// provider serialises its list writes, so neither is lost.
				PreConfig: func() { t.Setenv(EnvListDelay, "200ms") },
				Config:    testAccListEntryConfig(dir, "vars", "A", "B"),
				Check:     testAccCheckList(dir, "vars", "A", "B"),
			},
		},
	})
}

// testAccListEntryConfig adds entries to list, each with a resource named
// after its entry, so entries must be identifiers. (The test framework's
// state checks do not support for_each.)
func testAccListEntryConfig(dir, list string, entries ...string) string {
	var b strings.Builder
	b.WriteString(testAccProviderBlock(dir))
	for _, e := range entries {
		fmt.Fprintf(&b, `
resource "fixture_list_entry" %[2]q {
  list  = %[1]q
  entry = %[2]q
}
`, list, e)
	}
	return b.String()
}

// testAccCheckList checks that the list holds exactly want, in any order:
// the engine creates a configuration's entries in parallel.
func testAccCheckList(dir, list string, want ...string) resource.TestCheckFunc {
	want = slices.Sorted(slices.Values(want))
	return func(*terraform.State) error {
		got, err := ReadList(dir, list)
		if err != nil {
			return err
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			return fmt.Errorf("lists/%s.json holds %q, want %q", list, got, want)
		}
		return nil
	}
}

// testAccWriteList replaces the list with entries, as another writer would.
func testAccWriteList(t *testing.T, dir, list string, entries ...string) {
	t.Helper()
	b, err := encode(entries)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(ListPath(dir, list), b); err != nil {
		t.Fatal(err)
	}
}
