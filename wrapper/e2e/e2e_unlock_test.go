package e2e_test

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestE2EUnlockStoppedRun: a run holding a live lease is stopped (SIGSTOP)
// mid-apply; `sponson unlock` ends its lease and records who and why; the
// next run needs no --wait; the stopped run, continued, is refused at its
// next write (LOCK_LOST) and changes nothing. Without --reason unlock is
// refused.
func TestE2EUnlockStoppedRun(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")

	first := h.command(dir, nil, "apply", "--scope", "pr-10", "--json", "-var", "sleep=4", "-var", "input=first")
	var firstOut, firstErr lockedBuffer
	first.Stdout, first.Stderr = &firstOut, &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func(c *exec.Cmd) {
		if stopped {
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Wait()
		}
	}(first)
	stopMidApply(t, first, &firstErr, scopeDir(dir, "preview", "pr-10"))
	stopped = true

	if r := h.run(dir, nil, "unlock", "--scope", "pr-10", "--json"); r.exit != 2 || r.code(t) != "USAGE" {
		t.Fatalf("unlock without --reason: exit %d %q", r.exit, r.code(t))
	}
	if r := h.run(dir, nil, "apply", "--scope", "pr-10", "--json", "-var", "sleep=0"); r.exit != 3 || r.code(t) != "LOCK_HELD" {
		t.Fatalf("the lease is not live before the unlock: exit %d %q", r.exit, r.code(t))
	}
	u := h.mustRun(dir, "unlock", "--scope", "pr-10", "--reason", "job hung in apply", "--by", "Ada", "--json")
	ended, _ := u.envelope(t)["result"].(map[string]any)["ended"].(map[string]any)
	holder, _ := ended["holder"].(string)
	rec := latestReceipt(t, dir, "preview", "pr-10")
	if rec.Unlocked == nil || rec.Unlocked.By != "Ada" || rec.Unlocked.Reason != "job hung in apply" || rec.Unlocked.Holder != holder || holder == "" {
		t.Fatalf("unlock receipt %+v (ended %v)", rec.Unlocked, ended)
	}

	// The next run takes the lease at once (and settles what the stopped
	// run had in flight).
	if r := h.applyAfterTakeover(dir, nil, []string{"--scope", "pr-10"}, "-var", "sleep=0", "-var", "input=second"); r.exit != 0 {
		t.Fatalf("the run after the unlock: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	state := stateResources(t, dir, "preview", "pr-10")

	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	err := first.Wait()
	r := result{exit: first.ProcessState.ExitCode(), stdout: firstOut.String(), stderr: firstErr.String()}
	if err == nil || r.exit != 3 || r.code(t) != "LOCK_LOST" {
		t.Fatalf("the unlocked run: exit %d %q, want 3 LOCK_LOST\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if id, _ := r.envelope(t)["result"].(map[string]any)["runId"].(string); id != holder {
		t.Errorf("unlock ended %q, the stopped run is %q", holder, id)
	}
	if got := stateResources(t, dir, "preview", "pr-10"); dynamic(got["terraform_data.slow"]["output"]) != "second" || dynamic(state["terraform_data.slow"]["output"]) != "second" {
		t.Errorf("state holds %v, want the second run's", got["terraform_data.slow"])
	}
	if rec := latestReceipt(t, dir, "preview", "pr-10"); rec.Command != "apply" || rec.Status != "applied" {
		t.Errorf("the unlocked run replaced the latest receipt: %s %s %s", rec.RunID, rec.Command, rec.Status)
	}
}

// TestE2EUnlockInProductionNeedsAnApprover (issue 28 item 3): ending a live
// production apply's lease is break-glass on production: without an
// approver it is refused (ENV_NOT_APPROVED) and the lease stays; with one
// the lease is ended and the receipt records the approver.
func TestE2EUnlockInProductionNeedsAnApprover(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	first := h.command(dir, nil, "apply", "--env", "production", "--scope", "main", "--approved-by", "alice", "--json", "-var", "sleep=4", "-var", "input=first")
	var firstOut, firstErr lockedBuffer
	first.Stdout, first.Stderr = &firstOut, &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = first.Process.Signal(syscall.SIGCONT)
		_ = first.Wait()
	}()
	stopMidApply(t, first, &firstErr, scopeDir(dir, "production", "main"))

	r := h.run(dir, nil, "unlock", "--env", "production", "--scope", "main", "--reason", "stuck", "--json")
	if r.exit != 2 || r.code(t) != "ENV_NOT_APPROVED" {
		t.Fatalf("unlock of production without an approver: exit %d %q\n%s", r.exit, r.code(t), r.stdout)
	}
	if r := h.run(dir, nil, "apply", "--env", "production", "--scope", "main", "--approved-by", "alice", "--json", "-var", "sleep=0"); r.exit != 3 || r.code(t) != "LOCK_HELD" {
		t.Fatalf("the refused unlock ended the lease: exit %d %q", r.exit, r.code(t))
	}
	h.mustRun(dir, "unlock", "--env", "production", "--scope", "main", "--reason", "stuck", "--by", "Ada", "--approved-by", "alice", "--json")
	if rec := latestReceipt(t, dir, "production", "main"); rec.Unlocked == nil || rec.ApprovedBy != "alice" || rec.Unlocked.By != "Ada" {
		t.Fatalf("the unlock's receipt: approved by %q, %+v", rec.ApprovedBy, rec.Unlocked)
	}
}
