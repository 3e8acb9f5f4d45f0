package fixtureprovider

import (
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func TestSecondID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 4, 4, 5, 999_000_000, time.FixedZone("CET", 3600))
	if got, want := secondID(at), "2026-01-02T03:04:05Z"; got != want {
		t.Errorf("secondID = %s, want %s", got, want)
	}
}

// TestTimestampCreateUsesTheClock: unset, the moment is the clock's, to the
// second, so two creates within one second get one id.
func TestTimestampCreateUsesTheClock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := &timestampResource{}
	var sresp fwresource.SchemaResponse
	r.Schema(ctx, fwresource.SchemaRequest{}, &sresp)
	ids := map[string]bool{}
	for _, ns := range []int{1_000_000, 998_000_000} {
		r.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, ns, time.UTC) }
		typ := sresp.Schema.Type().TerraformType(ctx)
		plan := tfsdk.Plan{Schema: sresp.Schema, Raw: tftypes.NewValue(typ, map[string]tftypes.Value{
			"id":       tftypes.NewValue(tftypes.String, tftypes.UnknownValue),
			"rfc3339":  tftypes.NewValue(tftypes.String, tftypes.UnknownValue),
			"triggers": tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, nil),
		})}
		resp := fwresource.CreateResponse{State: tfsdk.State{Schema: sresp.Schema, Raw: tftypes.NewValue(typ, nil)}}
		r.Create(ctx, fwresource.CreateRequest{Plan: plan}, &resp)
		if resp.Diagnostics.HasError() {
			t.Fatalf("Create: %v", resp.Diagnostics)
		}
		var got timestampResourceModel
		resp.Diagnostics.Append(resp.State.Get(ctx, &got)...)
		if got.ID.ValueString() != "2026-01-02T03:04:05Z" || got.RFC3339 != got.ID {
			t.Errorf("created %+v", got)
		}
		ids[got.ID.ValueString()] = true
	}
	if len(ids) != 1 {
		t.Errorf("two creates in one second got ids %v", ids)
	}
}

// TestAccTimestampResource: a configured moment is the id already at plan,
// the same for two resources; unset, it is the create's second; a change of
// triggers replaces it.
func TestAccTimestampResource(t *testing.T) {
	t.Parallel()
	sameID := statecheck.CompareValuePairs("fixture_timestamp.a", tfjsonpath.New("id"), "fixture_timestamp.b", tfjsonpath.New("id"), compare.ValuesSame())
	config := func(trigger string) string {
		return `
resource "fixture_timestamp" "a" {
  rfc3339 = "2026-01-02T03:04:05Z"
}

resource "fixture_timestamp" "b" {
  rfc3339 = "2026-01-02T03:04:05Z"
}

resource "fixture_timestamp" "now" {
  triggers = { t = "` + trigger + `" }
}
`
	}
	seconds := knownvalue.StringRegexp(regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("one"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("fixture_timestamp.a", tfjsonpath.New("id"), knownvalue.StringExact("2026-01-02T03:04:05Z")),
						plancheck.ExpectUnknownValue("fixture_timestamp.now", tfjsonpath.New("id")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					sameID,
					statecheck.ExpectKnownValue("fixture_timestamp.now", tfjsonpath.New("id"), seconds),
				},
			},
			{
				Config: config("two"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("fixture_timestamp.now", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectResourceAction("fixture_timestamp.a", plancheck.ResourceActionNoop),
						plancheck.ExpectUnknownValue("fixture_timestamp.now", tfjsonpath.New("id")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue("fixture_timestamp.now", tfjsonpath.New("id"), seconds)},
			},
		},
	})
}
