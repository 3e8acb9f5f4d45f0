package e2e_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// gcProbe is added to the example configuration: a resource per scope whose
// create can be slowed down (so that a run holds its scope's lease while gc
// looks) and whose destroy fails while a file fail-<scope> exists in the
// configuration directory (so that one destroy of a gc fails for real).
const gcProbe = `
variable "sleep" {
  type    = number
  default = 0
}

resource "terraform_data" "probe" {
  input = data.sponson_context.this.scope
  provisioner "local-exec" {
    command = "sleep ${var.sleep}"
  }
  provisioner "local-exec" {
    when    = destroy
    command = "test ! -e fail-${self.input}"
  }
}
`

// gitRun runs git with a throwaway identity.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

type gcRow struct{ Scope, Outcome, Reasons, Code string }

func gcRows(t *testing.T, r result) []gcRow {
	t.Helper()
	res, _ := r.envelope(t)["result"].(map[string]any)
	scopes, _ := res["scopes"].([]any)
	out := []gcRow{}
	for _, s := range scopes {
		m := s.(map[string]any)
		var reasons []string
		for _, x := range m["reasons"].([]any) {
			reasons = append(reasons, x.(string))
		}
		row := gcRow{Scope: m["scope"].(string), Outcome: m["outcome"].(string), Reasons: strings.Join(reasons, ",")}
		if e, ok := m["error"].(map[string]any); ok {
			row.Code, _ = e["code"].(string)
		}
		out = append(out, row)
	}
	return out
}

// TestE2EGC: gc over a mix of open, closed, gone, stale, superseded, busy
// and already destroyed scopes. The dry run changes nothing; --yes destroys
// exactly the selected scopes through the destroy path, leaves the others
// byte for byte, reports the destroy that fails and goes on with the rest;
// the next gc collects what is left, and every record is kept.
func TestE2EGC(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir(example)
	if err := os.WriteFile(filepath.Join(dir, "gc_probe.tf"), []byte(gcProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	scopeFile := func(scope, name string) string { return filepath.Join(scopeDir(dir, "preview", scope), name) }

	// The remote has main and feat/kept; the configuration directory is a
	// checkout whose origin is that remote.
	remote := filepath.Join(t.TempDir(), "remote.git")
	gitRun(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
	src := t.TempDir()
	gitRun(t, src, "init", "-q")
	gitRun(t, src, "commit", "-q", "--allow-empty", "-m", "initial")
	gitRun(t, src, "push", "-q", remote, "HEAD:refs/heads/main", "HEAD:refs/heads/feat/kept")
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "remote", "add", "origin", remote)

	// stale runs first and is the only scope older than the limit below.
	h.mustRun(dir, "apply", "--scope", "stale")
	staleDone := time.Now()
	time.Sleep(3 * time.Second)

	applies := [][]string{
		{"--branch", "main"},
		{"--pr", "1", "--branch", "feat/one"},
		{"--pr", "2", "--branch", "feat/two"},
		{"--pr", "3", "--branch", "feat/three"},
		{"--pr", "4", "--branch", "feat/four"},
		{"--pr", "6", "--branch", "feat/six"},
		{"--branch", "gone"},
		{"--branch", "feat/kept"},
	}
	var wg sync.WaitGroup
	results := make([]result, len(applies))
	for i, a := range applies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.run(dir, nil, append([]string{"apply"}, a...)...)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.exit != 0 {
			t.Fatalf("apply %v: exit %d\n%s\n%s", applies[i], r.exit, r.stdout, r.stderr)
		}
	}

	// pr-4 was superseded by pr-2: its receipt says so (as a succession
	// would write it), and gc must leave it alone although pr 4 is closed.
	var pr4 map[string]any
	if err := json.Unmarshal(readFile(t, scopeFile("pr-4", "latest.json")), &pr4); err != nil {
		t.Fatal(err)
	}
	// As succession leaves a predecessor: superseded, its ledger handed over.
	pr4["supersededBy"] = "pr-2"
	pr4["ledger"] = []any{}
	b, _ := json.MarshalIndent(pr4, "", "  ")
	if err := os.WriteFile(scopeFile("pr-4", "latest.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	// pr-6's destroy will fail.
	if err := os.WriteFile(filepath.Join(dir, "fail-pr-6"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// pr-5 is being applied while gc runs: busy.
	busy := h.command(dir, nil, "apply", "--pr", "5", "--branch", "feat/five", "-var", "sleep=10")
	var busyOut lockedBuffer
	busy.Stdout, busy.Stderr = &busyOut, &busyOut
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Process.Kill() }) // no-op (os.ErrProcessDone) once it exited
	waitFor(t, "pr-5's lease", func() bool {
		b, err := os.ReadFile(scopeFile("pr-5", "lease.json"))
		return err == nil && bytes.Contains(b, []byte(`"holder": "run-`))
	})

	kept := []string{"main", "pr-2", "pr-4", "branch-feat-kept"}
	all := append([]string{"stale", "pr-1", "pr-3", "pr-6", "branch-gone"}, kept...)
	snapshot := func(scopes []string) map[string]string {
		out := map[string]string{}
		for _, s := range scopes {
			out[s] = string(readFile(t, scopeFile(s, "terraform.tfstate"))) + string(readFile(t, scopeFile(s, "latest.json")))
		}
		return out
	}
	before := snapshot(all)
	olderThan := func() string { return (time.Since(staleDone) - 1500*time.Millisecond).Round(time.Millisecond).String() }

	// The dry run: what would happen, and nothing happens.
	dry := h.run(dir, nil, "gc", "--open-prs", "2", "--older-than", olderThan(), "--json")
	if dry.exit != 0 {
		t.Fatalf("dry run: exit %d\n%s\n%s", dry.exit, dry.stdout, dry.stderr)
	}
	want := []gcRow{
		{"branch-gone", "would-destroy", "branch-gone", ""},
		{"pr-1", "would-destroy", "pr-closed", ""},
		{"pr-3", "would-destroy", "pr-closed", ""},
		{"pr-5", "skipped", "pr-closed", ""},
		{"pr-6", "would-destroy", "pr-closed", ""},
		{"stale", "would-destroy", "older-than", ""},
	}
	if diff := cmp.Diff(want, gcRows(t, dry)); diff != "" {
		t.Fatalf("dry run selection (-want +got):\n%s\nstderr:\n%s", diff, dry.stderr)
	}
	if diff := cmp.Diff(before, snapshot(all)); diff != "" {
		t.Fatal("the dry run changed a scope")
	}
	human := h.run(dir, nil, "gc", "--open-prs", "2")
	if human.exit != 0 || !strings.Contains(human.stdout, "dry run: 4 scopes would be destroyed, 1 skipped as busy: pr-5; run again with --yes") ||
		!strings.Contains(human.stdout, "branch-gone: remote origin has 2 branches") {
		t.Errorf("human dry run: exit %d\n%s\n%s", human.exit, human.stdout, human.stderr)
	}

	// --yes: exactly the selected scopes go, pr-6 fails and is reported,
	// the others go on.
	start := time.Now()
	yes := h.run(dir, nil, "gc", "--open-prs", "2", "--older-than", olderThan(), "--yes", "--json")
	t.Logf("gc --yes of 5 scopes took %s", time.Since(start).Round(time.Millisecond))
	if yes.exit != 1 || yes.code(t) != "ENGINE_FAILED" {
		t.Fatalf("gc --yes: exit %d %q, want 1 ENGINE_FAILED\n%s\n%s", yes.exit, yes.code(t), yes.stdout, yes.stderr)
	}
	want = []gcRow{
		{"branch-gone", "destroyed", "branch-gone", ""},
		{"pr-1", "destroyed", "pr-closed", ""},
		{"pr-3", "destroyed", "pr-closed", ""},
		{"pr-5", "skipped", "pr-closed", ""},
		{"pr-6", "failed", "pr-closed", "ENGINE_FAILED"},
		{"stale", "destroyed", "older-than", ""},
	}
	if diff := cmp.Diff(want, gcRows(t, yes)); diff != "" {
		t.Errorf("gc --yes (-want +got):\n%s", diff)
	}
	if msg := yes.envelope(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "1 of 5 destroys failed: pr-6 (ENGINE_FAILED)") {
		t.Errorf("error message %q", msg)
	}
	if !strings.Contains(yes.stderr, "gc: pr-6 failed: ENGINE_FAILED") || !strings.Contains(yes.stderr, "sponson destroy · preview · stale · run ") {
		t.Errorf("progress on stderr:\n%s", yes.stderr)
	}
	for _, scope := range []string{"branch-gone", "pr-1", "pr-3", "stale"} {
		if res := stateResources(t, dir, "preview", scope); len(res) != 0 {
			t.Errorf("%s still has resources: %v", scope, res)
		}
		if rec := latestReceipt(t, dir, "preview", scope); rec.Command != "destroy" || rec.Status != receipt.StatusDestroyed || len(rec.Ledger) != 0 {
			t.Errorf("%s: receipt %s %s with %d entries", scope, rec.Command, rec.Status, len(rec.Ledger))
		}
	}
	if rec := latestReceipt(t, dir, "preview", "pr-1"); rec.PullRequest != 1 || rec.Branch != "feat/one" {
		t.Errorf("pr-1's destroy ran as pr %d on %q, want its own pull request and branch", rec.PullRequest, rec.Branch)
	}
	if rec := latestReceipt(t, dir, "preview", "pr-6"); rec.Command != "destroy" || rec.Status != receipt.StatusFailed {
		t.Errorf("pr-6: receipt %s %s, want a failed destroy", rec.Command, rec.Status)
	}
	after := snapshot(kept)
	for _, s := range kept {
		if after[s] != before[s] {
			t.Errorf("gc changed the state or receipt of %s", s)
		}
	}

	// pr-5's own apply finishes undisturbed.
	if err := busy.Wait(); err != nil {
		t.Fatalf("pr-5's apply: %v\n%s", err, busyOut.String())
	}
	if rec := latestReceipt(t, dir, "preview", "pr-5"); rec.Command != "apply" || rec.Status != receipt.StatusApplied || len(rec.Ledger) != 4 {
		t.Errorf("pr-5: receipt %s %s with %d entries", rec.Command, rec.Status, len(rec.Ledger))
	}

	// The next gc collects what is left: the failed destroy, and pr-5 now
	// that it is free. Destroyed scopes are not selected again.
	if err := os.Remove(filepath.Join(dir, "fail-pr-6")); err != nil {
		t.Fatal(err)
	}
	again := h.run(dir, nil, "gc", "--open-prs", "2", "--yes", "--json")
	if again.exit != 0 {
		t.Fatalf("second gc: exit %d\n%s\n%s", again.exit, again.stdout, again.stderr)
	}
	want = []gcRow{{"pr-5", "destroyed", "pr-closed", ""}, {"pr-6", "destroyed", "pr-closed", ""}}
	if diff := cmp.Diff(want, gcRows(t, again)); diff != "" {
		t.Errorf("second gc (-want +got):\n%s", diff)
	}
	for _, s := range kept {
		if got := snapshot([]string{s})[s]; got != before[s] {
			t.Errorf("the second gc changed %s", s)
		}
	}

	// Records are kept: status lists every scope, the destroyed ones with
	// their destroy as last run, and each keeps its receipts.
	st := h.mustRun(dir, "status", "--json")
	res := st.envelope(t)["result"].(map[string]any)
	statuses := map[string]string{}
	for _, s := range res["scopes"].([]any) {
		m := s.(map[string]any)
		statuses[m["scope"].(string)] = m["lastRun"].(map[string]any)["status"].(string)
	}
	wantStatus := map[string]string{
		"main": "applied", "pr-1": "destroyed", "pr-2": "applied", "pr-3": "destroyed", "pr-4": "applied", "pr-5": "destroyed",
		"pr-6": "destroyed", "branch-gone": "destroyed", "branch-feat-kept": "applied", "stale": "destroyed",
	}
	if diff := cmp.Diff(wantStatus, statuses); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if n := len(receiptFiles(t, dir, "pr-6")); n != 3 {
		t.Errorf("pr-6 keeps %d receipts, want 3 (apply, failed destroy, destroy)", n)
	}
	text := h.mustRun(dir, "status")
	if !strings.Contains(text.stdout, "↳ superseded by pr-2") {
		t.Errorf("status does not show the succession:\n%s", text.stdout)
	}
	rc := h.mustRun(dir, "receipt", "--pr", "1")
	if !strings.Contains(rc.stdout, "preview/pr-1 · destroyed · run-") || !strings.Contains(rc.stdout, "owns nothing") {
		t.Errorf("receipt of pr-1:\n%s", rc.stdout)
	}
}
