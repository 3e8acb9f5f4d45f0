package ownership

import (
	"errors"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// TestMayChangeSchemes: schemes set by trusted rules move only forward, and
// only by trusted rules.
func TestMayChangeSchemes(t *testing.T) {
	t.Parallel()
	// history: a → b → c; x is on another line.
	parents := map[string]string{"b": "a", "c": "b"}
	isAncestor := func(a, b string) (bool, error) {
		if a == "gone" || b == "gone" {
			return false, errors.New("unknown commit")
		}
		for c := b; c != ""; c = parents[c] {
			if c == a {
				return true, nil
			}
		}
		return false, nil
	}
	trusted := func(c string) Origin { return Origin{Commit: c, Trusted: true} }
	for _, tc := range []struct {
		name     string
		was, now Origin
		want     errcode.Code // "" allowed
	}{
		{"never recorded", Origin{}, trusted("a"), ""},
		{"set by a local run, moved by a local run", Origin{}, Origin{}, ""},
		{"set by trusted rules, moved by a local run", trusted("a"), Origin{}, errcode.RulesUntrusted},
		{"forward", trusted("a"), trusted("c"), ""},
		{"same commit", trusted("b"), trusted("b"), ""},
		{"back", trusted("c"), trusted("a"), errcode.RulesStale},
		{"another line", trusted("c"), trusted("x"), errcode.RulesStale},
		{"unknown to the clone", trusted("gone"), trusted("c"), errcode.RulesStale},
		{"trusted rules of unknown commit", trusted("c"), trusted(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := MayChangeSchemes("preview", tc.was, tc.now, isAncestor)
			if tc.want == "" && err != nil || tc.want != "" && !errcode.Is(err, tc.want) {
				t.Errorf("MayChangeSchemes(%+v, %+v) = %v, want %q", tc.was, tc.now, err, tc.want)
			}
		})
	}
}

func TestOriginRoundTrip(t *testing.T) {
	t.Parallel()
	o := Origin{Commit: "abc", Trusted: true}
	got, err := ParseOrigin(EncodeOrigin(o))
	if err != nil || got != o {
		t.Errorf("ParseOrigin(EncodeOrigin(%+v)) = %+v, %v", o, got, err)
	}
	if got, err := ParseOrigin(nil); err != nil || got != (Origin{}) {
		t.Errorf("ParseOrigin(nil) = %+v, %v", got, err)
	}
}
