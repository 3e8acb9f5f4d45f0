package ownership

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"pgregory.net/rapid"
)

// TestPropertyIdentityFromPlanEqualsState (issue 12 item 2): for random
// values of random types, an object's identity is the same computed from a
// plan as from a state, whichever parts of the attribute's schema type are
// dynamic. The plan JSON renders a value with its own type (as OpenTofu's
// jsonplan does), the state with the schema's type, which wraps every
// dynamically typed part as {"value", "type"}.
//
//	go test -run PropertyIdentityFromPlan ./internal/ownership/ -rapid.checks=10000
func TestPropertyIdentityFromPlanEqualsState(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		typ := genType(t, 3)
		val := genValue(t, typ, 3)
		schema := genSchema(t, typ)
		planJSON, err := ctyjson.Marshal(val, typ)
		if err != nil {
			t.Fatalf("marshal for the plan: %v", err)
		}
		stateJSON, err := ctyjson.Marshal(val, schema)
		if err != nil {
			t.Fatalf("marshal for the state: %v", err)
		}
		doc := fmt.Sprintf(`{"format_version":"1.2","resource_changes":[{"address":"terraform_data.d","mode":"managed","type":"terraform_data","name":"d","provider_name":"terraform.io/builtin/terraform",
"change":{"actions":["create"],"before":null,"after":{"input":%s,"id":null},"after_unknown":{"id":true}}}]}`, planJSON)
		var plan tfjson.Plan
		if err := json.Unmarshal([]byte(doc), &plan); err != nil {
			t.Fatalf("plan JSON: %v\n%s", err, doc)
		}
		pol := Policy{Identity: map[string][]string{"terraform_data": {"input"}}}
		planned := Identify(&plan, pol)
		var attrs map[string]any
		if err := json.Unmarshal([]byte(`{"id":"x","input":`+string(stateJSON)+`}`), &attrs); err != nil {
			t.Fatal(err)
		}
		fromState := pol.identityOf(Object{Address: "terraform_data.d", Provider: "terraform.io/builtin/terraform", Type: "terraform_data", ID: "x", Attributes: attrs})
		if planned[0].Identity != fromState {
			t.Fatalf("type %s, schema %s:\nplan  %s -> %s\nstate %s -> %s", typ.FriendlyName(), schema.FriendlyName(), planJSON, planned[0].Identity, stateJSON, fromState)
		}
	})
}

func genType(t *rapid.T, depth int) cty.Type {
	prims := []cty.Type{cty.String, cty.Number, cty.Bool}
	kind := rapid.IntRange(0, 8).Draw(t, "kind")
	if depth == 0 || kind < 3 {
		return prims[rapid.IntRange(0, 2).Draw(t, "prim")]
	}
	switch kind {
	case 3:
		return cty.List(genType(t, depth-1))
	case 4:
		return cty.Map(genType(t, depth-1))
	case 5:
		return cty.Set(genType(t, depth-1))
	case 6:
		n := rapid.IntRange(0, 3).Draw(t, "tuple")
		ts := make([]cty.Type, n)
		for i := range ts {
			ts[i] = genType(t, depth-1)
		}
		return cty.Tuple(ts)
	default:
		// Attribute names include the wrapper's own keys, so that objects
		// shaped like a wrapper are generated too.
		names := rapid.SliceOfDistinct(rapid.SampledFrom([]string{"type", "value", "name", "id", "x"}), rapid.ID[string]).Draw(t, "attrs")
		ats := map[string]cty.Type{}
		for _, n := range names {
			ats[n] = genType(t, depth-1)
		}
		return cty.Object(ats)
	}
}

func genValue(t *rapid.T, typ cty.Type, depth int) cty.Value {
	if rapid.IntRange(0, 9).Draw(t, "null") == 0 {
		return cty.NullVal(typ)
	}
	switch {
	case typ == cty.String:
		return cty.StringVal(rapid.SampledFrom([]string{"", "x", "same", "string", "number", `{"a":1}`, "é,=|"}).Draw(t, "s"))
	case typ == cty.Number:
		if rapid.Bool().Draw(t, "big") {
			return cty.NumberVal(new(big.Float).SetInt64(rapid.Int64().Draw(t, "i")))
		}
		return cty.NumberFloatVal(rapid.Float64Range(-1e6, 1e6).Draw(t, "f"))
	case typ == cty.Bool:
		return cty.BoolVal(rapid.Bool().Draw(t, "b"))
	case typ.IsListType(), typ.IsSetType():
		n := rapid.IntRange(0, 3).Draw(t, "n")
		if n == 0 {
			if typ.IsListType() {
				return cty.ListValEmpty(typ.ElementType())
			}
			return cty.SetValEmpty(typ.ElementType())
		}
		vs := make([]cty.Value, n)
		for i := range vs {
			vs[i] = genValue(t, typ.ElementType(), depth-1)
		}
		if typ.IsListType() {
			return cty.ListVal(vs)
		}
		return cty.SetVal(vs)
	case typ.IsMapType():
		n := rapid.IntRange(0, 3).Draw(t, "n")
		if n == 0 {
			return cty.MapValEmpty(typ.ElementType())
		}
		vs := map[string]cty.Value{}
		for i := range n {
			vs[fmt.Sprintf("k%d", i)] = genValue(t, typ.ElementType(), depth-1)
		}
		return cty.MapVal(vs)
	case typ.IsTupleType():
		ets := typ.TupleElementTypes()
		if len(ets) == 0 {
			return cty.EmptyTupleVal
		}
		vs := make([]cty.Value, len(ets))
		for i, et := range ets {
			vs[i] = genValue(t, et, depth-1)
		}
		return cty.TupleVal(vs)
	default:
		ats := typ.AttributeTypes()
		if len(ats) == 0 {
			return cty.EmptyObjectVal
		}
		vs := map[string]cty.Value{}
		for n, at := range ats {
			vs[n] = genValue(t, at, depth-1)
		}
		return cty.ObjectVal(vs)
	}
}

// genSchema returns typ with random parts made dynamic, the way a
// provider's schema may declare them.
func genSchema(t *rapid.T, typ cty.Type) cty.Type {
	if rapid.IntRange(0, 3).Draw(t, "dynamic") == 0 {
		return cty.DynamicPseudoType
	}
	switch {
	case typ.IsListType():
		return cty.List(genSchema(t, typ.ElementType()))
	case typ.IsMapType():
		return cty.Map(genSchema(t, typ.ElementType()))
	case typ.IsTupleType():
		ets := typ.TupleElementTypes()
		out := make([]cty.Type, len(ets))
		for i, et := range ets {
			out[i] = genSchema(t, et)
		}
		return cty.Tuple(out)
	case typ.IsObjectType():
		out := map[string]cty.Type{}
		for n, at := range typ.AttributeTypes() {
			out[n] = genSchema(t, at)
		}
		return cty.Object(out)
	}
	return typ
}

// TestSensitiveIdentityHashed: a sensitive identifying value is a keyed
// hash in the identity, the same from the plan and from the state, and
// never the value itself.
func TestSensitiveIdentityHashed(t *testing.T) {
	t.Parallel()
	key := NewHashKey()
	doc := `{"format_version":"1.2","resource_changes":[{"address":"terraform_data.s","mode":"managed","type":"terraform_data","name":"s","provider_name":"terraform.io/builtin/terraform",
"change":{"actions":["create"],"before":null,"after":{"input":"hunter2","id":null},"after_unknown":{"id":true},"after_sensitive":{"input":true}}}]}`
	var plan tfjson.Plan
	if err := json.Unmarshal([]byte(doc), &plan); err != nil {
		t.Fatal(err)
	}
	pol := PolicyFromPlan(&plan)
	pol.Identity = map[string][]string{"terraform_data": {"input"}}
	if !pol.NeedsHashKey(&plan) {
		t.Fatal("NeedsHashKey is false for a sensitive identifying value")
	}
	pol.HashKey = key
	fromPlan := Identify(&plan, pol)[0].Identity
	obj := Object{Address: "terraform_data.s", Provider: "terraform.io/builtin/terraform", Type: "terraform_data", ID: "x",
		Attributes: map[string]any{"id": "x", "input": map[string]any{"value": "hunter2", "type": "string"}}}
	withoutPlan := Policy{Identity: pol.Identity, HashKey: key}
	obj.Sensitive = map[string]bool{"input": true}
	for what, got := range map[string]string{"plan": fromPlan, "state (marked by the plan)": pol.IdentityOf(Object{Address: obj.Address, Provider: obj.Provider, Type: obj.Type, ID: obj.ID, Attributes: obj.Attributes}), "state (marked by the state)": withoutPlan.IdentityOf(obj)} {
		if !strings.Contains(got, "|input=hmac:") || strings.Contains(got, "hunter2") || got != fromPlan {
			t.Errorf("from the %s: %q (plan: %q)", what, got, fromPlan)
		}
	}
	other := Policy{Identity: pol.Identity, HashKey: NewHashKey()}
	if other.IdentityOf(obj) == fromPlan {
		t.Error("another key gives the same hash")
	}
}
