package e2e_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// chainWorld is the chain of issue 25 (testdata/chain) in one scope of one
// store: fixture_object.a, then a terraform_data gate whose provisioner
// waits for the file open in marks, then four objects that depend on the
// gate (a reference under for_each, depends_on under count, a module's
// input).
type chainWorld struct {
	t          *testing.T
	h          *harness
	dir, marks string
	world      string
	env, where []string
	storeName  string
}

// chainDependents are the creates of testdata/chain that wait for the gate.
var chainDependents = []string{
	`fixture_object.after["x"]`, `fixture_object.after["y"]`, `fixture_object.later[0]`, `module.m.fixture_object.o`,
}

// chainObjects are the fixture objects the chain makes, by name.
var chainObjects = []string{"c-a", "c-x", "c-y", "c-later-0", "c-m"}

func newChainWorld(t *testing.T, h *harness, storeName string) *chainWorld {
	t.Helper()
	env, world := fixtureEnv(t)
	s := startStore(t, storeName, "chain")
	where := append([]string{"--scope", "pr-25"}, s.flags...)
	env = append(env, s.env...)
	dir := h.workdir("testdata/chain")
	copyTree(t, "testdata/chain/m", filepath.Join(dir, "m"))
	marks := t.TempDir()
	return &chainWorld{t: t, h: h, dir: dir, marks: marks, world: world, env: env, where: where, storeName: storeName}
}

// copyTree copies the regular files of src (one level) into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b := readFile(t, filepath.Join(src, e.Name()))
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *chainWorld) args(cmd string, extra ...string) []string {
	return append(append(append([]string{cmd}, c.where...), "-var", "marks="+c.marks), extra...)
}

// startUntilGate starts an apply and returns once the gate's provisioner
// runs and sponson has shown it: fixture_object.a is complete, the
// dependents wait for the gate. A run that ends before its gate fails the
// test, unless it lost its lease (errLostBeforeGate: see victimAtGate).
func (c *chainWorld) startUntilGate(extra ...string) (*victim, error) {
	v := &victim{cmd: c.h.command(c.dir, c.env, c.args("apply", extra...)...), exited: make(chan struct{})}
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	v.cmd.Stdout, v.cmd.Stderr = &v.out, &v.out
	if err := v.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = v.cmd.Wait(); close(v.exited) }()
	ended := false
	waitFor(c.t, "the gate's provisioner to start", func() bool {
		select {
		case <-v.exited:
			ended = true
			return true
		default:
		}
		_, err := os.Stat(filepath.Join(c.marks, "started"))
		// And sponson has shown the engine's report that it went past
		// fixture_object.a: it shows nothing after a completion a create
		// waits for before the completion is in the store.
		return err == nil && strings.Contains(v.out.String(), "terraform_data.gate: Provisioning with 'local-exec'")
	})
	if !ended {
		return v, nil
	}
	if lostLease(v.cmd.ProcessState.ExitCode(), v.out.String()) {
		return v, fmt.Errorf("%w:\n%s", errLostBeforeGate, v.out.String())
	}
	c.t.Fatalf("the run ended before its gate:\n%s", v.out.String())
	return nil, nil
}

// errLostBeforeGate: the run lost its lease before it reached its gate.
var errLostBeforeGate = errors.New("the run lost its lease before its gate")

// lostLease: a run ended LOCK_LOST (exit 3).
func lostLease(exit int, out string) bool { return exit == 3 && strings.Contains(out, "LOCK_LOST") }

// leaseRounds bounds the rounds a test starts again because its
// short-lease victim lost its lease early (victimAtGate, untilKilled): a
// victim that loses it in every round points at the renewal, not at a
// loaded machine, and fails the test.
const leaseRounds = 5

// victimAtGate builds a world and starts its victim with a short lease
// (extra holds --lease-ttl 2s, so that the run after a kill or a stop need
// not wait long for the lease), and returns them once the victim is at its
// gate. On a loaded machine such a victim can lose its lease before its
// gate: it then ends LOCK_LOST, as a run that lost its lease must, and what
// the test means to check never happened. That round is not a failure: the
// next starts again, in a fresh world, up to leaseRounds rounds.
func victimAtGate(t *testing.T, world func() *chainWorld, extra ...string) (*chainWorld, *victim) {
	t.Helper()
	for round := 1; ; round++ {
		c := world()
		v, err := c.startUntilGate(extra...)
		switch {
		case err == nil:
			return c, v
		case !errors.Is(err, errLostBeforeGate) || round == leaseRounds:
			t.Fatalf("round %d: %v", round, err)
		}
		t.Logf("round %d (a loaded machine?): %v\nagain in a fresh world", round, err)
	}
}

// victim is a run the test stops.
type victim struct {
	cmd    *exec.Cmd
	out    lockedBuffer
	exited chan struct{}
}

// open lets every gate through.
func (c *chainWorld) open() {
	if err := os.WriteFile(filepath.Join(c.marks, "open"), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *chainWorld) latest() *receipt.Receipt {
	args := append([]string{"receipt", "--json"}, c.where...)
	r := c.h.run(c.dir, c.env, args...)
	var env struct {
		Result *receipt.Receipt `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil || env.Result == nil {
		c.t.Fatalf("sponson receipt: exit %d %v\n%s\n%s", r.exit, err, r.stdout, r.stderr)
	}
	return env.Result
}

// checkWorld: every chain object exists once and the ledger owns it, no
// entry is unresolved, and nothing else exists.
func (c *chainWorld) checkWorld(rec *receipt.Receipt) {
	t := c.t
	files, _ := filepath.Glob(filepath.Join(c.world, "objects", "*.json"))
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	slices.Sort(names)
	want := slices.Clone(chainObjects)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the world holds %v, want %v", names, want)
	}
	owned := map[string]string{}
	for _, e := range rec.Ledger {
		if e.CreatedBy == receipt.CreatedByUnresolved || e.CreatedBy == receipt.CreatedByIntent {
			t.Errorf("ledger entry %s is %s after the recovery", e.Address, e.CreatedBy)
		}
		owned[e.Address] = e.ID
	}
	for _, name := range chainObjects {
		obj, err := fixtureprovider.ReadObject(c.world, name)
		if err != nil {
			continue
		}
		found := false
		for _, id := range owned {
			found = found || id == obj.ID
		}
		if !found {
			t.Errorf("object %s (id %s) is owned by no ledger entry: %+v", name, obj.ID, rec.Ledger)
		}
	}
}

// outcomes maps each settled address to its outcome.
func outcomes(settled []receipt.Settlement) map[string]receipt.Settlement {
	out := map[string]receipt.Settlement{}
	for _, s := range settled {
		out[s.Address] = s
	}
	return out
}

// TestE2EKilledChainSettlesItself is the chain of issue 25: a run is
// SIGKILLed (its whole process group, a lost CI runner) while the gate's
// provisioner runs. The next apply needs no person: fixture_object.a had
// completed (adopted or claimed), the gate is terraform_data (state only:
// not created, created again), and its four dependents cannot have started
// (not created). It creates what is missing and nothing twice. The stores'
// worlds are independent: they run side by side, each with its own harness.
func TestE2EKilledChainSettlesItself(t *testing.T) {
	e2e(t)
	for _, storeName := range []string{"file", "git", "s3", "postgres", "gcs", "azblob"} {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			h := e2e(t)
			c, v := victimAtGate(t, func() *chainWorld { return newChainWorld(t, h, storeName) }, "--lease-ttl", "2s")
			if err := syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-v.exited
			waitFor(t, "the killed run's provisioner to end", func() bool { return !processWithArg(c.marks + "/open") })
			c.open()
			r := c.h.run(c.dir, c.env, c.args("apply", "--wait", "--json")...)
			if r.exit != 0 {
				t.Fatalf("the apply after the kill: exit %d %s\n%s\n%s\nthe killed run:\n%s", r.exit, r.code(t), r.stdout, r.stderr, v.out.String())
			}
			rec := c.latest()
			got := outcomes(rec.Settled)
			t.Logf("settled: %+v", rec.Settled)
			if s := got["fixture_object.a"]; s.Outcome != receipt.SettledAdopted && s.Outcome != receipt.SettledClaimed {
				t.Errorf("fixture_object.a, complete before the kill, settled %+v, want adopted or claimed", s)
			}
			if s := got["terraform_data.gate"]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonStateOnly {
				t.Errorf("the gate settled %+v, want not created (state only)", s)
			}
			for _, addr := range chainDependents {
				if s := got[addr]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonNotStarted || !strings.Contains(s.Note, "terraform_data.gate") {
					t.Errorf("%s settled %+v, want not created, waiting for terraform_data.gate", addr, s)
				}
			}
			c.checkWorld(rec)
		})
	}
}

// TestE2ECancelledChainIsGraceful: SIGINT or SIGTERM to sponson (what CI
// hosts send on cancel) while the gate's provisioner runs is passed to the
// engine, which stops and writes its state; sponson records what completed,
// writes its receipt and releases the lease, on every store. The next
// apply, without --wait, takes the lease at once and needs no person.
func TestE2ECancelledChainIsGraceful(t *testing.T) {
	e2e(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, storeName := range []string{"file", "git", "s3", "postgres"} {
			t.Run(sig.String()+"/"+storeName, func(t *testing.T) {
				h := e2e(t)
				c := newChainWorld(t, h, storeName)
				v, err := c.startUntilGate()
				if err != nil {
					t.Fatal(err)
				}
				if err := v.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				<-v.exited
				if code := v.cmd.ProcessState.ExitCode(); code == 0 {
					t.Fatalf("the cancelled run exited 0:\n%s", v.out.String())
				}
				rec := c.latest()
				if rec.Status != receipt.StatusCancelled {
					t.Fatalf("the cancelled run's latest receipt is %s, want cancelled:\n%s", rec.Status, v.out.String())
				}
				for _, e := range rec.Ledger {
					if e.CreatedBy == receipt.CreatedByIntent || e.CreatedBy == receipt.CreatedByUnresolved {
						t.Errorf("after the cancel, %s is %s", e.Address, e.CreatedBy)
					}
				}
				c.open()
				r := c.h.run(c.dir, c.env, c.args("apply", "--json")...)
				if r.exit != 0 {
					t.Fatalf("the apply after the cancel: exit %d %s\n%s\n%s\nthe cancelled run:\n%s", r.exit, r.code(t), r.stdout, r.stderr, v.out.String())
				}
				c.checkWorld(c.latest())
			})
		}
	}
}

// TestE2EStoppedChainIsTakenOver: a run stopped (SIGSTOP) past its TTL
// while the gate's provisioner runs, a stuck runner, is taken over by the
// next run, which settles by the same rules as after a kill (issue 25 item
// 6): fixture_object.a adopted, the gate and its dependents not created.
// The taker's gate opens (its own marks); the stopped run, continued,
// ends LOCK_LOST and changes nothing.
func TestE2EStoppedChainIsTakenOver(t *testing.T) {
	h := e2e(t)
	c, v := victimAtGate(t, func() *chainWorld { return newChainWorld(t, h, "file") }, "--lease-ttl", "2s")
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
	if s := got["fixture_object.a"]; s.Outcome != receipt.SettledAdopted {
		t.Errorf("fixture_object.a settled %+v, want adopted", s)
	}
	if s := got["terraform_data.gate"]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonStateOnly {
		t.Errorf("the gate settled %+v, want dropped (state only)", s)
	}
	for _, addr := range chainDependents {
		if s := got[addr]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonNotStarted {
			t.Errorf("%s settled %+v, want dropped (not started)", addr, s)
		}
	}
	c.checkWorld(rec)
}

// TestE2EKilledEngineForgetsNothing: the engine alone is SIGKILLed (an OOM
// kill) while the gate's provisioner runs; sponson lives on and writes its
// receipt from a state that lacks what the engine had not persisted. The
// creates the engine may have made stay intents, fixture_object.a with its
// recorded completion, so the next apply adopts a and needs no person.
func TestE2EKilledEngineForgetsNothing(t *testing.T) {
	h := e2e(t)
	c := newChainWorld(t, h, "file")
	v, err := c.startUntilGate()
	if err != nil {
		t.Fatal(err)
	}
	engine := 0
	waitFor(t, "the engine's process", func() bool {
		engine = parentOfProcessWithArg(c.marks + "/open")
		return engine != 0
	})
	if err := syscall.Kill(engine, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-v.exited
	if code := v.cmd.ProcessState.ExitCode(); code == 0 {
		t.Fatalf("the run whose engine was killed exited 0:\n%s", v.out.String())
	}
	killed := c.latest()
	open := map[string]bool{}
	for _, e := range killed.Ledger {
		if e.CreatedBy == receipt.CreatedByIntent {
			open[e.Address] = true
		}
	}
	if !open["fixture_object.a"] {
		t.Fatalf("the receipt forgot fixture_object.a, whose create completed: ledger %+v\n%s", killed.Ledger, v.out.String())
	}
	c.open()
	r := h.run(c.dir, c.env, c.args("apply", "--json")...)
	if r.exit != 0 {
		t.Fatalf("the apply after the engine's kill: exit %d %s\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	rec := c.latest()
	if s := outcomes(rec.Settled)["fixture_object.a"]; s.Outcome != receipt.SettledAdopted {
		t.Errorf("fixture_object.a settled %+v, want adopted", s)
	}
	c.checkWorld(rec)
}

// parentOfProcessWithArg returns the parent of a process of this machine
// with s in its command line, 0 if there is none.
func parentOfProcessWithArg(s string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), s) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		var ppid int
		if _, err := fmt.Sscanf(string(stat)[i+1:], " %c %d", new(byte), &ppid); err == nil && ppid > 1 {
			return ppid
		}
	}
	return 0
}

// TestE2ESecondInterruptStopsAtOnce: a second SIGINT to sponson is passed
// to the engine, which then stops at once instead of waiting for the create
// it has in flight at a provider that ignores the first (the fixture's,
// with a ten-minute create). The create it gave up on is kept as an intent,
// and the next apply refuses to create it again, naming its planned values
// (issue 25 items 4, 5), until a person says it is gone.
func TestE2ESecondInterruptStopsAtOnce(t *testing.T) {
	h := e2e(t)
	env, world := fixtureEnv(t)
	env = append(env, fixtureprovider.EnvCreateDelay+"=10m", fixtureprovider.EnvCreateIgnoresStop+"=1")
	dir := h.workdir("testdata/fixture")
	objects := objectsVar("o0", "hurried-o0")
	v := &victim{cmd: h.command(dir, env, "apply", "--scope", "pr-26", "-var", objects), exited: make(chan struct{})}
	v.cmd.Stdout, v.cmd.Stderr = &v.out, &v.out
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = v.cmd.Wait(); close(v.exited) }()
	waitFor(t, "the create to start", func() bool {
		return strings.Contains(v.out.String(), `fixture_object.o["o0"]: Creating...`)
	})
	if err := v.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the engine to take the first interrupt", func() bool {
		return strings.Contains(v.out.String(), "Interrupt received")
	})
	select {
	case <-v.exited:
		t.Fatalf("the run ended on the first interrupt, with its create in flight:\n%s", v.out.String())
	default:
	}
	if err := v.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The create takes ten minutes: the run ends long before only if the
	// second interrupt stopped the engine.
	waitFor(t, "the run to end after the second interrupt", func() bool {
		select {
		case <-v.exited:
			return true
		default:
			return false
		}
	})
	if code := v.cmd.ProcessState.ExitCode(); code == 0 {
		t.Fatalf("the interrupted run exited 0:\n%s", v.out.String())
	}
	// The engine's own word that the second interrupt reached it (without
	// it, terraform-exec kills the engine a minute after the first).
	if !strings.Contains(v.out.String(), "Two interrupts received") {
		t.Errorf("the engine did not get the second interrupt:\n%s", v.out.String())
	}
	rec := latestReceipt(t, dir, "preview", "pr-26")
	if rec.Status == receipt.StatusRunning {
		t.Fatalf("the interrupted run left its checkpoint:\n%s", v.out.String())
	}
	kept := false
	for _, e := range rec.Ledger {
		kept = kept || (e.Address == `fixture_object.o["o0"]` && e.CreatedBy == receipt.CreatedByIntent)
	}
	if !kept {
		t.Fatalf("the create the engine gave up on is not kept: ledger %+v\n%s", rec.Ledger, v.out.String())
	}
	// In flight at a provider: a person is asked, with its planned values.
	quick := []string{"FIXTURE_DIR=" + world}
	quick = append(quick, env[0])
	r := h.run(dir, quick, "apply", "--scope", "pr-26", "--json", "-var", objects)
	if r.exit == 0 || r.code(t) != "INTENT_UNRESOLVED" || !strings.Contains(r.stdout, `name=\"hurried-o0\"`) {
		t.Fatalf("the apply after the interrupts: exit %d %s, want INTENT_UNRESOLVED naming name=\"hurried-o0\"\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	st := h.run(dir, quick, "status", "--json")
	if !strings.Contains(st.stdout, `name=\"hurried-o0\"`) {
		t.Errorf("status does not name the unresolved create's planned values:\n%s", st.stdout)
	}
	if _, err := fixtureprovider.ReadObject(world, "hurried-o0"); err == nil {
		t.Fatal("the object exists: the create the engine gave up on went on")
	}
	h.mustRunEnv(dir, quick, "resolve", `fixture_object.o["o0"]`, "--gone", "--scope", "pr-26")
	h.mustRunEnv(dir, quick, "apply", "--scope", "pr-26", "-var", objects)
	if _, err := fixtureprovider.ReadObject(world, "hurried-o0"); err != nil {
		t.Fatalf("after the person's word the apply did not create the object: %v", err)
	}
}

// TestE2ECancelWaitsForTheProvider: SIGTERM or SIGINT to sponson while a
// create is in flight at a plugin provider that does not stop for the
// engine (the fixture's, three seconds), on every store: the engine
// finishes the create and writes its state, sponson records it, releases
// the lease and writes its receipt (cancelled); the next apply, without
// --wait, finds nothing to do and asks no person.
func TestE2ECancelWaitsForTheProvider(t *testing.T) {
	e2e(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, storeName := range []string{"file", "git", "s3", "postgres"} {
			t.Run(sig.String()+"/"+storeName, func(t *testing.T) { cancelWaitsForTheProvider(t, sig, storeName) })
		}
	}
}

func cancelWaitsForTheProvider(t *testing.T, sig syscall.Signal, storeName string) {
	h := e2e(t)
	c := newChainWorld(t, h, storeName)
	dir := h.workdir("testdata/fixture")
	objects := objectsVar("o0", "cancelled-o0")
	slow := append(slices.Clone(c.env), fixtureprovider.EnvCreateDelay+"=3s", fixtureprovider.EnvCreateIgnoresStop+"=1")
	args := append(append([]string{"apply"}, c.where...), "-var", objects)
	v := &victim{cmd: h.command(dir, slow, args...), exited: make(chan struct{})}
	v.cmd.Stdout, v.cmd.Stderr = &v.out, &v.out
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = v.cmd.Wait(); close(v.exited) }()
	waitFor(t, "the create to start", func() bool {
		return strings.Contains(v.out.String(), `fixture_object.o["o0"]: Creating...`)
	})
	if err := v.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	<-v.exited
	if !strings.Contains(v.out.String(), `fixture_object.o["o0"]: Creation complete`) {
		t.Fatalf("the engine did not finish the create in flight:\n%s", v.out.String())
	}
	obj, err := fixtureprovider.ReadObject(c.world, "cancelled-o0")
	if err != nil {
		t.Fatalf("the object of the create in flight: %v\n%s", err, v.out.String())
	}
	c.dir = dir
	rec := c.latest()
	owned := false
	for _, e := range rec.Ledger {
		if e.CreatedBy == receipt.CreatedByIntent || e.CreatedBy == receipt.CreatedByUnresolved {
			t.Errorf("after the cancel, %s is %s", e.Address, e.CreatedBy)
		}
		owned = owned || (e.Address == `fixture_object.o["o0"]` && e.ID == obj.ID)
	}
	if rec.Status != receipt.StatusCancelled || rec.Error == nil || rec.Error.Code != "INTERRUPTED" || !owned {
		t.Fatalf("the cancelled run's receipt: status %s, error %+v, ledger %+v; want cancelled, INTERRUPTED, the object owned\n%s", rec.Status, rec.Error, rec.Ledger, v.out.String())
	}
	r := h.run(dir, c.env, append(append([]string{"apply", "--json"}, c.where...), "-var", objects)...)
	if r.exit != 0 {
		t.Fatalf("the apply after the cancel: exit %d %s\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if next := c.latest(); next.Status != receipt.StatusUnchanged || len(next.Settled) != 0 {
		t.Errorf("the apply after the cancel: status %s, settled %+v; want unchanged, nothing to settle", next.Status, next.Settled)
	}
}
