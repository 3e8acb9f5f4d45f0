package objectstore

import (
	"testing"
)

func TestCutBody(t *testing.T) {
	t.Parallel()
	id := scopeID(k1)
	for rest, want := range map[string]string{
		id + "/state/a.tfstate.sealed": id + " state/a.tfstate.sealed",
		id + "/owners/b.json":          id + " owners/b.json",
		id + "/records/scope.c.json":   id + " records/scope.c.json",
		id + "/receipts/run.d.json":    "",
		id + "/quarantine/run.tfstate": "",
		".owners.bin.gz":               "",
	} {
		got := ""
		if i, n, ok := cutBody(rest); ok {
			got = i + " " + n
		}
		if got != want {
			t.Errorf("cutBody(%q) = %q, want %q", rest, got, want)
		}
	}
}
