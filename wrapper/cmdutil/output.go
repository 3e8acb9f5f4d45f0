package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Envelope is the one JSON document --json prints for every outcome. OK is
// true exactly when the command succeeded: when the exit code is 0, or 2
// from `plan -detailed-exitcode` with changes present.
type Envelope struct {
	OK      bool       `json:"ok"`
	Command string     `json:"command"`
	Result  any        `json:"result,omitempty"`
	Error   *ErrorBody `json:"error,omitempty"`
	Exit    int        `json:"exitCode"`
	Warn    []string   `json:"warnings,omitempty"`
}

// ErrorBody is the error part of the envelope.
type ErrorBody struct {
	Code    errcode.Code   `json:"code"`
	Message string         `json:"message"`
	Hint    string         `json:"hint,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// Outcome is what a command hands back to Run for printing.
type Outcome struct {
	Command  string
	Result   any
	Warnings []string
	Err      error
	// detailedExitcode is plan -detailed-exitcode, under which the exit
	// code is the engine's: 0 no changes, 1 any error, 2 changes present
	// (changes).
	DetailedExitcode bool
	Changes          bool
}

// Exit is the process exit code of an outcome.
func (o Outcome) Exit() errcode.ExitCode {
	if !o.DetailedExitcode {
		return errcode.ExitFor(o.Err)
	}
	switch {
	case o.Err != nil:
		return errcode.ExitFailed
	case o.Changes:
		return ExitChanges
	}
	return errcode.ExitOK
}

// ExitChanges is the exit code of `plan -detailed-exitcode` when the plan
// has changes, as the engine's; the run succeeded (ok is true in the
// envelope). Under -detailed-exitcode every error, refusals included, exits
// 1, so that 2 always means "changes present".
const ExitChanges errcode.ExitCode = 2

func WriteEnvelope(w io.Writer, o Outcome) errcode.ExitCode {
	code := o.Exit()
	env := Envelope{OK: o.Err == nil, Command: o.Command, Result: o.Result, Exit: int(code), Warn: o.Warnings}
	if o.Err != nil {
		e := errcode.As(o.Err)
		env.Error = &ErrorBody{Code: e.Code, Message: e.Message, Hint: e.Hint, Details: e.Details}
	}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		b = []byte(fmt.Sprintf(`{"ok":false,"command":%q,"exitCode":1,"error":{"code":"INTERNAL","message":%q}}`, o.Command, err.Error()))
		code = errcode.ExitFailed
	}
	fmt.Fprintf(w, "%s\n", b)
	return code
}

func WriteHumanError(w io.Writer, err error) {
	e := errcode.As(err)
	fmt.Fprintf(w, "error %s: %s\n", e.Code, e.Message)
	if e.Hint != "" {
		fmt.Fprintf(w, "  hint: %s\n", e.Hint)
	}
}

// Printer writes sponson's own human lines. In --json mode the caller points
// w at the error stream so that stdout holds exactly one JSON document.
type Printer struct {
	W io.Writer
}

func (p Printer) Line(format string, args ...any) {
	fmt.Fprintf(p.W, format+"\n", args...)
}

func (p Printer) Warn(msg string) { p.Line("warning: %s", msg) }

func Header(command, env, scope, runID string) string {
	return strings.Join([]string{"sponson " + command, env, scope, "run " + strings.TrimPrefix(runID, "run-")}, " · ")
}
