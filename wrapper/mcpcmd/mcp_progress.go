package mcpcmd

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ProgressUpdate is one MCP progress notification of a tool call.
type ProgressUpdate struct {
	Message         string
	Progress, total float64
}

// progressWriter turns the lines a tool's process writes on stderr into
// progress notifications: the wait for the scope's lease (the wait line
// names the holder and the lease's end), the engine's init, its plan with
// the resource counts, and each resource the apply finishes out of the
// plan's total. Other lines only go to the log. Progress only grows, as
// the protocol asks.
type progressWriter struct {
	mu       sync.Mutex
	buf      []byte
	notify   func(ProgressUpdate)
	step     float64 // the progress so far, one per notification
	total    float64 // resources the plan changes
	done     float64 // resources the apply finished
	initSent bool
}

func NewProgressWriter(notify func(ProgressUpdate)) *progressWriter {
	return &progressWriter{notify: notify}
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// Flush handles a last line without its newline.
func (w *progressWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = nil
	}
}

var (
	planLine     = regexp.MustCompile(`Plan: (\d+) to add, (\d+) to change, (\d+) to destroy`)
	finishedLine = regexp.MustCompile(`^(\S+): (Creation|Modifications|Destruction) complete`)
	startedLine  = regexp.MustCompile(`^(\S+): (Creating|Modifying|Destroying)\.\.\.`)
)

func (w *progressWriter) line(raw string) {
	l := strings.TrimSpace(strings.TrimPrefix(raw, "\r\x1b[K"))
	var msg string
	switch {
	case strings.HasPrefix(l, "waiting for "):
		msg = "lease: " + l
	case strings.HasPrefix(l, "sponson ") && strings.Contains(l, " · run "):
		msg = "start: " + l
	case strings.HasPrefix(l, "Initializing") && !w.initSent:
		w.initSent = true
		msg = "init: " + l
	case planLine.MatchString(l):
		m := planLine.FindStringSubmatch(l)
		w.total = 0
		for _, n := range m[1:] {
			v, _ := strconv.Atoi(n)
			w.total += float64(v)
		}
		w.done = 0
		msg = "plan: " + l
	case strings.HasPrefix(l, "No changes."):
		msg = "plan: " + l
	case startedLine.MatchString(l):
		msg = fmt.Sprintf("apply: %s (%d of %d done)", l, int(w.done), int(w.total))
	case finishedLine.MatchString(l):
		w.done++
		msg = fmt.Sprintf("apply: %d of %d resources done: %s", int(w.done), int(w.total), l)
	case strings.HasPrefix(l, "Apply complete!") || strings.HasPrefix(l, "Destroy complete!"):
		msg = "apply: " + l
	default:
		return
	}
	w.step++
	w.notify(ProgressUpdate{Message: msg, Progress: w.step})
}
