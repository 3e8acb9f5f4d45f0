package errcode_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// TestDocsAreCurrent fails when docs/errors.md no longer matches the table:
// run `make generate`.
func TestDocsAreCurrent(t *testing.T) {
	t.Parallel()
	got, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatalf("reading the error reference: %v (run `make generate`)", err)
	}
	if diff := cmp.Diff(errcode.Markdown(), string(got)); diff != "" {
		t.Errorf("docs/errors.md is stale; run `make generate` (-want +got):\n%s", diff)
	}
}
