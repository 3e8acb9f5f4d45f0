package e2e_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestE2EHeartbeat (issue 52 item 4): while HashiCorp's time_sleep creates
// for 20 s, the apply's log speaks of it at least every SPONSON_HEARTBEAT
// (1 s here; 30 s by default), whether or not the engine does: OpenTofu's
// machine-readable UI reports a slow create's progress once, so without the
// heartbeat its log went silent until the create ended. In a GitHub Actions
// job the engine's init and plan output are foldable groups, the apply is
// not.
func TestE2EHeartbeat(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	c, _ := newRealChainWorld(t, h, "file")
	c.dir = h.workdir("testdata/cancelsleep")
	env := append(append([]string{}, c.env...), "SPONSON_HEARTBEAT=1s", "GITHUB_ACTIONS=true", "SPONSON_RULES_REF=checkout")
	r := h.run(c.dir, env, append(append([]string{"apply"}, c.where...), "-var", "sleep=20s")...)
	if r.exit != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	log := r.stdout + r.stderr
	beats := regexp.MustCompile(`(?m)^time_sleep\.wait: Still creating\.\.\. \[\d+s elapsed\]$`).FindAllString(log, -1)
	// The engine itself speaks at most once every 10 s (at 10 s); a beat a
	// second gives many more lines over 20 s.
	if len(beats) < 4 {
		t.Errorf("%d lines about the sleep in flight over 20 s, want a heartbeat every second:\n%s", len(beats), log)
	}
	if !strings.Contains(log, "time_sleep.wait: Creation complete") {
		t.Errorf("the sleep's completion is not in the log:\n%s", log)
	}
	for _, group := range []string{"::group::engine init\n", "::group::engine plan\n"} {
		if !strings.Contains(log, group) {
			t.Errorf("no %q in the GitHub Actions log:\n%s", strings.TrimSpace(group), log)
		}
	}
	if strings.Contains(log, "::group::engine apply") {
		t.Errorf("the apply is folded away in the GitHub Actions log:\n%s", log)
	}
	if opened, closed := strings.Count(log, "::group::"), strings.Count(log, "::endgroup::"); opened != closed || opened == 0 {
		t.Errorf("%d groups opened, %d closed", opened, closed)
	}
}
