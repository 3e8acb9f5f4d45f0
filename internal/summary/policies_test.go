package summary_test

import (
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

// TestPolicies: the trusted policies' verdict, and beside it the proposed
// policies', which the summary says do not judge the run.
func TestPolicies(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		run     summary.Run
		want    []string
		wantNot []string
	}{
		"denied, with a proposal that passes": {
			run: summary.Run{
				Policies:         &summary.PolicyVerdict{Deny: []string{"local_file.out writes /etc/x (deny, policy/file.rego)"}, Warn: []string{"big plan (warn, policy/size.rego)"}},
				ProposedPolicies: &summary.PolicyVerdict{},
			},
			want: []string{"**Policies: denied** (1)", `- deny: local\_file.out writes /etc/x (deny, policy/file.rego)`, "- warn: big plan (warn, policy/size.rego)",
				"**Proposed policies, effective when merged (they do not judge this run): passed**"},
		},
		"warnings only": {
			run:  summary.Run{Policies: &summary.PolicyVerdict{Warn: []string{"w (warn, p.rego)"}}},
			want: []string{"**Policies: passed with warnings** (1)", "- warn: w (warn, p.rego)"},
		},
		"passed": {
			run:     summary.Run{Policies: &summary.PolicyVerdict{}},
			want:    []string{"**Policies: passed**"},
			wantNot: []string{"Proposed"},
		},
		"no policies": {
			run:     summary.Run{},
			wantNot: []string{"Policies"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := tt.run
			r.Command, r.Environment, r.Scope, r.RunID, r.Status = "plan", "preview", "pr-3", "run-1", "changes"
			md := r.Markdown(summary.Options{})
			for _, w := range tt.want {
				if !strings.Contains(md, w) {
					t.Errorf("summary lacks %q:\n%s", w, md)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(md, w) {
					t.Errorf("summary has %q:\n%s", w, md)
				}
			}
		})
	}
}
