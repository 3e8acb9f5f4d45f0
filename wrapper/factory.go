// Package wrapper is the `sponson` command line: one file per command, each
// with an options struct, a constructor that takes the run function as a
// test seam, and the run function itself. All output goes through the
// Factory's writers.
package wrapper

import (
	"io"
	"net/http"
	"os"

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
