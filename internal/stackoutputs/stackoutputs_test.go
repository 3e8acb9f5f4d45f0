package stackoutputs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/stackoutputs"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// A plan's planned outputs keep their types (or take the one their value
// implies), their sensitivity, and list those known only after the apply;
// a removed output is gone. Only the plan's own environment and scope read
// them back.
func TestFromPlanRoundTrip(t *testing.T) {
	t.Parallel()
	var plan tfjson.Plan
	if err := json.Unmarshal([]byte(`{
  "format_version": "1.2",
  "planned_values": {"outputs": {
    "cidr": {"sensitive": false, "type": "string", "value": "10.9.0.0/16"},
    "zones": {"sensitive": false, "value": ["a", "b"]},
    "token": {"sensitive": true, "type": "string", "value": "s3cr3t"},
    "vpc_id": {"sensitive": false}
  }},
  "output_changes": {
    "cidr": {"actions": ["update"], "before": "10.0.0.0/16", "after": "10.9.0.0/16", "after_unknown": false},
    "vpc_id": {"actions": ["update"], "before": "vpc-1", "after_unknown": true},
    "ids": {"actions": ["create"], "after": {"a": null}, "after_unknown": {"a": true}},
    "old": {"actions": ["delete"], "before": "x", "after": null, "after_unknown": false}
  }
}`), &plan); err != nil {
		t.Fatal(err)
	}
	key := store.Key{Stack: "github.com/acme/infra//stacks/network", Environment: "preview", Scope: "pr-7"}
	p, err := stackoutputs.FromPlan(key, &plan)
	if err != nil {
		t.Fatal(err)
	}
	want := stackoutputs.Planned{Stack: key.Stack, Environment: "preview", Scope: "pr-7", Unknown: []string{"ids", "vpc_id"},
		Outputs: map[string]stackoutputs.Output{
			"cidr":  {Value: json.RawMessage(`"10.9.0.0/16"`), Type: json.RawMessage(`"string"`)},
			"zones": {Value: json.RawMessage(`["a","b"]`), Type: json.RawMessage(`["tuple",["string","string"]]`)},
			"token": {Value: json.RawMessage(`"s3cr3t"`), Type: json.RawMessage(`"string"`), Sensitive: true},
		}}
	if d := cmp.Diff(want, p); d != "" {
		t.Fatalf("planned (-want +got):\n%s", d)
	}
	dir := t.TempDir()
	if err := stackoutputs.Write(dir, p); err != nil {
		t.Fatal(err)
	}
	got, ok, err := stackoutputs.Read(dir, key)
	if err != nil || !ok {
		t.Fatalf("Read = %v, %v", ok, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	entries, _ := os.ReadDir(dir)
	if fi, err := os.Stat(filepath.Join(dir, entries[0].Name())); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode = %v, %v; want 0600 (it holds sensitive values)", fi.Mode(), err)
	}
	for _, other := range []store.Key{{Stack: key.Stack, Environment: "preview", Scope: "main"}, {Stack: key.Stack, Environment: "production", Scope: "pr-7"}, {Stack: "other", Environment: "preview", Scope: "pr-7"}} {
		if _, ok, err := stackoutputs.Read(dir, other); ok || err != nil {
			t.Errorf("Read(%v) = %v, %v; want nothing", other, ok, err)
		}
	}
}

// TestDerivedFromProvisional: a stack's outputs that come, through its
// configuration, from another stack's provisional outputs are provisional
// too, for the stacks that read this one (issue 49): database's endpoint,
// made from network's provisional vpc_id through a resource, and vpc, read
// straight from it; not its name, a constant, nor port, from a variable.
func TestDerivedFromProvisional(t *testing.T) {
	t.Parallel()
	const planJSON = `{
	  "format_version": "1.2",
	  "planned_values": {
	    "outputs": {
	      "endpoint": {"value": "db.vpc-old:5432"}, "vpc": {"value": "vpc-old"},
	      "name": {"value": "db"}, "port": {"value": 5432}, "via_local": {"value": "x"}
	    },
	    "root_module": {"resources": [
	      {"address": "data.sponson_outputs.net", "mode": "data", "type": "sponson_outputs", "name": "net",
	       "values": {"stack_name": "acme//stacks/network", "read_scope": "pr-7", "provisional": ["vpc_id"]}},
	      {"address": "terraform_data.db", "mode": "managed", "type": "terraform_data", "name": "db", "values": {}}
	    ]}
	  },
	  "configuration": {"root_module": {
	    "outputs": {
	      "endpoint": {"expression": {"references": ["terraform_data.db.output", "terraform_data.db"]}},
	      "vpc": {"expression": {"references": ["data.sponson_outputs.net.values.vpc_id", "data.sponson_outputs.net.values", "data.sponson_outputs.net"]}},
	      "name": {"expression": {"constant_value": "db"}},
	      "port": {"expression": {"references": ["var.port"]}},
	      "via_local": {"expression": {"references": ["local.x"]}}
	    },
	    "resources": [
	      {"address": "data.sponson_outputs.net", "mode": "data", "type": "sponson_outputs", "name": "net", "expressions": {"stack": {"constant_value": "../network"}}},
	      {"address": "terraform_data.db", "mode": "managed", "type": "terraform_data", "name": "db",
	       "expressions": {"input": {"references": ["data.sponson_outputs.net.values.vpc_id", "data.sponson_outputs.net"]}}}
	    ]
	  }}
	}`
	var p tfjson.Plan
	if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
		t.Fatal(err)
	}
	got, err := stackoutputs.FromPlan(store.Key{Stack: "acme//stacks/database", Environment: "preview", Scope: "pr-7"}, &p)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"endpoint", "via_local", "vpc"}; !slices.Equal(got.Unknown, want) {
		t.Errorf("provisional outputs %v, want %v", got.Unknown, want)
	}
	for _, name := range []string{"name", "port"} {
		if _, ok := got.Outputs[name]; !ok {
			t.Errorf("output %s, which owes nothing to network, is not handed on: %v", name, got.Outputs)
		}
	}
	// The review marks the changes of what derives from it.
	derived := stackoutputs.ProvisionalObjects(&p)
	if derived == nil || !derived("terraform_data.db") || !derived("terraform_data.db[0]") || derived("terraform_data.other") {
		t.Errorf("ProvisionalObjects does not mark terraform_data.db alone")
	}
	// Without a provisional read nothing is derived.
	p.PlannedValues.RootModule.Resources[0].AttributeValues["provisional"] = []any{}
	if stackoutputs.ProvisionalObjects(&p) != nil || stackoutputs.ProvisionalObjects(nil) != nil {
		t.Errorf("ProvisionalObjects marks changes without a provisional read")
	}
	if got, _ := stackoutputs.FromPlan(store.Key{}, &p); len(got.Unknown) != 0 || len(got.Outputs) != 5 {
		t.Errorf("without a provisional read: unknown %v, outputs %d", got.Unknown, len(got.Outputs))
	}
}

// An output of another stack that nobody reads is not marked provisional
// (issue 49): ReadOutputs keeps the provisional outputs the configuration
// names, all of them when it takes the outputs whole or reads a local.
func TestReadOutputs(t *testing.T) {
	t.Parallel()
	plan := func(refs ...[]string) *tfjson.Plan {
		p := &tfjson.Plan{Config: &tfjson.Config{RootModule: &tfjson.ConfigModule{Outputs: map[string]*tfjson.ConfigOutput{}}}}
		for i, r := range refs {
			p.Config.RootModule.Resources = append(p.Config.RootModule.Resources, &tfjson.ConfigResource{
				Address: fmt.Sprintf("terraform_data.r%d", i), Mode: tfjson.ManagedResourceMode,
				Expressions: map[string]*tfjson.Expression{"input": {ExpressionData: &tfjson.ExpressionData{References: r}}},
			})
		}
		return p
	}
	const net = "data.sponson_outputs.net"
	names := []string{"cidr", "unused", "vpc_id"}
	for _, tc := range []struct {
		name string
		p    *tfjson.Plan
		want []string
	}{
		{"one output by name", plan([]string{net + ".values.vpc_id", net + ".values", net}), []string{"vpc_id"}},
		{"by index, sensitive, of an instance", plan([]string{net + `.values["cidr"]`, net + ".values", net}, []string{net + "[0].sensitive_values.vpc_id.x", net + "[0].sensitive_values", net + "[0]"}), []string{"cidr", "vpc_id"}},
		{"another attribute reads no output", plan([]string{net + ".read_scope", net}, []string{"data.sponson_outputs.other.values.cidr", "data.sponson_outputs.other.values", "data.sponson_outputs.other"}), []string{}},
		{"the values whole", plan([]string{net + ".values", net}), names},
		{"whole beside one by name", plan([]string{net + ".values", net, net + ".values.cidr", net + ".values", net}), names},
		{"through a local", plan([]string{"local.x"}), names},
		{"no configuration", &tfjson.Plan{}, names},
	} {
		if got := stackoutputs.ReadOutputs(tc.p, net, names); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ReadOutputs = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Outputs and module calls read too.
	p := plan()
	p.Config.RootModule.Outputs["o"] = &tfjson.ConfigOutput{Expression: &tfjson.Expression{ExpressionData: &tfjson.ExpressionData{References: []string{net + ".values.cidr", net + ".values", net}}}}
	p.Config.RootModule.ModuleCalls = map[string]*tfjson.ModuleCall{"m": {Expressions: map[string]*tfjson.Expression{"vpc": {ExpressionData: &tfjson.ExpressionData{References: []string{net + ".values.vpc_id", net + ".values", net}}}}}}
	if got := stackoutputs.ReadOutputs(p, net, names); !slices.Equal(got, []string{"cidr", "vpc_id"}) {
		t.Errorf("through an output and a module call: ReadOutputs = %v, want [cidr vpc_id]", got)
	}
}
