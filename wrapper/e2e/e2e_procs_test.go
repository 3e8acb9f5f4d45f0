package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The hang guard. Every process the harness starts carries a tag in its
// environment (envTag), which everything it starts inherits: the engine, its
// providers and provisioners, the run's watcher (package reaper). A command
// that has not ended after hangLimit is a hang, not a slow machine (a
// command takes seconds; the longest wait a test asks for is 5 minutes): the
// guard prints the tagged processes, kills them and fails the test naming
// the command, instead of leaving the package to its timeout, which names
// nothing. It is a hang detector, never a speed assertion.

// envTag is the environment variable that tags a command's processes.
const envTag = "SPONSON_E2E_PROC"

// hangLimit is how long one command may run before the guard calls it hung.
// A test's deadline (go test -timeout) shortens it, so that the guard trips
// before the package times out.
const hangLimit = 10 * time.Minute

// pipeGrace is how long a command's output pipes may stay open after the
// command exited: a process it started that inherited them and lives on
// would otherwise block Wait until it ends (exec.Cmd.WaitDelay).
const pipeGrace = time.Minute

// errHung is the cause of a guard's context when its limit ran out.
var errHung = errors.New("hung")

// tagSeq numbers the commands of this test binary; with its pid it makes a
// tag that no other test binary on the machine uses.
var tagSeq atomic.Int64

// guard watches one command.
type guard struct {
	t     testing.TB
	tag   string // envTag=VALUE
	line  string // the command line, for the failure
	limit time.Duration
	hung  atomic.Bool
}

// guarded returns a command for name in dir with exactly env, tagged and
// watched by a guard (see above). Cleanup ends whatever of it is left when
// the test ends.
func (h *harness) guarded(dir string, env []string, name string, args ...string) *exec.Cmd {
	g := &guard{
		t:     h.t,
		tag:   fmt.Sprintf("%s=%d/%s/%d", envTag, os.Getpid(), h.t.Name(), tagSeq.Add(1)),
		line:  strings.Join(append([]string{filepath.Base(name)}, args...), " "),
		limit: commandLimit(h.t),
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), g.limit, errHung)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, env...), g.tag)
	cmd.WaitDelay = pipeGrace
	// Called when the limit runs out, or at cleanup for a command the test
	// never waited for.
	cmd.Cancel = func() error {
		if errors.Is(context.Cause(ctx), errHung) {
			g.hung.Store(true)
			g.t.Errorf("HANG: `%s` (in %s) had not ended after %s; killing it and everything it started:\n%s", g.line, dir, g.limit, g.processes())
		}
		g.kill()
		return cmd.Process.Kill()
	}
	h.mu.Lock()
	if h.guards == nil {
		h.guards = map[*exec.Cmd]*guard{}
	}
	h.guards[cmd] = g
	h.mu.Unlock()
	h.t.Cleanup(func() {
		cancel()
		if left := g.pids(); len(left) > 0 {
			// A run's watcher may still be finishing; anything else is a
			// process that outlived its command.
			g.t.Logf("processes of `%s` still running when the test ended (killed):\n%s", g.line, g.processes())
			g.kill()
		}
	})
	return cmd
}

// hung reports whether cmd's guard tripped.
func (h *harness) hung(cmd *exec.Cmd) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.guards[cmd]
	return g != nil && g.hung.Load()
}

// commandLimit is hangLimit, or less when the test's deadline is sooner:
// the guard must trip while there is time left to report.
func commandLimit(t testing.TB) time.Duration {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return hangLimit
	}
	deadline, ok := d.Deadline()
	if !ok {
		return hangLimit
	}
	left := time.Until(deadline)
	return min(hangLimit, max(left-time.Minute, left/2, time.Second))
}

// pids returns the processes carrying the guard's tag.
func (g *guard) pids() []int {
	want := []byte(g.tag + "\x00")
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		if procState(pid) == 'Z' {
			continue // dead, waiting for its parent
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err == nil && bytes.Contains(append(env, 0), want) {
			out = append(out, pid)
		}
	}
	return out
}

// kill kills every process carrying the guard's tag: a stopped one too
// (SIGKILL needs no SIGCONT), and the orphans the command's own process
// left, which no process group reaches (the engine runs in a group of its
// own, the watcher in a session of its own).
func (g *guard) kill() {
	for _, pid := range g.pids() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processes describes the guard's processes: ps's view of each, and the
// file locks they hold (a stopped holder of a store's mutex blocks every
// other run of its scope).
func (g *guard) processes() string {
	pids := g.pids()
	if len(pids) == 0 {
		return "  (no process left)"
	}
	var list []string
	mine := map[string]bool{}
	for _, pid := range pids {
		list = append(list, strconv.Itoa(pid))
		mine[strconv.Itoa(pid)] = true
	}
	out, err := exec.Command("ps", "-o", "pid,ppid,pgid,stat,etime,wchan:24,args", "-p", strings.Join(list, ",")).CombinedOutput()
	if err != nil {
		out = fmt.Appendf(out, "(ps: %v)", err)
	}
	var b strings.Builder
	b.Write(out)
	if locks, err := os.ReadFile("/proc/locks"); err == nil {
		for _, l := range strings.Split(string(locks), "\n") {
			if f := strings.Fields(l); len(f) >= 5 && f[1] != "->" && mine[f[4]] {
				fmt.Fprintf(&b, "lock: %s\n", l)
			}
		}
	}
	return b.String()
}

// pipeHolders names the processes that hold the pipe r reads from open,
// for a command that exited while they kept its output (what) open.
func pipeHolders(what string, r *os.File) string {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(r.Fd()), &st); err != nil {
		return fmt.Sprintf("  %s: (fstat: %v)\n", what, err)
	}
	want := fmt.Sprintf("pipe:[%d]", st.Ino)
	var b strings.Builder
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	seen := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err != nil || link != want {
			continue
		}
		pid := strings.Split(fd, "/")[2]
		if pid == strconv.Itoa(os.Getpid()) || seen[pid] {
			continue
		}
		seen[pid] = true
		args, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		fmt.Fprintf(&b, "  %s: pid %s: %s\n", what, pid, strings.ReplaceAll(string(bytes.TrimRight(args, "\x00")), "\x00", " "))
	}
	if b.Len() == 0 {
		return "  " + what + ": (no holder found)\n"
	}
	return b.String()
}

// runGuarded runs cmd, a command of h.guarded, to its end and returns its
// output. Its stdout and stderr are pipes of the test's own: a process the
// command left behind holding them open fails the test naming it (pipeGrace
// after the exit), and a hang fails it naming the command.
func (h *harness) runGuarded(cmd *exec.Cmd) (stdout, stderr string, err error) {
	h.t.Helper()
	var outBuf, errBuf bytes.Buffer
	outR, outW, perr := os.Pipe()
	if perr != nil {
		h.t.Fatal(perr)
	}
	errR, errW, perr := os.Pipe()
	if perr != nil {
		h.t.Fatal(perr)
	}
	readers := []*os.File{outR, errR}
	cmd.Stdout, cmd.Stderr = outW, errW
	var copies sync.WaitGroup
	copies.Go(func() { _, _ = io.Copy(&outBuf, outR) })
	copies.Go(func() { _, _ = io.Copy(&errBuf, errR) })
	err = cmd.Start()
	// The command has its own copies of the write ends now.
	outW.Close()
	errW.Close()
	if err == nil {
		err = cmd.Wait()
	}
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(pipeGrace):
		holders := pipeHolders("stdout", outR) + pipeHolders("stderr", errR)
		for _, r := range readers {
			r.Close()
		}
		<-copied
		h.t.Fatalf("`%s` exited (%v) but its output stayed open for %s, held by:\n%s", strings.Join(cmd.Args, " "), err, pipeGrace, holders)
	}
	for _, r := range readers {
		r.Close()
	}
	if h.hung(cmd) {
		h.t.Fatalf("`%s` hung (the process tree is above)\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args, " "), outBuf.String(), errBuf.String())
	}
	return outBuf.String(), errBuf.String(), err
}

// stopOutsideMutex stops a run (SIGSTOP) at a moment it holds none of the
// file store's mutexes (an exclusive flock). A run stopped inside one, as
// it writes a checkpoint or renews its lease, blocks every other command in
// its scope until it continues: a store cannot break a lock that a live
// process holds. A test that continues the run only after those commands
// would wait for ever.
func stopOutsideMutex(t *testing.T, p *os.Process) {
	t.Helper()
	inside := 0
	defer func() {
		if inside > 0 {
			t.Logf("the run was stopped inside the store's mutex %d times and continued, until it was stopped outside it", inside)
		}
	}()
	waitFor(t, "the run stopped outside the store's mutex", func() bool {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping the run: %v", err)
		}
		for state := procState(p.Pid); state != 'T'; state = procState(p.Pid) {
			if state == 0 || state == 'Z' {
				t.Fatalf("the run ended before it could be stopped")
			}
			time.Sleep(time.Millisecond) // the stop signal is on its way
		}
		if !holdsExclusiveFlock(p.Pid) {
			return true
		}
		inside++
		if err := p.Signal(syscall.SIGCONT); err != nil {
			t.Fatalf("continuing the run: %v", err)
		}
		return false
	})
}

// procState is the state letter of pid (R, S, T, Z...), 0 when it is gone.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) STATE ...: comm may hold spaces, never ") ".
	i := bytes.LastIndex(b, []byte(") "))
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// holdsExclusiveFlock reports whether pid holds an exclusive flock: the
// file store's mutexes are the only ones sponson takes (the backend
// override's lock is shared).
func holdsExclusiveFlock(pid int) bool {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 19380 fe:00:11321805 0 EOF"; a waiter's
		// line has "->" after the number.
		f := strings.Fields(l)
		if len(f) >= 5 && f[1] == "FLOCK" && f[3] == "WRITE" && f[4] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}
