package savedplan_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

func sample() *savedplan.File {
	return &savedplan.File{
		Meta: savedplan.Meta{
			RunID: "run-1", CreatedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Environment: "preview", Scope: "pr-1",
			Commit: "abc", State: savedplan.Mark("pr-1", []byte(`{"lineage":"l-1","serial":4}`)),
			Touches: []savedplan.Touch{{Address: "a.b", Identity: "id", Actions: []string{"create"}}},
			Owners:  []store.Owner{{Scope: "main", Identity: "x", RunID: "run-0"}},
		},
		Plan: []byte("PK\x03\x04 the engine's zip"),
	}
}

func TestRoundTripAndMode(t *testing.T) {
	t.Parallel()
	for _, key := range [][]byte{nil, []byte("0123456789abcdef")} {
		path := filepath.Join(t.TempDir(), "p.tfplan")
		if err := savedplan.Write(path, sample(), key); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600", fi.Mode().Perm())
		}
		got, err := savedplan.Read(path, key)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sample(), got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if m := got.Meta.State; m.Lineage != "l-1" || m.Serial != 4 || m.Digest == "" {
			t.Errorf("state mark %+v", m)
		}
	}
}

// TestDamageRefused: every truncation and every changed byte is refused as
// PLAN_CORRUPT, with and without a key.
func TestDamageRefused(t *testing.T) {
	t.Parallel()
	for _, key := range [][]byte{nil, []byte("0123456789abcdef")} {
		data, err := savedplan.Encode(sample(), key)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, b []byte) {
			t.Helper()
			if _, err := savedplan.Decode(b, key); errcode.As(err).Code != errcode.PlanCorrupt {
				t.Errorf("%s: error %v, want PLAN_CORRUPT", what, err)
			}
		}
		for n := 0; n < len(data); n++ {
			check("truncated", data[:n])
		}
		for i := range data {
			b := append([]byte(nil), data...)
			b[i] ^= 0x01
			check("flipped", b)
		}
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := []byte("0123456789abcdef"), []byte("fedcba9876543210")
	keyed, _ := savedplan.Encode(sample(), k1)
	plain, _ := savedplan.Encode(sample(), nil)
	for _, tc := range []struct {
		name string
		data []byte
		key  []byte
	}{
		{"keyed, no key", keyed, nil},
		{"keyed, other key", keyed, k2},
		{"plain, key set", plain, k1},
	} {
		if _, err := savedplan.Decode(tc.data, tc.key); errcode.As(err).Code != errcode.PlanCorrupt {
			t.Errorf("%s: error %v", tc.name, err)
		}
	}
	if _, err := savedplan.Key(func(string) string { return "zz" }); err == nil {
		t.Errorf("a bad key was accepted")
	}
}
