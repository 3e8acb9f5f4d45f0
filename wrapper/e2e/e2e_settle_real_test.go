package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// realChainFiles are the files testdata/chainlocal writes, by address.
var realChainFiles = map[string]string{
	"local_file.a":          "a.txt",
	`local_file.after["x"]`: "x.txt",
	`local_file.after["y"]`: "y.txt",
	"local_file.later[0]":   "later-0.txt",
}

// realChainDependents are the creates of testdata/chainlocal that wait for
// the gate.
var realChainDependents = []string{`local_file.after["x"]`, `local_file.after["y"]`, "local_file.later[0]"}

// newRealChainWorld is the chain of issue 25 over HashiCorp's local
// provider (testdata/chainlocal, the real-provider tier): local_file.a,
// the terraform_data gate, three local_files after it. out is where the
// files are written.
func newRealChainWorld(t *testing.T, h *harness, storeName string) (c *chainWorld, out string) {
	t.Helper()
	mirror := realproviders.Install(t)
	c = newChainWorld(t, h, storeName)
	cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	out = t.TempDir()
	c.dir = h.workdir("testdata/chainlocal")
	c.env = append(c.env, "TF_CLI_CONFIG_FILE="+cfg, "TF_VAR_out="+out)
	return c, out
}

// checkRealChain: every file of the chain exists, the ledger owns each
// address once, and no entry is left open.
func checkRealChain(t *testing.T, rec *receipt.Receipt, out string) {
	t.Helper()
	owned := map[string]int{}
	for _, e := range rec.Ledger {
		if e.CreatedBy == receipt.CreatedByUnresolved || e.CreatedBy == receipt.CreatedByIntent {
			t.Errorf("ledger entry %s is %s after the recovery", e.Address, e.CreatedBy)
		}
		owned[e.Address]++
	}
	for addr, name := range realChainFiles {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
		if owned[addr] != 1 {
			t.Errorf("the ledger owns %s %d times, want once: %+v", addr, owned[addr], rec.Ledger)
		}
	}
	if owned["terraform_data.gate"] != 1 {
		t.Errorf("the ledger owns the gate %d times, want once", owned["terraform_data.gate"])
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(files) != len(realChainFiles) {
		t.Errorf("the output directory holds %v, want the %d files of the chain", files, len(realChainFiles))
	}
}

// TestE2ERealProvidersKilledChain is the chain of issue 25 with the real
// local provider: the run is SIGKILLed (its whole process group) while the
// gate's provisioner runs. local_file has no import, so the completion of
// local_file.a cannot be adopted by id; the next apply needs no person all
// the same.
func TestE2ERealProvidersKilledChain(t *testing.T) {
	e2e(t)
	for _, storeName := range []string{"file", "git"} {
		t.Run(storeName, func(t *testing.T) {
			h := e2e(t)
			var out string
			c, v := victimAtGate(t, func() (c *chainWorld) { c, out = newRealChainWorld(t, h, storeName); return c }, "--lease-ttl", "2s")
			if err := syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-v.exited
			waitFor(t, "the killed run's provisioner to end", func() bool { return !processWithArg(c.marks + "/open") })
			killed := c.latest()
			t.Logf("the killed run's checkpoint: status %s, completed %+v", killed.Status, killed.Completed)
			c.open()
			r := c.h.run(c.dir, c.env, c.args("apply", "--wait", "--json")...)
			rec := c.latest()
			t.Logf("settled: %+v", rec.Settled)
			if r.exit != 0 {
				t.Fatalf("the apply after the kill: exit %d %s\n%s\n%s\nthe killed run:\n%s", r.exit, r.code(t), r.stdout, r.stderr, v.out.String())
			}
			got := outcomes(rec.Settled)
			if s := got["local_file.a"]; s.Outcome == receipt.SettledUnresolved || s.Outcome == "" {
				t.Errorf("local_file.a, complete before the kill, settled %+v", s)
			}
			if s := got["terraform_data.gate"]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonStateOnly {
				t.Errorf("the gate settled %+v, want not created (state only)", s)
			}
			for _, addr := range realChainDependents {
				if s := got[addr]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonNotStarted || !strings.Contains(s.Note, "terraform_data.gate") {
					t.Errorf("%s settled %+v, want not created, waiting for terraform_data.gate", addr, s)
				}
			}
			checkRealChain(t, rec, out)
		})
	}
}

// TestE2ERealProvidersKilledChainMovedFile: after the same kill, the next
// apply plans local_file.a at another filename: creating it there would
// leave the file the killed run wrote owned by nobody, so the run refuses
// (INTENT_UNRESOLVED, naming the planned filename) and that file stays.
func TestE2ERealProvidersKilledChainMovedFile(t *testing.T) {
	h := e2e(t)
	var out string
	c, v := victimAtGate(t, func() (c *chainWorld) { c, out = newRealChainWorld(t, h, "file"); return c }, "--lease-ttl", "2s")
	if err := syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-v.exited
	waitFor(t, "the killed run's provisioner to end", func() bool { return !processWithArg(c.marks + "/open") })
	c.open()
	elsewhere := t.TempDir()
	r := c.h.run(c.dir, append(c.env, "TF_VAR_out="+elsewhere), c.args("apply", "--wait", "--json")...)
	if r.exit == 0 || r.code(t) != "INTENT_UNRESOLVED" || !strings.Contains(r.stdout, filepath.Join(out, "a.txt")) {
		t.Fatalf("the apply at another filename: exit %d %s, want INTENT_UNRESOLVED naming %s\n%s\n%s", r.exit, r.code(t), filepath.Join(out, "a.txt"), r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "a.txt")); err == nil {
		t.Error("local_file.a was created at the other filename")
	}
	if _, err := os.Stat(filepath.Join(out, "a.txt")); err != nil {
		t.Errorf("the file the killed run wrote: %v", err)
	}
	// At its own filename again, the next apply rewrites it.
	r = c.h.run(c.dir, c.env, c.args("apply", "--json")...)
	if r.exit != 0 {
		t.Fatalf("the apply at the same filename: exit %d %s\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	rec := c.latest()
	if s := outcomes(rec.Settled)["local_file.a"]; s.Outcome != receipt.SettledRewritten {
		t.Errorf("local_file.a settled %+v, want rewritten", s)
	}
	checkRealChain(t, rec, out)
}

// TestE2ERealProvidersStoppedChainIsTakenOver: a run of the real-provider
// chain stopped (SIGSTOP) past its TTL while the gate's provisioner runs is
// taken over by the next run, which settles by the same rules as after a
// kill (issue 25 item 6): local_file.a rewritten at its filename, the gate
// state-only, its dependents not started; no INTENT_UNRESOLVED. The
// stopped run, continued, ends LOCK_LOST.
func TestE2ERealProvidersStoppedChainIsTakenOver(t *testing.T) {
	h := e2e(t)
	var out string
	c, v := victimAtGate(t, func() (c *chainWorld) { c, out = newRealChainWorld(t, h, "file"); return c }, "--lease-ttl", "2s")
	stopOutsideMutex(t, v.cmd.Process)
	taker := &chainWorld{t: t, h: h, dir: c.dir, marks: t.TempDir(), world: c.world, env: c.env, where: c.where}
	taker.open()
	r := h.run(c.dir, c.env, taker.args("apply", "--wait", "--wait-timeout", "2m", "--json")...)
	if err := v.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	<-v.exited
	if r.exit != 0 {
		t.Fatalf("the apply that took over: exit %d %s\n%s\n%s\nthe stopped run:\n%s", r.exit, r.code(t), r.stdout, r.stderr, v.out.String())
	}
	if !strings.Contains(r.stderr, "took over an expired lease") {
		t.Errorf("the takeover was not reported:\n%s", r.stderr)
	}
	if code := v.cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("the stopped run, continued: exit %d, want 3 LOCK_LOST\n%s", code, v.out.String())
	}
	rec := c.latest()
	got := outcomes(rec.Settled)
	t.Logf("settled: %+v", rec.Settled)
	if s := got["local_file.a"]; s.Outcome != receipt.SettledRewritten && s.Outcome != receipt.SettledClaimed {
		t.Errorf("local_file.a settled %+v, want rewritten (or claimed)", s)
	}
	if s := got["terraform_data.gate"]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonStateOnly {
		t.Errorf("the gate settled %+v, want dropped (state only)", s)
	}
	for _, addr := range realChainDependents {
		if s := got[addr]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonNotStarted {
			t.Errorf("%s settled %+v, want dropped (not started)", addr, s)
		}
	}
	checkRealChain(t, rec, out)
}

// TestE2ERealProvidersCancelWithSleepInFlight: SIGTERM or SIGINT to
// sponson while a time_sleep of ten minutes is in flight at HashiCorp's
// time provider (testdata/cancelsleep): the engine stops the provider,
// whose create gives up, and writes its state; sponson records local_file.a,
// releases the lease and writes its receipt (cancelled) long before the
// sleep would end. The next apply, without --wait, needs no person.
func TestE2ERealProvidersCancelWithSleepInFlight(t *testing.T) {
	e2e(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, storeName := range []string{"file", "git"} {
			t.Run(sig.String()+"/"+storeName, func(t *testing.T) {
				h := e2e(t)
				c, out := newRealChainWorld(t, h, storeName)
				c.dir = h.workdir("testdata/cancelsleep")
				args := append([]string{"apply"}, c.where...)
				v := &victim{cmd: h.command(c.dir, c.env, args...), exited: make(chan struct{})}
				v.cmd.Stdout, v.cmd.Stderr = &v.out, &v.out
				if err := v.cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go func() { _ = v.cmd.Wait(); close(v.exited) }()
				waitFor(t, "the sleep to start", func() bool {
					return strings.Contains(v.out.String(), "time_sleep.wait: Creating...")
				})
				if err := v.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				// The sleep takes ten minutes, waitFor's patience two.
				waitFor(t, "the cancelled run to end", func() bool {
					select {
					case <-v.exited:
						return true
					default:
						return false
					}
				})
				if code := v.cmd.ProcessState.ExitCode(); code == 0 {
					t.Fatalf("the cancelled run exited 0:\n%s", v.out.String())
				}
				rec := c.latest()
				if rec.Status != receipt.StatusCancelled {
					t.Fatalf("the cancelled run's receipt: status %s, want cancelled\n%s", rec.Status, v.out.String())
				}
				owned := false
				for _, e := range rec.Ledger {
					if e.CreatedBy == receipt.CreatedByIntent || e.CreatedBy == receipt.CreatedByUnresolved {
						t.Errorf("after the cancel, %s is %s", e.Address, e.CreatedBy)
					}
					owned = owned || (e.Address == "local_file.a" && e.CreatedBy == receipt.CreatedBySponson)
				}
				if !owned {
					t.Errorf("the cancelled run's ledger does not own local_file.a: %+v", rec.Ledger)
				}
				r := h.run(c.dir, c.env, append(append([]string{"apply", "--json"}, c.where...), "-var", "sleep=1s")...)
				if r.exit != 0 {
					t.Fatalf("the apply after the cancel: exit %d %s\n%s\n%s\nthe cancelled run:\n%s", r.exit, r.code(t), r.stdout, r.stderr, v.out.String())
				}
				next := c.latest()
				if len(next.Settled) != 0 {
					t.Errorf("the apply after the cancel settled %+v, want nothing to settle", next.Settled)
				}
				if _, err := os.Stat(filepath.Join(out, "a.txt")); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestE2ERealProvidersKilledReplacement: the chain applied, then a change
// of a.txt's content replaces local_file.a (delete, then create at the same
// filename), the gate and the files after it; the run is SIGKILLed while
// the new gate's provisioner runs. The state the engine had not persisted
// still holds the old local_file.a, whose delete completed: the next apply
// writes a.txt again (rewritten), the old gate is claimed from the state and
// replaced again, the files after it had not started, and no person is
// asked.
func TestE2ERealProvidersKilledReplacement(t *testing.T) {
	h := e2e(t)
	var c *chainWorld
	var out string
	second, v := victimAtGate(t, func() *chainWorld {
		c, out = newRealChainWorld(t, h, "file")
		c.open()
		if r := h.run(c.dir, c.env, c.args("apply")...); r.exit != 0 {
			t.Fatalf("the first apply: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
		}
		return &chainWorld{t: t, h: h, dir: c.dir, marks: t.TempDir(), world: c.world, env: c.env, where: c.where}
	}, "--lease-ttl", "2s", "-var", "a=second")
	if !strings.Contains(v.out.String(), "local_file.a: Creation complete") {
		t.Fatalf("the replacement of local_file.a did not complete before the gate:\n%s", v.out.String())
	}
	if err := syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-v.exited
	waitFor(t, "the killed run's provisioner to end", func() bool { return !processWithArg(second.marks + "/open") })
	second.open()
	r := h.run(c.dir, c.env, second.args("apply", "--wait", "--json", "-var", "a=second")...)
	rec := c.latest()
	t.Logf("settled: %+v", rec.Settled)
	if r.exit != 0 {
		t.Fatalf("the apply after the kill: exit %d %s\n%s\n%s\nthe killed run:\n%s", r.exit, r.code(t), r.stdout, r.stderr, v.out.String())
	}
	got := outcomes(rec.Settled)
	if s := got["local_file.a"]; s.Outcome != receipt.SettledRewritten {
		t.Errorf("local_file.a settled %+v, want rewritten", s)
	}
	// The state still holds the old gate: a state-only object is what
	// the state holds (claimed), and the plan replaces it again.
	if s := got["terraform_data.gate"]; s.Outcome != receipt.SettledClaimed {
		t.Errorf("the gate settled %+v, want claimed (the old one, in the state)", s)
	}
	for _, addr := range realChainDependents {
		if s, ok := got[addr]; ok && s.Outcome == receipt.SettledUnresolved {
			t.Errorf("%s settled %+v", addr, s)
		}
	}
	if b := readFile(t, filepath.Join(out, "a.txt")); string(b) != "second\n" {
		t.Errorf("a.txt holds %q, want the new content", b)
	}
	checkRealChain(t, rec, out)
}

// TestE2ERealProvidersCancelledChain: SIGTERM or SIGINT to sponson while
// the real-provider chain's gate runs: the engine stops after the gate,
// sponson records local_file.a, writes its receipt (cancelled) and
// releases the lease; the next apply, without --wait, needs no person and
// makes the rest.
func TestE2ERealProvidersCancelledChain(t *testing.T) {
	e2e(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, storeName := range []string{"file", "git"} {
			t.Run(sig.String()+"/"+storeName, func(t *testing.T) {
				h := e2e(t)
				c, out := newRealChainWorld(t, h, storeName)
				v, err := c.startUntilGate()
				if err != nil {
					t.Fatal(err)
				}
				if err := v.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				// The engine waits for the provisioner it runs: once it has
				// the interrupt, let the provisioner end.
				waitFor(t, "the engine to take the interrupt", func() bool {
					return strings.Contains(v.out.String(), "Interrupt received")
				})
				c.open()
				<-v.exited
				if code := v.cmd.ProcessState.ExitCode(); code == 0 {
					t.Fatalf("the cancelled run exited 0:\n%s", v.out.String())
				}
				rec := c.latest()
				if rec.Status != receipt.StatusCancelled {
					t.Fatalf("the cancelled run's receipt is %s, want cancelled:\n%s", rec.Status, v.out.String())
				}
				for _, e := range rec.Ledger {
					if e.CreatedBy == receipt.CreatedByIntent || e.CreatedBy == receipt.CreatedByUnresolved {
						t.Errorf("after the cancel, %s is %s", e.Address, e.CreatedBy)
					}
				}
				r := h.run(c.dir, c.env, c.args("apply", "--json")...)
				if r.exit != 0 {
					t.Fatalf("the apply after the cancel: exit %d %s\n%s\n%s\nthe cancelled run:\n%s", r.exit, r.code(t), r.stdout, r.stderr, v.out.String())
				}
				next := c.latest()
				if len(next.Settled) != 0 {
					t.Errorf("the apply after the cancel settled %+v, want nothing to settle", next.Settled)
				}
				checkRealChain(t, next, out)
			})
		}
	}
}
