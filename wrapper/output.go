package wrapper

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

// outcome is what a command hands back to Run for printing.
type outcome struct {
	command  string
	result   any
	warnings []string
	err      error
	// detailedExitcode is plan -detailed-exitcode, under which the exit
	// code is the engine's: 0 no changes, 1 any error, 2 changes present
	// (changes).
	detailedExitcode bool
	changes          bool
}

// exit is the process exit code of an outcome.
func (o outcome) exit() errcode.ExitCode {
	if !o.detailedExitcode {
		return errcode.ExitFor(o.err)
	}
	switch {
	case o.err != nil:
		return errcode.ExitFailed
	case o.changes:
		return ExitChanges
	}
	return errcode.ExitOK
}

// ExitChanges is the exit code of `plan -detailed-exitcode` when the plan
// has changes, as the engine's; the run succeeded (ok is true in the
// envelope). Under -detailed-exitcode every error, refusals included, exits
// 1, so that 2 always means "changes present".
const ExitChanges errcode.ExitCode = 2

func writeEnvelope(w io.Writer, o outcome) errcode.ExitCode {
	code := o.exit()
	env := Envelope{OK: o.err == nil, Command: o.command, Result: o.result, Exit: int(code), Warn: o.warnings}
	if o.err != nil {
		e := errcode.As(o.err)
		env.Error = &ErrorBody{Code: e.Code, Message: e.Message, Hint: e.Hint, Details: e.Details}
	}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		b = []byte(fmt.Sprintf(`{"ok":false,"command":%q,"exitCode":1,"error":{"code":"INTERNAL","message":%q}}`, o.command, err.Error()))
		code = errcode.ExitFailed
	}
	fmt.Fprintf(w, "%s\n", b)
	return code
}

func writeHumanError(w io.Writer, err error) {
	e := errcode.As(err)
	fmt.Fprintf(w, "error %s: %s\n", e.Code, e.Message)
	if e.Hint != "" {
		fmt.Fprintf(w, "  hint: %s\n", e.Hint)
	}
}

// printer writes sponson's own human lines. In --json mode the caller points
// w at the error stream so that stdout holds exactly one JSON document.
type printer struct {
	w io.Writer
}

func (p printer) line(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p printer) warn(msg string) { p.line("warning: %s", msg) }

func header(command, env, scope, runID string) string {
	return strings.Join([]string{"sponson " + command, env, scope, "run " + strings.TrimPrefix(runID, "run-")}, " · ")
}
