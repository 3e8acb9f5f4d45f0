package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EOverlappingPushes: two pushes of one pull request overlap, as the
// GitHub template's groups let them (plans of both pushes made; applies
// queued, never cancelled) and the lease orders them.
//
//   - Saved plans (the preview jobs): both pushes planned against the same
//     state; the newer push's apply holds the lease while it applies; the
//     older push's apply (a late runner, a re-run) waits for it with --wait
//     and is then refused as stale (PLAN_STALE), never applied: the state
//     holds the newer push's input.
//   - Without a saved plan (the main job): the newer push's apply waits for
//     the lease of the older push's apply in progress, then applies on top of
//     it.
//
// The first apply of each pair is held at a gate file until the second is
// seen waiting, so the overlap is certain on any machine.
func TestE2EOverlappingPushes(t *testing.T) {
	h := e2e(t)
	dir := h.workdir("testdata/gated")
	gates := t.TempDir()
	open := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(gates, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	leasePath := func(scope string) string { return filepath.Join(scopeDir(dir, "preview", scope), "lease.json") }
	input := func(scope string) any {
		t.Helper()
		return dynamic(stateResources(t, dir, "preview", scope)["terraform_data.app"]["input"])
	}
	h.mustRun(dir, "apply", "--scope", "pr-5", "-var", "input=v0")

	// Push 1 and push 2 plan; push 2's apply starts and holds the lease.
	plans := t.TempDir()
	older, newer := filepath.Join(plans, "push1.tfplan"), filepath.Join(plans, "push2.tfplan")
	h.mustRun(dir, "plan", "--scope", "pr-5", "-out", older, "-var", "input=v1")
	h.mustRun(dir, "plan", "--scope", "pr-5", "-out", newer, "-var", "input=v2", "-var", "gate="+filepath.Join(gates, "push2"))
	var newerErr lockedBuffer
	applyNewer := h.command(dir, nil, "apply", "--scope", "pr-5", "--wait", "--json", newer)
	applyNewer.Stderr = &newerErr
	if err := applyNewer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = applyNewer.Process.Kill() })
	waitFor(t, "push 2's apply to hold the lease", func() bool {
		b, err := os.ReadFile(leasePath("pr-5"))
		return err == nil && bytes.Contains(b, []byte(`"holder": "run-`))
	})

	// Push 1's apply arrives: it waits for the lease.
	var olderErr, olderOut lockedBuffer
	summary := filepath.Join(t.TempDir(), "older.md")
	applyOlder := h.command(dir, nil, "apply", "--scope", "pr-5", "--wait", "--json", "--summary", summary, older)
	applyOlder.Stderr, applyOlder.Stdout = &olderErr, &olderOut
	if err := applyOlder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = applyOlder.Process.Kill() })
	waitOutput(t, "push 1's apply to wait for the lease", &olderErr, &olderOut, "waiting for preview/pr-5")
	open("push2")
	if err := applyNewer.Wait(); err != nil {
		t.Fatalf("push 2's apply: %v\n%s", err, newerErr.String())
	}
	err := applyOlder.Wait()
	r := result{exit: applyOlder.ProcessState.ExitCode(), stdout: olderOut.String(), stderr: olderErr.String()}
	if err == nil || r.exit != 2 || r.code(t) != "PLAN_STALE" {
		t.Fatalf("push 1's saved plan after push 2 applied: exit %d, code %q; want 2, PLAN_STALE\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if got := input("pr-5"); got != "v2" {
		t.Errorf("the scope's input is %v after both applies, want push 2's v2: the stale plan must never apply", got)
	}
	if md := string(readFile(t, summary)); !strings.Contains(md, "**Waited for the lease:** held by `run-") {
		t.Errorf("push 1's summary does not say it waited for the lease:\n%s", md)
	}

	// Without saved plans: push 3's apply holds the lease, push 4's waits
	// and then applies over it.
	var thirdErr lockedBuffer
	third := h.command(dir, nil, "apply", "--scope", "pr-5", "--wait", "-var", "input=v3", "-var", "gate="+filepath.Join(gates, "push3"))
	third.Stdout, third.Stderr = &thirdErr, &thirdErr
	if err := third.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = third.Process.Kill() })
	waitFor(t, "push 3's apply to create its gate", func() bool {
		return strings.Contains(thirdErr.String(), "terraform_data.gate[0]: Creating...")
	})
	var fourthErr, fourthOut lockedBuffer
	fourth := h.command(dir, nil, "apply", "--scope", "pr-5", "--wait", "--json", "-var", "input=v4")
	fourth.Stdout, fourth.Stderr = &fourthOut, &fourthErr
	if err := fourth.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fourth.Process.Kill() })
	waitOutput(t, "push 4's apply to wait for the lease", &fourthErr, &fourthOut, "waiting for preview/pr-5")
	open("push3")
	if err := third.Wait(); err != nil {
		t.Fatalf("push 3's apply: %v\n%s", err, thirdErr.String())
	}
	if err := fourth.Wait(); err != nil {
		t.Fatalf("push 4's apply: %v\n%s", err, fourthErr.String())
	}
	if got := input("pr-5"); got != "v4" {
		t.Errorf("the scope's input is %v, want push 4's v4", got)
	}
}

// waitOutput waits until a running command's stderr holds want; it fails
// with what the command printed if the command ends first (its --json
// document on stdout) or the wait times out.
func waitOutput(t *testing.T, what string, stderr, stdout *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stderr.String(), want) {
		if strings.Contains(stdout.String(), `"ok"`) || time.Now().After(deadline) {
			t.Fatalf("no %q while waiting for %s:\nstdout:\n%s\nstderr:\n%s", want, what, stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
