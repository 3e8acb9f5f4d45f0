package cmdutil

import (
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
)

// ProgressFDVar names the file descriptor on which a run writes its steps
// as JSON lines (scoperun.Progress), for the program that started it: the
// MCP server hands its tools' runs a pipe there (mcpcmd). The run reads the
// engine's JSON, so the server never reads the engine's text.
const ProgressFDVar = "SPONSON_PROGRESS_FD"

// progressFD is the descriptor ProgressFDVar names, if it names one.
func progressFD(getenv func(string) string) (int, bool) {
	n, err := strconv.Atoi(getenv(ProgressFDVar))
	return n, err == nil && n >= 3
}

// CloseProgressOnExec marks the descriptor ProgressFDVar names, if any,
// closed on exec, whatever the command: no process sponson starts (the
// engine, git, the watcher, a stack's run) holds it, so the reader's end
// sees the pipe end when this process does. wrapper.Main calls it first.
func CloseProgressOnExec(getenv func(string) string) {
	if n, ok := progressFD(getenv); ok {
		syscall.CloseOnExec(n)
	}
}

// ProgressPipe opens the descriptor ProgressFDVar names, if any, and returns
// what writes each step to it and what closes it; nil and a no-op when the
// variable is unset or names no descriptor.
func ProgressPipe(getenv func(string) string) (emit func(scoperun.Progress), done func()) {
	n, ok := progressFD(getenv)
	if !ok {
		return nil, func() {}
	}
	f := os.NewFile(uintptr(n), "progress")
	if f == nil {
		return nil, func() {}
	}
	var mu sync.Mutex
	enc := json.NewEncoder(f)
	return func(p scoperun.Progress) {
		mu.Lock()
		defer mu.Unlock()
		// A reader that went away costs the run nothing: its steps are
		// for following it, and the run's result is its envelope.
		_ = enc.Encode(p)
	}, func() { f.Close() }
}
