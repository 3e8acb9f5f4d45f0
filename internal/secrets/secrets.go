// Package secrets holds the run's keys (the state keys and the saved plans'
// seal key) out of every process environment below sponson
// (docs/design.md §9).
//
// CI hands the keys over as environment variables, and a process's initial
// environment stays readable in /proc/PID/environ for its whole life,
// whatever the process later unsets: every provider and provisioner the
// engine starts could read its ancestor's keys one file read away. So
// sponson, started with a key in its environment, hands the keys to a fresh
// image of itself (Handover): it writes them to a pipe, and replaces itself
// (the same PID) with its own executable, with an environment without the
// keys and the pipe's descriptor in FDVar. The new image reads the keys
// into memory, closes the pipe, and makes itself non-dumpable, so that a
// process of the same user can neither read its memory nor its
// /proc/PID/environ. A process that needs the keys (an MCP tool's run)
// gets them the same way, on a pipe (Pass), never in its environment.
//
// What remains: the job's own shell, or any ancestor of sponson, that was
// started with the keys in its environment keeps them in its
// /proc/PID/environ; a process of root (or with CAP_SYS_PTRACE) can read
// any process's memory. KeyFileVar lets a job that never exports the keys
// name a file holding them.
package secrets

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

const (
	// StateKeyVar is the state key's variable; StateKeyVar + "_<ENV>" are
	// the keys of single environments (statecrypt.EnvKeyFor).
	StateKeyVar = "SPONSON_STATE_KEY"
	// PlanKeyVar is the saved plans' seal key (savedplan.KeyEnv).
	PlanKeyVar = "SPONSON_PLAN_KEY"
	// KeyFileVar names a file of keys: lines NAME=VALUE naming a key
	// variable, or one line holding SPONSON_STATE_KEY's value alone.
	KeyFileVar = "SPONSON_STATE_KEY_FILE"
	// FDVar is the descriptor of the pipe the keys come on: set by sponson
	// for its own new image and for the runs it starts, not by people.
	FDVar = "SPONSON_KEYS_FD"
)

// IsKey reports whether name is a variable that holds a key.
func IsKey(name string) bool {
	if name == KeyFileVar {
		return false
	}
	return name == StateKeyVar || name == PlanKeyVar || strings.HasPrefix(name, StateKeyVar+"_")
}

var (
	mu   sync.RWMutex
	held = map[string]string{}
	err  error // why the keys could not all be read: Err
)

// Getenv is os.Getenv, except that the keys are answered from memory: the
// getenv of everything that reads a key.
func Getenv(name string) string {
	if IsKey(name) {
		mu.RLock()
		v, ok := held[name]
		mu.RUnlock()
		if ok {
			return v
		}
	}
	return os.Getenv(name)
}

// Err is why the keys could not be read (a key file that cannot be read, a
// broken hand-over): a USAGE error for whatever needs a key, nil when all
// is well.
func Err() error {
	mu.RLock()
	defer mu.RUnlock()
	return err
}

// Held reports whether this process holds keys in memory.
func Held() bool {
	mu.RLock()
	defer mu.RUnlock()
	return len(held) > 0
}

// Handover moves the keys out of the process environment; the first thing
// the sponson command does. With a key in the environment it does not
// return: the process becomes a new image of its executable, whose
// Handover reads the keys from the pipe. It reads KeyFileVar's file too.
// Where the new image cannot be started (no /proc), the keys leave the Go
// environment only, the children's, and stay in /proc/PID/environ.
func Handover() {
	if fd := os.Getenv(FDVar); fd != "" {
		os.Unsetenv(FDVar)
		receive(fd)
	} else if env, keys := split(os.Environ()); len(keys) > 0 {
		if e := reexec(env, keys); e != nil {
			setErr(nil)
			hold(keys, false)
			for name := range keys {
				os.Unsetenv(name)
			}
		}
	}
	if path := os.Getenv(KeyFileVar); path != "" {
		readKeyFile(path)
	}
	if Held() {
		// Nothing of the same user reads this process's memory, its
		// /proc/PID/environ or a core dump.
		nondumpable()
	}
}

// split separates the key variables of env from the others.
func split(env []string) (rest []string, keys map[string]string) {
	keys = map[string]string{}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if IsKey(name) {
			keys[name] = value
			continue
		}
		if name == FDVar {
			continue
		}
		rest = append(rest, kv)
	}
	return rest, keys
}

// reexec replaces the process with its own executable, the keys on a pipe.
func reexec(env []string, keys map[string]string) error {
	r, w, e := os.Pipe()
	if e != nil {
		return e
	}
	// A pipe holds 64 KiB before a write blocks; keys are a few hundred
	// bytes, so the whole hand-over is written before the exec.
	if _, e := w.Write(encode(keys)); e != nil {
		r.Close()
		w.Close()
		return e
	}
	w.Close()
	fd := int(r.Fd())
	if _, e := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); e != nil {
		r.Close()
		return e
	}
	env = append(env, FDVar+"="+strconv.Itoa(fd))
	// By its path, not /proc/self/exe, so the process keeps its name in
	// ps and /proc/PID/comm.
	exe, e := os.Executable()
	if e != nil {
		r.Close()
		return e
	}
	e = syscall.Exec(exe, os.Args, env)
	r.Close()
	return e
}

// Pass hands the keys this process holds to cmd, a sponson it starts, on a
// pipe: cmd.Env must be set, without the keys. The returned function closes
// this process's end after cmd has started.
func Pass(cmd *exec.Cmd) (started func(), e error) {
	mu.RLock()
	keys := make(map[string]string, len(held))
	for k, v := range held {
		keys[k] = v
	}
	mu.RUnlock()
	// Keys of the Go environment (a process that was not handed over) go
	// on the pipe too, never into the child's environment.
	var env []string
	for _, kv := range cmd.Env {
		name, value, _ := strings.Cut(kv, "=")
		if IsKey(name) {
			if _, ok := keys[name]; !ok {
				keys[name] = value
			}
			continue
		}
		if name != FDVar {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	if len(keys) == 0 {
		return func() {}, nil
	}
	r, w, e := os.Pipe()
	if e != nil {
		return nil, e
	}
	_, e = w.Write(encode(keys))
	w.Close()
	if e != nil {
		r.Close()
		return nil, e
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	cmd.Env = append(cmd.Env, FDVar+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	return func() { r.Close() }, nil
}

// encode writes keys as NAME=VALUE lines (no value holds a newline: they
// come from environment variables, whose values CI trims).
func encode(keys map[string]string) []byte {
	var b bytes.Buffer
	for k, v := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, strings.ReplaceAll(v, "\n", ""))
	}
	return b.Bytes()
}

func receive(fdText string) {
	fd, e := strconv.Atoi(fdText)
	if e != nil || fd < 3 {
		setErr(errcode.New(errcode.Usage, "%s=%q is not a descriptor of the keys' pipe", FDVar, fdText))
		return
	}
	f := os.NewFile(uintptr(fd), "keys")
	data, e := io.ReadAll(io.LimitReader(f, 1<<20))
	f.Close()
	if e != nil {
		setErr(errcode.Wrap(errcode.Usage, e, "reading the keys handed over on descriptor %d", fd))
		return
	}
	keys, _ := parse(data, false)
	hold(keys, false)
}

// readKeyFile adds the keys of the file at path; a variable of the
// environment wins over the file.
func readKeyFile(path string) {
	data, e := os.ReadFile(path)
	if e != nil {
		setErr(errcode.Wrap(errcode.Usage, e, "%s: cannot read the key file", KeyFileVar).
			WithHint("Point " + KeyFileVar + " at a file of the job's secrets: one line with the state key, or lines SPONSON_STATE_KEY=..., SPONSON_STATE_KEY_<ENV>=..., SPONSON_PLAN_KEY=..."))
		return
	}
	keys, e := parse(data, true)
	if e != nil {
		setErr(e)
		return
	}
	hold(keys, true)
}

// parse reads NAME=VALUE lines; in a key file, a lone value is the state
// key, and a name that is not a key variable is an error (never echoing
// the value).
func parse(data []byte, file bool) (map[string]string, error) {
	keys := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if file && !ok || file && strings.TrimSpace(name) != name {
			// A base64 key ends in "=": a line that is not NAME=VALUE of a
			// key variable is the state key itself.
			name, value = StateKeyVar, line
		} else if !IsKey(name) {
			if !file {
				continue
			}
			name, value = StateKeyVar, line
		}
		if file {
			if _, dup := keys[name]; dup {
				return nil, errcode.New(errcode.Usage, "%s: line %d sets %s a second time", KeyFileVar, n, name)
			}
		}
		keys[name] = value
	}
	return keys, nil
}

// hold keeps keys in memory; onlyNew keeps the ones held already.
func hold(keys map[string]string, onlyNew bool) {
	mu.Lock()
	defer mu.Unlock()
	for k, v := range keys {
		if _, ok := held[k]; ok && onlyNew {
			continue
		}
		held[k] = v
	}
}

func setErr(e error) {
	mu.Lock()
	defer mu.Unlock()
	err = e
}
