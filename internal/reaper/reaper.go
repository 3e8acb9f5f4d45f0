// Package reaper ends the processes an engine leaves behind when sponson
// stops: provider plugins and provisioner commands the engine started. The
// engine itself dies with sponson (terraform-exec starts it with a parent
// death signal), but its children do not: a `local-exec` provisioner went on
// writing for seconds after its run was killed, while another run held the
// lease (docs/design.md §7.1 "Driving the engine").
//
// Every process of a run's engine carries a marker in its environment
// (EnvMarker=<run id>), inherited by everything it starts. On every exit
// path sponson controls, the run kills what still carries its marker
// (KillMarked). For the exit paths it does not control (SIGKILL, a crash),
// a small watcher process started by the run (Start), in a session of its
// own, waits for the end of a pipe from the run and, when the run dies
// without saying goodbye, kills the marked processes and removes the files
// the run would have removed.
//
// The watcher is a POSIX shell (without /bin/sh, sponson itself) that waits
// on a pipe from the run and, only when the pipe ends without the run's
// goodbye, replaces itself with `sponson __reap` (Command), which kills the
// marked processes and removes the backend override: a run that ends well
// never starts a second sponson. The watcher is needed during a plan too:
// provider plugins do not exit when their engine is killed (go-plugin has no
// parent-death check).
//
// What still cannot be stopped: a process that clears its environment or
// escapes to another user, and everything when the watcher is killed
// together with the run (a kill of the whole process tree, or of the
// container).
package reaper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// EnvMarker is the environment variable that marks an engine's processes.
const EnvMarker = "SPONSON_REAP_MARK"

// Command is the hidden sponson command that runs the watcher.
const Command = "__reap"

// Watcher is the run's side of the watcher process.
type Watcher struct {
	pipe *os.File
	cmd  *exec.Cmd
}

// trampoline is the watcher while the run lives: a POSIX shell that waits on
// the pipe and starts sponson's own watcher (Main) only when the run died
// without saying goodbye. A sponson process costs tens of milliseconds of
// CPU to start, paid by every run that ends well; the shell costs one
// (docs/design.md §8). $0 is the sponson executable, "$@" the marker and the
// files.
const trampoline = `IFS= read -r said; [ "$said" = done ] && exit 0; exec "$0" ` + Command + ` "$@"`

// shell is the POSIX shell of the trampoline; without it the watcher is
// sponson itself from the start.
const shell = "/bin/sh"

// Start starts the watcher for marker: self is the sponson executable;
// files are removed if the run dies, unless another process holds a lock
// on them (the shared backend override of concurrent runs).
func Start(self, marker string, files ...string) (*Watcher, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(self, append([]string{Command, marker}, files...)...)
	if _, err := os.Stat(shell); err == nil {
		cmd = exec.Command(shell, append([]string{"-c", trampoline, self, marker}, files...)...)
	}
	cmd.Stdin = r
	// Its own session: a signal to the run's process group (Ctrl-C, a CI
	// runner stopping the job) leaves the watcher to clean up after it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = withoutMarker(os.Environ())
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	return &Watcher{pipe: w, cmd: cmd}, nil
}

// Stop tells the watcher the run ended on its own: it exits without
// touching anything.
func (w *Watcher) Stop() {
	_, _ = io.WriteString(w.pipe, "done\n")
	w.pipe.Close()
	_ = w.cmd.Wait()
}

// Watch is the watcher process: it waits for the end of in, and unless the
// run said "done" kills marker's processes and removes files.
func Watch(in io.Reader, marker string, files []string) {
	said, _ := io.ReadAll(in)
	if bytes.Contains(said, []byte("done")) {
		return
	}
	KillMarked(marker)
	for _, f := range files {
		removeUnlocked(f)
	}
}

// KillMarked kills every process of this user that carries marker in its
// environment, except this process.
func KillMarked(marker string) int {
	want := []byte(EnvMarker + "=" + marker + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	killed := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}

// CanFind reports whether this system lets Children find processes (it
// reads /proc).
func CanFind() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// Children returns the processes this process started that carry marker:
// the run's engine (its plugins and provisioners are the engine's
// children, not this process's).
func Children(marker string) []int {
	want := []byte(EnvMarker + "=" + marker + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || pid == os.Getpid() || parent(p) != os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err == nil && bytes.Contains(append(env, 0), want) {
			out = append(out, pid)
		}
	}
	return out
}

// parent is the parent process id of the process whose /proc directory is
// dir, 0 when it cannot be read.
func parent(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(fields[1]))
	return ppid
}

// removeUnlocked removes path unless another process holds a lock on it.
func removeUnlocked(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return
	}
	_ = os.Remove(path)
}

// Marker returns the environment entry that marks the engine of run.
func Marker(run string) string { return EnvMarker + "=" + run }

func withoutMarker(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if len(kv) < len(EnvMarker)+1 || kv[:len(EnvMarker)+1] != EnvMarker+"=" {
			out = append(out, kv)
		}
	}
	return out
}

// ErrNoMarker is returned by the watcher command without a marker.
var ErrNoMarker = errors.New("the watcher needs the run's marker")

// Main runs the watcher command with its arguments (marker, files...).
func Main(args []string) error {
	if len(args) == 0 || args[0] == "" {
		return fmt.Errorf("%w: %s MARKER [FILE...]", ErrNoMarker, Command)
	}
	Watch(os.Stdin, args[0], args[1:])
	return nil
}
