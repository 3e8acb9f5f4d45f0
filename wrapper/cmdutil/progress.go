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

// ProgressPipe opens the descriptor ProgressFDVar names, if any, and returns
// what writes each step to it and what closes it; nil and a no-op when the
// variable is unset or names no descriptor. The descriptor is closed on
// exec, so the engine and the other processes the run starts never hold it
// (the reader's end would not see the run end).
func ProgressPipe(getenv func(string) string) (emit func(scoperun.Progress), done func()) {
	n, err := strconv.Atoi(getenv(ProgressFDVar))
	if err != nil || n < 3 {
		return nil, func() {}
	}
	syscall.CloseOnExec(n)
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
