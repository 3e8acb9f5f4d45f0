package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// ledgerBaseConfig is eight resources, five of them HashiCorp's random_id
// (ids the provider makes up): rev changes terraform_data.d[0] in place.
const ledgerBaseConfig = `variable "rev" {
  type    = number
  default = 0
}

resource "random_id" "id" {
  count       = 5
  byte_length = 4
}

resource "terraform_data" "d" {
  count = 3
  input = "d-${count.index}-${count.index == 0 ? var.rev : 0}"
}
`

// TestE2ELedgerBase runs a scope whose ledger is large enough to be written
// against a base (docs/design.md §2.17 "Ledger base"; a failpoints build
// takes a threshold of 4 entries from SPONSON_TEST_COMPACT_FROM): the first
// apply stores its receipts compact, a change in place writes no new base
// and only what changed, every reader (receipt, status, the next run's
// plan) sees the whole ledger, and the destroy leaves a receipt of an empty
// ledger, written whole.
func TestE2ELedgerBase(t *testing.T) {
	t.Parallel()
	h := e2eFailpoints(t)
	mirror := realproviders.Install(t)
	cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(ledgerBaseConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"TF_CLI_CONFIG_FILE=" + cfg, "SPONSON_TEST_COMPACT_FROM=4"}
	apply := func(args ...string) {
		t.Helper()
		if r := h.run(dir, env, append([]string{"apply", "--scope", "pr-1"}, args...)...); r.exit != 0 {
			t.Fatalf("apply %v: exit %d\n%s", args, r.exit, r.stderr)
		}
	}

	apply()
	first := storedReceipt(t, dir)
	if !first.Compact() || receipt.Literal(first.LedgerDelta) != 0 {
		t.Fatalf("the first apply's receipt: version %d, base %q, %d entries written out; want compact against its own ledger",
			first.Version, first.LedgerBase, receipt.Literal(first.LedgerDelta))
	}
	whole := latestReceipt(t, dir, "preview", "pr-1")
	if len(whole.Ledger) != 8 || whole.Compact() {
		t.Fatalf("the ledger read back: %d entries (compact %v), want 8: %+v", len(whole.Ledger), whole.Compact(), whole.Ledger)
	}
	bases := baseRecords(t, dir)

	apply("-var", "rev=1")
	second := storedReceipt(t, dir)
	if second.RunID == first.RunID || second.LedgerBase != first.LedgerBase || receipt.Literal(second.LedgerDelta) != 0 {
		t.Errorf("a change in place: run %s against %q with %d entries written out; want the base %s and none",
			second.RunID, second.LedgerBase, receipt.Literal(second.LedgerDelta), first.LedgerBase)
	}
	if now := baseRecords(t, dir); len(now) != len(bases) {
		t.Errorf("a change in place wrote a base: %v, before %v", now, bases)
	}
	if got := latestReceipt(t, dir, "preview", "pr-1"); len(got.Ledger) != 8 {
		t.Errorf("after the change the ledger reads %d entries, want 8", len(got.Ledger))
	}

	st := h.mustRun(dir, "status", "--json")
	for _, s := range st.envelope(t)["result"].(map[string]any)["scopes"].([]any) {
		if m := s.(map[string]any); m["scope"] == "pr-1" && m["owns"] != float64(8) {
			t.Errorf("status: pr-1 owns %v, want 8", m["owns"])
		}
	}
	if r := h.run(dir, env, "receipt", "--scope", "pr-1", "--json"); r.exit != 0 || strings.Count(r.stdout, `"identity"`) != 8 {
		t.Errorf("receipt: exit %d, %d identities, want 8\n%s%s", r.exit, strings.Count(r.stdout, `"identity"`), r.stdout, r.stderr)
	}
	if r := h.run(dir, env, "destroy", "--scope", "pr-1"); r.exit != 0 {
		t.Fatalf("destroy: exit %d\n%s", r.exit, r.stderr)
	}
	if last := storedReceipt(t, dir); last.Compact() || len(last.Ledger) != 0 || last.Status != receipt.StatusDestroyed {
		t.Errorf("after the destroy: status %s, compact %v, %d entries", last.Status, last.Compact(), len(last.Ledger))
	}
}

// storedReceipt is pr-1's latest receipt as the file store holds it.
func storedReceipt(t *testing.T, dir string) *receipt.Receipt {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(scopeDir(dir, "preview", "pr-1"), "latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := receipt.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// baseRecords are the ledger bases pr-1's records hold.
func baseRecords(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(scopeDir(dir, "preview", "pr-1"), "records", receipt.BasePrefix+"*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no ledger base among the records: %v", err)
	}
	return names
}
