package e2e_test

import (
	"encoding/json"
	"testing"
)

// TestE2EOverviewTimelineEveryStore (issue 52, "each scope's receipts as a
// timeline"): on the git, PostgreSQL and S3 stores as on the file store, a
// scope's timeline in the overview (status --json, the model of the page
// and of serve) is every run's receipt, oldest first, and not marked
// partial: each store lists the receipts it keeps (store.History).
func TestE2EOverviewTimelineEveryStore(t *testing.T) {
	t.Parallel()
	for _, storeName := range []string{"git", "postgres", "s3"} {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			h := e2e(t)
			c, _ := newRealChainWorld(t, h, storeName)
			c.dir = h.workdir("testdata/cancelsleep")
			var runs []string
			for _, sleep := range []string{"0s", "1s"} {
				r := h.run(c.dir, c.env, append(append([]string{"apply", "--json"}, c.where...), "-var", "sleep="+sleep)...)
				if r.exit != 0 {
					t.Fatalf("apply sleep=%s: exit %d\n%s\n%s", sleep, r.exit, r.stdout, r.stderr)
				}
				runs = append(runs, r.envelope(t)["result"].(map[string]any)["runId"].(string))
			}
			// c.where is --scope pr-25 and the store's flag.
			st := h.run(c.dir, c.env, append([]string{"status", "--json"}, c.where[2:]...)...)
			if st.exit != 0 {
				t.Fatalf("status: exit %d\n%s\n%s", st.exit, st.stdout, st.stderr)
			}
			b, err := json.Marshal(st.envelope(t)["result"].(map[string]any)["overview"])
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Scopes []struct {
					Scope    string `json:"scope"`
					Partial  bool   `json:"timelinePartial"`
					Timeline []struct {
						RunID  string `json:"runId"`
						Status string `json:"status"`
					} `json:"timeline"`
				} `json:"scopes"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if len(m.Scopes) != 1 || m.Scopes[0].Scope != "pr-25" {
				t.Fatalf("the overview's scopes are %+v, want pr-25 alone", m.Scopes)
			}
			s := m.Scopes[0]
			var got []string
			for _, r := range s.Timeline {
				got = append(got, r.RunID)
				if r.Status != "applied" {
					t.Errorf("run %s in the timeline is %s, want applied", r.RunID, r.Status)
				}
			}
			if s.Partial || len(got) != 2 || got[0] != runs[0] || got[1] != runs[1] {
				t.Errorf("pr-25's timeline is %v (partial %v), want the two runs %v oldest first, whole", got, s.Partial, runs)
			}
		})
	}
}
