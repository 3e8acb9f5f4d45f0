package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mattn/go-shellwords"
)

// TestShellQuoteRoundTrips checks the quoting against the parser both
// engines use for TF_CLI_ARGS_*.
func TestShellQuoteRoundTrips(t *testing.T) {
	t.Parallel()
	args := []string{"-var=a=b c", `-var=q='x'`, `-var=d="y" $HOME`, "-var=e=`id`;|&<>", "-var-file=dir with space/x.tfvars", "-var=n=line\nbreak", "-var=empty=", `-var=back=\n\\`}
	got, err := shellwords.Parse(ShellQuote(args))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(args, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestPlanExtraKeepsVarOrder(t *testing.T) {
	t.Parallel()
	f := Flags{Excludes: []string{"a.b"}, CompactWarnings: true}
	got := f.planExtra([]VarArg{{File: true, Value: "1.tfvars"}, {Value: "x=1"}, {File: true, Value: "2.tfvars"}})
	want := []string{"-var-file=1.tfvars", "-var=x=1", "-var-file=2.tfvars", "-exclude=a.b", "-compact-warnings"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFlagsCheckRefusesWhatTheEngineLacks(t *testing.T) {
	t.Parallel()
	if err := (Flags{Excludes: []string{"a"}}).check("terraform", "1.13.3"); err == nil || !strings.Contains(err.Error(), "OpenTofu") {
		t.Errorf("-exclude on terraform: %v", err)
	}
	if err := (Flags{Excludes: []string{"a"}}).check("opentofu", "1.12.6"); err != nil {
		t.Errorf("-exclude on opentofu: %v", err)
	}
	if err := (Flags{RefreshOnly: true, NoRefresh: true}).check("opentofu", "1.12.6"); err == nil {
		t.Error("-refresh-only with -refresh=false accepted")
	}
}
