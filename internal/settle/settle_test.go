package settle_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"
	"pgregory.net/rapid"

	"github.com/sponson/terraform-provider-sponson/internal/settle"
)

const (
	builtin = "terraform.io/builtin/terraform"
	random  = "registry.opentofu.org/hashicorp/random"
)

// TestDecideNeverAdoptsPartly: over every type of the table and ones it
// does not name, with any subset of the arguments known to the plan, an
// object is adopted only by a way that makes it whole; what is not
// adopted is dropped exactly when it is state-only, else asked of a
// person, always with a reason.
func TestDecideNeverAdoptsPartly(t *testing.T) {
	t.Parallel()
	types := []struct{ provider, typ string }{
		{builtin, "terraform_data"}, {"registry.terraform.io/hashicorp/null", "null_resource"},
		{random, "random_string"}, {random, "random_pet"}, {random, "random_password"}, {random, "random_integer"},
		{"hashicorp/tls", "tls_private_key"}, {"hashicorp/time", "time_static"}, {"hashicorp/local", "local_file"},
		{"hashicorp/aws", "aws_s3_bucket"}, {"acme/things", "thing"},
	}
	rapid.Check(t, func(t *rapid.T) {
		ty := rapid.SampledFrom(types).Draw(t, "type")
		stateOnly := rapid.Bool().Draw(t, "stateOnly")
		r := settle.Of(ty.provider, ty.typ, stateOnly)
		recorded := map[string]json.RawMessage{}
		for _, a := range r.Args {
			if rapid.Bool().Draw(t, "known "+a) {
				recorded[a] = json.RawMessage(`"v"`)
			}
		}
		action, why := settle.Decide(settle.Known{Restore: r, Recorded: recorded, StateOnly: stateOnly})
		switch action {
		case settle.Adopt:
			if r.Way != settle.ImportRead && r.Way != settle.ImportPlanned && r.Way != settle.Write {
				t.Fatalf("%s adopted by way %s", ty.typ, r.Way)
			}
			if missing := r.Missing(recorded); len(missing) > 0 {
				t.Fatalf("%s adopted without %v", ty.typ, missing)
			}
		case settle.Drop:
			if !stateOnly || why == "" {
				t.Fatalf("%s dropped (state only %v) for %q", ty.typ, stateOnly, why)
			}
		case settle.Ask:
			if stateOnly || why == "" {
				t.Fatalf("%s asked (state only %v) for %q", ty.typ, stateOnly, why)
			}
		default:
			t.Fatalf("action %q", action)
		}
	})
}

// TestTable: the types issue 48 names take the way the design's table
// says.
func TestTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		provider, typ string
		stateOnly     bool
		want          settle.Way
	}{
		{builtin, "terraform_data", true, settle.ImportPlanned},
		{"registry.opentofu.org/hashicorp/null", "null_resource", true, settle.Write},
		{random, "random_pet", true, settle.Write},
		{random, "random_string", true, settle.ImportPlanned},
		{random, "random_uuid", true, settle.ImportPlanned},
		{random, "random_integer", true, settle.ImportPlanned},
		{random, "random_password", true, settle.Nothing},
		{random, "random_id", true, settle.ImportPlanned},
		{"registry.terraform.io/hashicorp/tls", "tls_private_key", true, settle.Nothing},
		{"registry.terraform.io/hashicorp/time", "time_static", true, settle.ImportPlanned},
		{"registry.terraform.io/hashicorp/local", "local_file", false, settle.InPlace},
		{"registry.terraform.io/hashicorp/aws", "aws_s3_bucket", false, settle.ImportRead},
		{"registry.terraform.io/acme/things", "thing", true, settle.Nothing},
	} {
		if got := settle.Of(c.provider, c.typ, c.stateOnly).Way; got != c.want {
			t.Errorf("%s: %s, want %s", c.typ, got, c.want)
		}
	}
}

// TestRecordKeepsWhatThePlanKnew: known values are recorded as JSON, nulls
// included; unknown and sensitive ones are left out.
func TestRecordKeepsWhatThePlanKnew(t *testing.T) {
	t.Parallel()
	ch := &tfjson.Change{
		After:          map[string]any{"input": "/out/made-0", "triggers_replace": nil, "output": nil, "id": nil},
		AfterUnknown:   map[string]any{"output": true, "id": true},
		AfterSensitive: map[string]any{},
	}
	got := settle.Record(builtin, "terraform_data", ch)
	want := map[string]json.RawMessage{"input": json.RawMessage(`"/out/made-0"`), "triggers_replace": json.RawMessage(`null`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	ch.AfterUnknown = map[string]any{"input": true}
	ch.AfterSensitive = map[string]any{"triggers_replace": true}
	if got := settle.Record(builtin, "terraform_data", ch); len(got) != 0 {
		t.Errorf("recorded %v of an unknown input and a sensitive trigger", got)
	}
	ch.AfterUnknown = map[string]any{"keepers": map[string]any{"k": true}}
	ch.After = map[string]any{"keepers": map[string]any{"k": nil}, "length": 8.0}
	if got := settle.Record(random, "random_string", ch); got["keepers"] != nil {
		t.Errorf("recorded keepers with an unknown element: %s", got["keepers"])
	}
	if got := settle.Record("hashicorp/aws", "aws_s3_bucket", ch); got != nil {
		t.Errorf("recorded %v for a type read back by its import", got)
	}
}

// TestOverlayIsWhatTheCreateWrote: terraform_data's arguments over its
// import (which restores only the id), its output its input, every
// dynamic value with its type, as the engine writes them.
func TestOverlayIsWhatTheCreateWrote(t *testing.T) {
	t.Parallel()
	r := settle.Of(builtin, "terraform_data", true)
	imported := map[string]any{"id": "abc", "input": nil, "output": nil, "triggers_replace": nil}
	recorded := map[string]json.RawMessage{"input": json.RawMessage(`"/out/made-1"`), "triggers_replace": json.RawMessage(`1`)}
	got := r.Overlay(imported, recorded)
	want := map[string]any{
		"id":               "abc",
		"input":            map[string]any{"value": "/out/made-1", "type": "string"},
		"output":           map[string]any{"value": "/out/made-1", "type": "string"},
		"triggers_replace": map[string]any{"value": json.Number("1"), "type": "number"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("overlay (-want +got):\n%s", diff)
	}
	if imported["input"] != nil {
		t.Error("the overlay changed the imported attributes it was given")
	}
}

// TestOverlayKeepsValues: any JSON value recorded comes back unchanged
// (numbers past 2^53 to the digit), wrapped with a type where dynamic.
func TestOverlayKeepsValues(t *testing.T) {
	t.Parallel()
	value := rapid.Deferred(func() *rapid.Generator[any] { return jsonValue(3) })
	rapid.Check(t, func(t *rapid.T) {
		v := value.Draw(t, "value")
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			typ, arg string
			dynamic  bool
		}{{"terraform_data", "input", true}, {"random_string", "keepers", false}} {
			provider := builtin
			if !c.dynamic {
				provider = random
			}
			out := settle.Of(provider, c.typ, true).Overlay(nil, map[string]json.RawMessage{c.arg: raw})
			got := out[c.arg]
			if c.dynamic && v != nil {
				w, ok := got.(map[string]any)
				if !ok || w["type"] == nil {
					t.Fatalf("%s: %v not wrapped with its type", c.typ, got)
				}
				got = w["value"]
			}
			back, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(back) != string(raw) {
				t.Fatalf("%s: %s came back as %s", c.typ, raw, back)
			}
		}
	})
}

func jsonValue(depth int) *rapid.Generator[any] {
	scalars := []*rapid.Generator[any]{
		rapid.Just[any](nil),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Int64(), func(n int64) any { return json.Number(strconv.FormatInt(n, 10)) }),
	}
	if depth == 0 {
		return rapid.OneOf(scalars...)
	}
	inner := jsonValue(depth - 1)
	return rapid.OneOf(append(slices.Clone(scalars),
		rapid.Map(rapid.SliceOfN(inner, 0, 3), func(l []any) any { return l }),
		rapid.Map(rapid.MapOfN(rapid.StringMatching(`[a-z]{1,4}`), inner, 0, 3), func(m map[string]any) any { return m }),
	)...)
}

// TestImportID: random_integer is imported as "result,min,max[,seed]".
func TestImportID(t *testing.T) {
	t.Parallel()
	r := settle.Of(random, "random_integer", true)
	rec := map[string]json.RawMessage{"min": json.RawMessage(`1`), "max": json.RawMessage(`1000000`), "seed": json.RawMessage(`null`)}
	if id, ok := r.ImportID("4711", rec); !ok || id != "4711,1,1000000" {
		t.Errorf("random_integer: %q %v", id, ok)
	}
	rec["seed"] = json.RawMessage(`"s"`)
	if id, ok := r.ImportID("4711", rec); !ok || id != "4711,1,1000000,s" {
		t.Errorf("random_integer with a seed: %q %v", id, ok)
	}
	if _, ok := r.ImportID("4711", nil); ok {
		t.Error("random_integer without min and max: an import id")
	}
	rid := settle.Of(random, "random_id", true)
	if id, ok := rid.ImportID("p-9hUg", map[string]json.RawMessage{"prefix": json.RawMessage(`"srv-"`)}); !ok || id != "srv-,p-9hUg" {
		t.Errorf("random_id with a prefix: %q %v", id, ok)
	}
	if id, ok := rid.ImportID("p-9hUg", map[string]json.RawMessage{"prefix": json.RawMessage(`null`)}); !ok || id != "p-9hUg" {
		t.Errorf("random_id without a prefix: %q %v", id, ok)
	}
	if id, ok := settle.Of(random, "random_string", true).ImportID("xyz", nil); !ok || id != "xyz" {
		t.Errorf("random_string: %q %v", id, ok)
	}
}

// TestRerun: a create left to the next apply says its provisioners run
// again when it may have started, with what is known of them.
func TestRerun(t *testing.T) {
	t.Parallel()
	if s := settle.Rerun("a.b", false, false, false); s != "" {
		t.Errorf("without provisioners: %q", s)
	}
	if s := settle.Rerun("a.b", true, true, true); s != "" {
		t.Errorf("not started: %q", s)
	}
	if s := settle.Rerun("a.b", true, true, false); !strings.Contains(s, "had started") || !strings.Contains(s, "a.b") {
		t.Errorf("started: %q", s)
	}
	if s := settle.Rerun("a.b", true, false, false); !strings.Contains(s, "may have started") {
		t.Errorf("maybe started: %q", s)
	}
}
