package tfstate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Addr
	}{
		{"a_b.c", Addr{Mode: "managed", Type: "a_b", Name: "c"}},
		{`fixture_object.o["a.b]c"]`, Addr{Mode: "managed", Type: "fixture_object", Name: "o", Key: "a.b]c", HasKey: true}},
		{"x.y[3]", Addr{Mode: "managed", Type: "x", Name: "y", Key: 3.0, HasKey: true}},
		{`module.m["k"].module.n.data.t.r`, Addr{Module: `module.m["k"].module.n`, Mode: "data", Type: "t", Name: "r"}},
		{"module.m", Addr{Module: "module.m"}},
	} {
		got, err := ParseAddr(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
		if got.String() != tc.in {
			t.Errorf("%s renders as %s", tc.in, got)
		}
	}
	for _, bad := range []string{"", "x", "x.", "x.y[", `x.y["a]`, "x.y.z", "module.", "x.y[z]"} {
		if _, err := ParseAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
