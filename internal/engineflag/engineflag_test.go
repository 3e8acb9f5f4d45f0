package engineflag_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/engineflag"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arg      string
		dashes   int
		name     string
		value    string
		hasValue bool
		ok       bool
	}{
		{"-target=a.b", 1, "target", "a.b", true, true},
		{"--target=a=b", 2, "target", "a=b", true, true},
		{"-auto-approve", 1, "auto-approve", "", false, true},
		{"-var=", 1, "var", "", true, true},
		{"--", 0, "", "", false, false},
		{"-", 0, "", "", false, false},
		{"---x", 0, "", "", false, false},
		{"plan.bin", 0, "", "", false, false},
	} {
		d, n, v, hv, ok := engineflag.Split(tc.arg)
		if ok != tc.ok || (ok && (d != tc.dashes || n != tc.name || v != tc.value || hv != tc.hasValue)) {
			t.Errorf("Split(%q) = %d %q %q %v %v", tc.arg, d, n, v, hv, ok)
		}
	}
}

func TestParseLaterWins(t *testing.T) {
	t.Parallel()
	p, err := engineflag.Parse("apply", []string{"-parallelism=2", "-refresh=false", "-parallelism=5", "-refresh=true", "-var=a=1", "-var-file=f", "-var=a=2"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	want := engine.Flags{Parallelism: 5}
	if diff := cmp.Diff(want, p.Flags); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]engine.VarArg{{Value: "a=1"}, {File: true, Value: "f"}, {Value: "a=2"}}, p.Vars); diff != "" {
		t.Errorf("vars (-want +got):\n%s", diff)
	}
}

func TestParseRefusesWithAHint(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-lock=false", "-state=x", "-state-out=x", "-backup=x", "-input=true", "-input", "-json", "-destroy"} {
		_, err := engineflag.Parse("apply", []string{arg}, "test")
		if e := errcode.As(err); err == nil || e.Code != errcode.Usage || e.Hint == "" {
			t.Errorf("%s: %v", arg, err)
		}
	}
}

func TestHelpPerCommand(t *testing.T) {
	t.Parallel()
	plan, apply := engineflag.Help("plan"), engineflag.Help("apply")
	if !strings.Contains(plan, "-detailed-exitcode") || strings.Contains(apply, "-detailed-exitcode") {
		t.Errorf("-detailed-exitcode belongs to plan only:\nplan:\n%s\napply:\n%s", plan, apply)
	}
	if !strings.Contains(apply, "-auto-approve") || strings.Contains(plan, "-auto-approve") {
		t.Errorf("-auto-approve belongs to apply and destroy")
	}
	for _, h := range []string{plan, apply, engineflag.Help("destroy")} {
		if !strings.Contains(h, "-lock=false") || !strings.Contains(h, "-state-out") {
			t.Errorf("help does not list the refused flags:\n%s", h)
		}
	}
}
