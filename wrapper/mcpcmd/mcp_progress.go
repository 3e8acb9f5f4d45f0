package mcpcmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
)

// ProgressUpdate is one MCP progress notification of a tool call.
type ProgressUpdate struct {
	Message         string
	Progress, total float64
}

// progressReader turns the steps a tool's run writes on its progress pipe
// (cmdutil.ProgressFDVar: JSON lines of scoperun.Progress) into progress
// notifications: the wait for the scope's lease (naming the holder and the
// lease's end), the engine's init, the plan with its counts, and each
// resource the apply finishes out of the plan's total. The run takes all of
// it from the engine's JSON; nothing here reads the engine's text. Progress
// only grows, as the protocol asks.
type progressReader struct {
	notify func(ProgressUpdate)
	step   float64 // the progress so far, one per notification
	total  float64 // resources the plan changes
	done   float64 // resources the apply finished
}

// NewProgressReader returns the reader of one call's steps.
func NewProgressReader(notify func(ProgressUpdate)) *progressReader {
	return &progressReader{notify: notify}
}

// ReadFrom notifies each step in r until it ends; a line that is not a
// step is skipped.
func (p *progressReader) ReadFrom(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var n int64
	for sc.Scan() {
		n += int64(len(sc.Bytes())) + 1
		var s scoperun.Progress
		if json.Unmarshal(sc.Bytes(), &s) == nil {
			p.Step(s)
		}
	}
	return n, sc.Err()
}

// Step notifies one step of the run.
func (p *progressReader) Step(s scoperun.Progress) {
	var msg string
	switch s.Step {
	case scoperun.StepStart:
		msg = "start: " + s.Message
	case scoperun.StepLease:
		msg = "lease: " + s.Message
	case scoperun.StepInit:
		msg = "init: the engine initialises the configuration"
	case scoperun.StepPlan:
		if s.Summary == nil || s.Summary.Empty() {
			p.total, p.done = 0, 0
			msg = "plan: no changes"
			break
		}
		p.total, p.done = float64(s.Summary.Add+s.Summary.Change+s.Summary.Destroy), 0
		msg = "plan: " + s.Summary.String()
	case scoperun.StepApplyStart:
		msg = fmt.Sprintf("apply: %s: %s started (%d of %d done)", s.Address, s.Action, int(p.done), int(p.total))
	case scoperun.StepApplyComplete:
		p.done++
		msg = fmt.Sprintf("apply: %d of %d resources done: %s (%s)", int(p.done), int(p.total), s.Address, s.Action)
	case scoperun.StepApplyErrored:
		msg = fmt.Sprintf("apply: %s: %s failed", s.Address, s.Action)
	case scoperun.StepApplied:
		msg = fmt.Sprintf("apply: complete, %d of %d resources done", int(p.done), int(p.total))
	default:
		return
	}
	p.step++
	p.notify(ProgressUpdate{Message: msg, Progress: p.step, total: p.total})
}
