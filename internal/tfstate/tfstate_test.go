package tfstate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
)

const doc = `{"version":4,"lineage":"L","serial":7,"outputs":{"url":{"value":"https://x","type":"string"}},
"check_results":[],"resources":[
 {"mode":"managed","type":"t","name":"a","provider":"provider[\"example.com/x/t\"]","instances":[
  {"index_key":"k1","attributes":{"id":"1","secret":"s"},"sensitive_attributes":[[{"type":"get_attr","value":"secret"}]]},
  {"index_key":"k2","attributes":{"id":"2"}}]},
 {"module":"module.m","mode":"managed","type":"t","name":"b","provider":"provider[\"example.com/x/t\"]","instances":[{"attributes":{"id":"3"}}]},
 {"mode":"data","type":"d","name":"r","instances":[{"attributes":{"id":"4"}}]}]}`

func TestReadState(t *testing.T) {
	t.Parallel()
	m, err := tfstate.ReadMeta([]byte(doc))
	if err != nil || m != (tfstate.Meta{Lineage: "L", Serial: 7}) {
		t.Errorf("ReadMeta = %+v, %v", m, err)
	}
	out, err := tfstate.ReadOutputs([]byte(doc))
	if err != nil || out.Serial != 7 || !out.Holds || string(out.Outputs["url"].Value) != `"https://x"` {
		t.Errorf("ReadOutputs = %+v, %v", out, err)
	}
	if out, err := tfstate.ReadOutputs(nil); err != nil || out.Holds || out.Outputs == nil {
		t.Errorf("ReadOutputs(nil) = %+v, %v", out, err)
	}
	objs, err := tfstate.Objects([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, o := range objs {
		addrs = append(addrs, o.Address+" "+o.Provider+" "+o.ID)
	}
	want := []string{`module.m.t.b example.com/x/t 3`, `t.a["k1"] example.com/x/t 1`, `t.a["k2"] example.com/x/t 2`}
	if d := cmp.Diff(want, addrs); d != "" {
		t.Errorf("Objects (-want +got):\n%s", d)
	}
	if !objs[1].Sensitive["secret"] || objs[2].Sensitive != nil {
		t.Errorf("sensitive: %v, %v", objs[1].Sensitive, objs[2].Sensitive)
	}
	if _, err := tfstate.Objects([]byte("{")); err == nil {
		t.Error("Objects of a damaged state: no error")
	}
}

func TestEmptied(t *testing.T) {
	t.Parallel()
	b, err := tfstate.Emptied([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := tfstate.Parse(b)
	if d["serial"] != 8.0 || d["lineage"] != "L" || len(d.Resources()) != 0 || len(d["outputs"].(map[string]any)) != 0 || d["check_results"] != nil {
		t.Errorf("Emptied:\n%s", b)
	}
	if b, err := tfstate.Emptied(nil); b != nil || err != nil {
		t.Errorf("Emptied(nil) = %q, %v", b, err)
	}
}

func TestRemoveAndMove(t *testing.T) {
	t.Parallel()
	addr := func(s string) tfstate.Addr {
		a, err := tfstate.ParseAddr(s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	list := func(d tfstate.Doc) []string {
		var out []string
		for _, i := range d.Instances() {
			out = append(out, i.Addr.String())
		}
		return out
	}
	d, _ := tfstate.Parse([]byte(doc))
	removed, err := d.Remove([]tfstate.Addr{addr(`t.a["k2"]`), addr("module.m")})
	if err != nil || len(removed) != 2 {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	if diff := cmp.Diff([]string{`t.a["k1"]`, "data.d.r"}, list(d)); diff != "" {
		t.Errorf("after Remove (-want +got):\n%s", diff)
	}
	if _, err := d.Remove([]tfstate.Addr{addr("t.none")}); err == nil {
		t.Error("Remove of nothing: no error")
	}
	moved, err := d.Move(addr("t.a"), addr("t.c"))
	if err != nil || moved[`t.a["k1"]`] != `t.c["k1"]` {
		t.Fatalf("Move of a resource = %v, %v", moved, err)
	}
	moved, err = d.Move(addr(`t.c["k1"]`), addr(`t.c["k9"]`))
	if err != nil || moved[`t.c["k1"]`] != `t.c["k9"]` {
		t.Fatalf("Move of an instance = %v, %v", moved, err)
	}
	if diff := cmp.Diff([]string{`t.c["k9"]`, "data.d.r"}, list(d)); diff != "" {
		t.Errorf("after Move (-want +got):\n%s", diff)
	}
	if _, err := d.Move(addr(`t.c["k9"]`), addr(`t.c["k9"]`)); err == nil {
		t.Error("Move onto an instance in the state: no error")
	}
}

// TestPutAndParseExact: an instance put into a document is read back at
// its address with its provider, beside an existing resource's instances
// or in a new resource; a number past 2^53 survives the round trip.
func TestPutAndParseExact(t *testing.T) {
	t.Parallel()
	big := `{"version":4,"lineage":"L","serial":7,"resources":[
 {"mode":"managed","type":"t","name":"a","provider":"provider[\"example.com/x/t\"]","instances":[
  {"index_key":0,"attributes":{"id":"1","n":9007199254740993}}]}]}`
	d, err := tfstate.ParseExact([]byte(big))
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) tfstate.Addr {
		a, err := tfstate.ParseAddr(s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if err := d.Put(at("t.a[1]"), "example.com/x/t", 0, map[string]any{"id": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(at(`module.m.u.b["k"]`), "example.com/x/u", 2, map[string]any{"id": "3"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(at("t.a[0]"), "example.com/x/t", 0, map[string]any{"id": "4"}); err == nil {
		t.Error("a second instance at t.a[0] was put")
	}
	data, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := tfstate.Objects(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Address+" "+o.Provider+" "+o.ID)
	}
	want := []string{`module.m.u.b["k"] example.com/x/u 3`, "t.a[0] example.com/x/t 1", "t.a[1] example.com/x/t 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(data), "9007199254740993") || !strings.Contains(string(data), `"serial": 8`) {
		t.Errorf("the document changed a number or missed its serial:\n%s", data)
	}
}
