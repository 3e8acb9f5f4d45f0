package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/succession"
)

// TestE2EHandoverRace (issue 12 item 5): two pull requests on one head
// branch race for its handover. pr-1 is killed right after copying the
// branch's state; pr-2 then runs and is killed at each handover step in
// turn; then both run again. Exactly one of them ends up with the branch's
// resources, the other is refused with HANDOVER_TAKEN naming the holder,
// every object has exactly one owner, and destroying the loser, the branch
// and the winner, in that order, deletes each object exactly once, at the
// end.
func TestE2EHandoverRace(t *testing.T) {
	h := e2eFailpoints(t)
	wait := []string{"--wait", "--wait-timeout", "1m"}
	steps := []string{succession.StepCopied, succession.StepPromised, succession.StepApplied, succession.StepEmptied, succession.StepDone}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			var env []string
			var objects, dir string
			pr := func(n int, extra []string, args ...string) result {
				a := append([]string{"apply", "--pr", fmt.Sprint(n), "--branch", "feat/search", "--json", "-var", prObjects}, args...)
				return h.run(dir, append(env, extra...), a...)
			}
			// Both victims in one round: a round whose second victim lost
			// its lease follows a first that was killed, so it starts again
			// from a fresh world too.
			untilKilled(t, "pr-1 at "+succession.StepCopied+", pr-2 at "+step, func() result {
				env, objects = fixtureEnv(t)
				dir = h.workdir("testdata/fixture")
				h.mustRunEnv(dir, env, "apply", "--branch", "feat/search", "-var", branchObjects)
				if r := pr(1, []string{"SPONSON_FAILPOINT=" + succession.StepCopied}, "--lease-ttl", "2s"); r.exit != -1 {
					return r
				}
				return pr(2, []string{"SPONSON_FAILPOINT=" + step}, append([]string{"--lease-ttl", "2s"}, wait...)...)
			})
			// pr-2 copied only at StepCopied: pr-1, resuming first, wins.
			winner, loser := 2, 1
			if step == succession.StepCopied {
				winner, loser = 1, 2
			}
			first, second := pr(1, nil, wait...), pr(2, nil, wait...)
			results := map[int]result{1: first, 2: second}
			if r := results[winner]; r.exit != 0 {
				t.Fatalf("pr-%d holding the handover: exit %d %q\n%s\n%s", winner, r.exit, r.code(t), r.stdout, r.stderr)
			}
			r := results[loser]
			if r.exit != 2 || r.code(t) != "HANDOVER_TAKEN" || !strings.Contains(r.stdout, fmt.Sprintf("pr-%d", winner)) {
				t.Fatalf("pr-%d resuming a handover pr-%d holds: exit %d %q\n%s\n%s", loser, winner, r.exit, r.code(t), r.stdout, r.stderr)
			}
			br := latestReceipt(t, dir, "preview", "branch-feat-search")
			if br.SupersededBy != fmt.Sprintf("pr-%d", winner) || br.Handover != nil || len(br.Ledger) != 0 {
				t.Errorf("branch: supersededBy %q, handover %+v, %d entries", br.SupersededBy, br.Handover, len(br.Ledger))
			}
			owners := map[string][]string{}
			for _, scope := range []string{"branch-feat-search", "pr-1", "pr-2"} {
				for _, e := range latestReceipt(t, dir, "preview", scope).Ledger {
					if e.CreatedBy != receipt.CreatedByIntent {
						owners[e.Address] = append(owners[e.Address], scope)
					}
				}
			}
			for _, addr := range []string{`fixture_object.o["a"]`, `fixture_object.o["b"]`, `fixture_object.o["c"]`} {
				if len(owners[addr]) != 1 || owners[addr][0] != fmt.Sprintf("pr-%d", winner) {
					t.Errorf("%s is owned by %v; want pr-%d alone", addr, owners[addr], winner)
				}
			}
			h.mustRunEnv(dir, env, append([]string{"destroy", "--pr", fmt.Sprint(loser), "--branch", "feat/search", "-var", prObjects}, wait...)...)
			h.mustRunEnv(dir, env, append([]string{"destroy", "--branch", "feat/search", "-var", branchObjects}, wait...)...)
			if got := exists(t, objects, "A", "B", "C"); !got["A"] || !got["B"] || !got["C"] {
				t.Fatalf("destroying the loser and the branch deleted the winner's objects: %v", got)
			}
			h.mustRunEnv(dir, env, append([]string{"destroy", "--pr", fmt.Sprint(winner), "--branch", "feat/search", "-var", prObjects}, wait...)...)
			if got := exists(t, objects, "A", "B", "C"); got["A"] || got["B"] || got["C"] {
				t.Fatalf("after every destroy objects remain: %v", got)
			}
		})
	}
}
