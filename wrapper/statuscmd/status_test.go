package statuscmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// TestStatusTableNamesMoves: the scope a renamed stack's state left says
// where it went (else it reads as an applied scope that owns nothing), and
// the scope it reached says where it came from.
func TestStatusTableNamesMoves(t *testing.T) {
	t.Parallel()
	last := cmdutil.Summarize(&receipt.Receipt{Command: "apply", Status: receipt.StatusApplied, FinishedAt: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)})
	var out bytes.Buffer
	WriteStatusTable(&out, []ScopeStatus{
		{Stack: "github.com/acme/infra//stacks/docs", Scope: "main", LastRun: last, MovedTo: "github.com/acme/infra//stacks/documentation"},
		{Stack: "github.com/acme/infra//stacks/documentation", Scope: "main", LastRun: last, Owns: 3, MovedFrom: "github.com/acme/infra//stacks/docs"},
	})
	for _, want := range []string{
		"↳ moved to stack github.com/acme/infra//stacks/documentation: its state and resources are that stack's now",
		"↳ moved from stack github.com/acme/infra//stacks/docs",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}
