package scoperun

import (
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// A scope whose state was promised to another stack runs no more: while
// the move is unfinished (its ledger still listed) and after it.
func TestRefuseMoved(t *testing.T) {
	t.Parallel()
	prev := receipt.First("acme//stacks/docs", "preview", "main")
	if err := refuseMoved(prev); err != nil {
		t.Errorf("a scope not moved: %v", err)
	}
	if err := refuseMoved(nil); err != nil {
		t.Errorf("a new scope: %v", err)
	}
	prev.MovedTo = "acme//stacks/documentation"
	prev.Ledger = []receipt.Entry{{Address: "random_id.tag"}}
	err := refuseMoved(prev)
	if !errcode.Is(err, errcode.Usage) || !strings.Contains(err.Error(), "is being moved to stack acme//stacks/documentation") || !strings.Contains(errcode.As(err).Hint, "apply --changed") {
		t.Errorf("an unfinished move: %v", err)
	}
	prev.Ledger = []receipt.Entry{}
	if err := refuseMoved(prev); !errcode.Is(err, errcode.Usage) || !strings.Contains(err.Error(), "was moved to stack acme//stacks/documentation") {
		t.Errorf("a finished move: %v", err)
	}
}
