// Package cmdutil is the frame every sponson command shares: the Factory (what
// a command needs from the outside world), the RunE wiring of a constructor
// and its run function, the outcome and its --json envelope, the shared flags
// and the store they open, the trusted rules' lookups, approvals and the CI
// log's annotations (docs/design.md §4).
//
// A command's constructor (NewCmdX(f, runF)) unpacks what it needs from the
// Factory once into its options struct, and its prepare step resolves the
// flags into what the run needs; RunE then calls the run function with a
// context and those options only, or runF in a test. The run function sees
// neither cobra nor the Factory.
//
// CI logs (annotations.go): in GitHub Actions the outcome's errors and
// warnings are repeated as ::error and ::warning (AnnotateOutcome), and init
// and plan are ::group::s; in GitLab CI init, plan and apply are collapsible
// sections.
package cmdutil

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/secrets"
)

// Factory is what commands need from the outside world; tests build their
// own.
type Factory struct {
	In     io.Reader // what `sponson mcp` serves: the client's messages
	Out    io.Writer // results: the summary, or the --json document
	ErrOut io.Writer // progress, warnings, errors in human mode
	Getenv func(string) string
	// Executable returns the path of the binary that serves the provider
	// to the engine (the sponson binary itself).
	Executable func() (string, error)
	Lookup     engine.Lookup
	// HTTP is the client for the CI host's API (summary comments); the
	// default client when nil.
	HTTP *http.Client
	// IsTerminal reports whether a writer is a terminal, where progress
	// lines update in place; nil means never (tests, pipes).
	IsTerminal func(io.Writer) bool
	// now is the clock of the log's section markers; time.Now when nil.
	Now func() time.Time
}

// NewFactory returns the Factory of the real process.
func NewFactory() *Factory {
	return &Factory{
		In:         os.Stdin,
		Out:        os.Stdout,
		ErrOut:     os.Stderr,
		Getenv:     secrets.Getenv,
		Executable: os.Executable,
		Lookup:     engine.ProcessLookup(),
		IsTerminal: isTerminal,
	}
}

// IO is the process as a command's run function sees it: where it writes,
// what it reads, the environment, and whether the outcome is printed as one
// JSON document. A command's constructor unpacks it from the Factory once
// (gh's opts.IO) and embeds it in its options, so that the run function sees
// neither the Factory nor cobra.
type IO struct {
	In     io.Reader // what `sponson mcp` serves: the client's messages
	Out    io.Writer // results: the summary, or the --json document
	ErrOut io.Writer // progress, warnings, errors in human mode
	Getenv func(string) string
	// IsTerminal reports whether a writer is a terminal; nil means never.
	IsTerminal func(io.Writer) bool
	// JSON is --json or SPONSON_JSON, set by RunE before the command's
	// prepare: exactly one JSON document goes to Out, people's lines to
	// ErrOut.
	JSON bool
}

// IO unpacks the process's streams and environment for a command's options.
func (f *Factory) IO() *IO {
	return &IO{In: f.In, Out: f.Out, ErrOut: f.ErrOut, Getenv: f.Getenv, IsTerminal: f.IsTerminal}
}

// Engines is how a command finds the engine, and the binary that serves
// sponson's provider to it (sponson itself).
type Engines struct {
	Lookup     engine.Lookup
	Executable func() (string, error)
}

// Engines unpacks how a command finds the engine.
func (f *Factory) Engines() Engines {
	return Engines{Lookup: f.Lookup, Executable: f.Executable}
}

// Streams is the IO itself; an options struct that embeds *IO has it, and
// RunE sets its JSON from the command line.
func (s *IO) Streams() *IO { return s }

// Human is where sponson's own lines go: ErrOut under --json, so that Out
// holds exactly the one document, else Out.
func (s *IO) Human() io.Writer {
	if s.JSON {
		return s.ErrOut
	}
	return s.Out
}

// RunE is the RunE of every command, gh's NewCmdX(f, runF) wiring written
// once: the options' IO learns --json, prepare (when given) fills opts from
// the flags, the arguments and the SPONSON_* variables, then runF, the seam a
// test hands the constructor, or else run does the work with the options
// alone. The outcome, a failure included, travels in *out, which Run prints
// (the envelope with --json) and turns into the exit code; RunE returns nil
// so that cobra adds nothing of its own.
func RunE[O any](f *Factory, out *Outcome, opts O, prepare func(*cobra.Command, []string) error, runF, run func(context.Context, O) Outcome) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		*out = runOutcome(cmd, f, args, opts, prepare, runF, run)
		return nil
	}
}

// runOutcome is what RunE puts in *out: a failure of prepare, else the
// outcome of runF or run.
func runOutcome[O any](cmd *cobra.Command, f *Factory, args []string, opts O, prepare func(*cobra.Command, []string) error, runF, run func(context.Context, O) Outcome) Outcome {
	if s, ok := any(opts).(interface{ Streams() *IO }); ok && f != nil {
		s.Streams().JSON = JSONWanted(cmd, f.Getenv)
	}
	if prepare != nil {
		if err := prepare(cmd, args); err != nil {
			return Outcome{Command: strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), Err: err}
		}
	}
	if runF == nil {
		runF = run
	}
	return runF(cmd.Context(), opts)
}
