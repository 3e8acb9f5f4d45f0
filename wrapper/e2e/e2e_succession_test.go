package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/succession"
)

var (
	branchObjects = objectsVar("a", "A", "b", "B")
	prObjects     = objectsVar("a", "A", "b", "B", "c", "C")
)

func exists(t *testing.T, objects string, names ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, n := range names {
		_, err := os.Stat(filepath.Join(objects, "objects", n+".json"))
		out[n] = err == nil
	}
	return out
}

// successionStores are the stores the succession tests run on: the file
// store, and the two stores of issue 51, whose fenced writes carry the
// handover's steps (docs/design.md §5.7, §5.8).
var successionStores = []string{"file", "gcs", "azblob"}

// TestE2ESuccession is the journey: work begun on feat/search is taken over
// by pull request 42, which adds C; afterwards pr-42 owns A, B and C, the
// branch scope is superseded with an empty ledger, destroying it deletes
// nothing and destroying pr-42 deletes everything. The stores' journeys
// run side by side, each with its own harness.
func TestE2ESuccession(t *testing.T) {
	e2e(t)
	onStores(t, successionStores, "succession", func(t *testing.T, s *e2eStore) { successionJourney(t, e2e(t), s) })
}

func successionJourney(t *testing.T, h *harness, s *e2eStore) {
	env, objects := fixtureEnv(t)
	env = append(env, s.env...)
	dir := h.workdir("testdata/fixture")
	run := func(args ...string) result { return h.mustRunEnv(dir, env, append(args, s.flags...)...) }
	run("apply", "--branch", "feat/search", "-var", branchObjects)
	branchIDs := map[string]string{}
	for _, e := range s.latest(t, dir, "preview", "branch-feat-search").Ledger {
		branchIDs[e.Identity] = e.ID
	}

	r := run("apply", "--pr", "42", "--branch", "feat/search", "-var", prObjects)
	if !strings.Contains(r.stderr, "inherited 3 resources from branch-feat-search") {
		t.Errorf("no inheritance warning:\n%s", r.stderr)
	}
	pr := s.latest(t, dir, "preview", "pr-42")
	if pr.InheritedFrom != "branch-feat-search" || pr.Inheriting != "" || pr.Status != receipt.StatusApplied {
		t.Errorf("pr-42 receipt: inheritedFrom %q inheriting %q status %q", pr.InheritedFrom, pr.Inheriting, pr.Status)
	}
	owned := map[string]string{}
	for _, e := range pr.Ledger {
		owned[e.Address] = e.CreatedBy
		if old, ok := branchIDs[e.Identity]; ok && old != e.ID {
			t.Errorf("%s was re-created (id %s, was %s): it must be taken over", e.Address, e.ID, old)
		}
	}
	for _, want := range []string{`fixture_object.o["a"]`, `fixture_object.o["b"]`} {
		if owned[want] != receipt.CreatedByInherited {
			t.Errorf("%s: createdBy %q, want inherited", want, owned[want])
		}
	}
	if owned[`fixture_object.o["c"]`] != receipt.CreatedBySponson {
		t.Errorf("C: createdBy %q, want created", owned[`fixture_object.o["c"]`])
	}
	br := s.latest(t, dir, "preview", "branch-feat-search")
	if br.SupersededBy != "pr-42" || len(br.Ledger) != 0 || br.Handover != nil {
		t.Errorf("branch receipt: supersededBy %q, %d entries, handover %+v", br.SupersededBy, len(br.Ledger), br.Handover)
	}
	if res := s.stateResources(t, dir, "preview", "branch-feat-search"); len(res) != 0 {
		t.Errorf("the branch's state still holds %v", res)
	}
	status := run("status")
	if !strings.Contains(status.stdout, "pr-42") {
		t.Errorf("status:\n%s", status.stdout)
	}

	run("destroy", "--branch", "feat/search", "-var", branchObjects)
	if got := exists(t, objects, "A", "B", "C"); !got["A"] || !got["B"] || !got["C"] {
		t.Fatalf("destroying the superseded branch deleted pr-42's objects: %v", got)
	}
	run("destroy", "--pr", "42", "--branch", "feat/search", "-var", prObjects)
	if got := exists(t, objects, "A", "B", "C"); got["A"] || got["B"] || got["C"] {
		t.Fatalf("destroying pr-42 left objects: %v", got)
	}

	// The branch applied again starts fresh, and nothing is inherited twice.
	run("apply", "--branch", "feat/search", "-var", objectsVar("d", "D"))
	run("apply", "--pr", "42", "--branch", "feat/search", "-var", objectsVar("e", "E"))
	for _, e := range s.latest(t, dir, "preview", "pr-42").Ledger {
		if strings.Contains(e.Identity, `"D"`) {
			t.Errorf("pr-42 inherited the branch's new object: %+v", e)
		}
	}
}

// TestE2ESuccessionNothingToInherit: a pull request whose branch scope has
// nothing simply starts fresh.
func TestE2ESuccessionNothingToInherit(t *testing.T) {
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	r := h.mustRunEnv(dir, env, "apply", "--pr", "7", "--branch", "feat/none", "-var", objectsVar("x", "X7"))
	if strings.Contains(r.stderr, "inherited") {
		t.Errorf("inherited from an empty branch:\n%s", r.stderr)
	}
	if rec := latestReceipt(t, dir, "preview", "pr-7"); rec.InheritedFrom != "" {
		t.Errorf("inheritedFrom %q", rec.InheritedFrom)
	}
}

// TestE2ESuccessionKilledAtEveryStep kills the pull request's run at each
// named step of the handover. After each, exactly one scope's destroy
// deletes the branch's objects: the branch's before the promise, the pull
// request's after it; and a rerun of the pull request finishes the handover.
// The stores' steps run side by side, each store with its own harness; a
// store's steps run one after the other.
func TestE2ESuccessionKilledAtEveryStep(t *testing.T) {
	e2eFailpoints(t)
	onStores(t, successionStores, "succession", func(t *testing.T, s *e2eStore) { killedAtEveryStep(t, e2eFailpoints(t), s) })
}

// killedAtEveryStep runs the steps on one store's server, each round in a
// store of its own (base.fresh).
func killedAtEveryStep(t *testing.T, h *harness, base *e2eStore) {
	round := 0
	for _, step := range []string{succession.StepCopied, succession.StepPromised, succession.StepApplied, succession.StepEmptied, succession.StepDone} {
		promised := step != succession.StepCopied
		for _, then := range []string{"destroy", "resume"} {
			t.Run(step+"/"+then, func(t *testing.T) {
				var env []string
				var objects, dir string
				var s *e2eStore
				run := func(args ...string) result { return h.mustRunEnv(dir, env, append(args, s.flags...)...) }
				untilKilled(t, step, func() result {
					round++
					s = base.fresh(t, fmt.Sprintf("succession-%d", round))
					env, objects = fixtureEnv(t)
					env = append(env, s.env...)
					dir = h.workdir("testdata/fixture")
					run("apply", "--branch", "feat/search", "-var", branchObjects)
					return h.run(dir, append(env, "SPONSON_FAILPOINT="+step), append([]string{"apply", "--pr", "42", "--branch", "feat/search", "--lease-ttl", "2s", "-var", prObjects}, s.flags...)...)
				})
				wait := []string{"--wait", "--wait-timeout", "1m"}
				if then == "resume" {
					run(append([]string{"apply", "--pr", "42", "--branch", "feat/search", "-var", prObjects}, wait...)...)
					if br := s.latest(t, dir, "preview", "branch-feat-search"); br.SupersededBy != "pr-42" || len(br.Ledger) != 0 {
						t.Errorf("after the resume the branch is not superseded: %+v", br)
					}
					if pr := s.latest(t, dir, "preview", "pr-42"); pr.Inheriting != "" || len(pr.Ledger) < 4 {
						t.Errorf("after the resume pr-42: inheriting %q, %d entries", pr.Inheriting, len(pr.Ledger))
					}
					promised = true
				}
				run(append([]string{"destroy", "--branch", "feat/search", "-var", branchObjects}, wait...)...)
				got := exists(t, objects, "A", "B")
				if promised && (!got["A"] || !got["B"]) {
					t.Fatalf("after the promise the branch's destroy deleted pr-42's objects: %v", got)
				}
				if !promised && (got["A"] || got["B"]) {
					t.Fatalf("before the promise the branch's destroy left its own objects: %v", got)
				}
				run(append([]string{"destroy", "--pr", "42", "--branch", "feat/search", "-var", prObjects}, wait...)...)
				if got := exists(t, objects, "A", "B", "C"); got["A"] || got["B"] || got["C"] {
					t.Fatalf("after both destroys objects remain: %v", got)
				}
			})
		}
	}
}

// TestE2EPlanShowsSuccession: a pull request's plan is made against what
// its apply will inherit, so it shows what the apply then does (the
// inherited objects' real changes, not "everything to add"), and it writes
// nothing: the handover happens at apply.
func TestE2EPlanShowsSuccession(t *testing.T) {
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/fixture")
	h.mustRunEnv(dir, env, "apply", "--branch", "feat/search", "-var", branchObjects)
	storeBefore := snapshot(t, filepath.Join(dir, ".sponson"))

	// The pull request keeps A, renames B's object (a replacement) and adds C.
	vars := objectsVar("a", "A", "b", "B2", "c", "C")
	plan := h.mustRunEnv(dir, env, "plan", "--pr", "42", "--branch", "feat/search", "--json", "-var", vars)
	if !strings.Contains(plan.stderr, "takeover of 3 resources from branch-feat-search") {
		t.Errorf("the plan does not say it includes the takeover:\n%s", plan.stderr)
	}
	if diff := cmpSnapshots(storeBefore, snapshot(t, filepath.Join(dir, ".sponson"))); diff != "" {
		t.Errorf("the plan wrote to the store: %s", diff)
	}
	planned := plan.envelope(t)["result"].(map[string]any)
	apply := h.mustRunEnv(dir, env, "apply", "--pr", "42", "--branch", "feat/search", "--json", "-var", vars)
	applied := apply.envelope(t)["result"].(map[string]any)
	if fmt.Sprint(planned["summary"]) != fmt.Sprint(applied["summary"]) || fmt.Sprint(planned["changes"]) != fmt.Sprint(applied["changes"]) {
		t.Errorf("the plan showed %v %v, the apply did %v %v", planned["summary"], planned["changes"], applied["summary"], applied["changes"])
	}
	// Without the inherited state the plan said "4 to add" (A, B2, C and the
	// scope's record); against it, A is kept (its scope-dependent input
	// changes), B replaced, C added, and the scope's record replaced.
	want := `[map[action:update address:fixture_object.o["a"]] map[action:replace address:fixture_object.o["b"]] map[action:create address:fixture_object.o["c"]] map[action:replace address:sponson_scope.this]]`
	if got := fmt.Sprint(planned["changes"]); got != want {
		t.Errorf("plan changes\n%s\nwant\n%s", got, want)
	}
}

func cmpSnapshots(a, b map[string]string) string {
	var diff []string
	for k, v := range a {
		if b[k] != v {
			diff = append(diff, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diff = append(diff, "added "+k)
		}
	}
	return strings.Join(diff, ", ")
}

// untilKilled runs round until its run is killed at its failpoint step
// (exit -1). The killed run holds a two-second lease, so that the next need
// not wait long for it; on a loaded machine it can lose that lease before
// the step and end LOCK_LOST (exit 3), as a run that lost its lease must.
// What the test means to check then never happened, so the round is run
// again, up to leaseRounds rounds: round builds a fresh world each time.
// Any other exit fails.
func untilKilled(t *testing.T, step string, round func() result) {
	t.Helper()
	for n := 1; ; n++ {
		r := round()
		switch {
		case r.exit == -1:
			return
		case lostLease(r.exit, r.stdout+r.stderr) && n < leaseRounds:
			t.Logf("round %d: the run lost its two-second lease before %s (a loaded machine?); again in a fresh world", n, step)
		default:
			t.Fatalf("round %d: the run was not killed at %s: exit %d\n%s", n, step, r.exit, r.stderr)
		}
	}
}
