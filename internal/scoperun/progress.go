package scoperun

import "github.com/sponson/terraform-provider-sponson/internal/engine"

// The steps of a run that Reporter.Progress hears.
const (
	StepStart         = "start"          // the run's opening line: Message
	StepLease         = "lease"          // a poll of the wait for the scope's lease
	StepInit          = "init"           // the engine's init starts
	StepPlan          = "plan"           // the plan is known: Summary
	StepApplyStart    = "apply_start"    // the engine starts a change: Address, Action
	StepApplyComplete = "apply_complete" // the engine finished one
	StepApplyErrored  = "apply_errored"  // the engine failed one
	StepApplied       = "applied"        // the engine's apply ended without error
)

// Progress is one step of a run, for a program that follows it (the MCP
// server's progress notifications). It carries what the run learned from the
// engine's JSON (the plan's counts, the machine-readable UI's hooks), never
// the engine's text.
type Progress struct {
	Step string `json:"step"`
	// Message is sponson's own line for the step: the run's opening line,
	// the wait's (WaitEvent.Line).
	Message string          `json:"message,omitempty"`
	Summary *engine.Summary `json:"summary,omitempty"`
	Address string          `json:"address,omitempty"`
	Action  string          `json:"action,omitempty"`
}

// progress hands p to the Reporter's Progress, if any. The engine's stream
// calls it from its own goroutine.
func (r *runner) progress(p Progress) {
	if f := r.o.Report.Progress; f != nil {
		f(p)
	}
}

// engineProgress is the step an engine event is, if it is one.
func engineProgress(ev engine.Event) (Progress, bool) {
	switch ev.Type {
	case StepApplyStart, StepApplyComplete, StepApplyErrored:
		return Progress{Step: ev.Type, Address: ev.Address, Action: ev.Action}, true
	}
	return Progress{}, false
}
