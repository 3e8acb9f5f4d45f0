package engine

import (
	"bytes"
	"context"
	"io"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
)

// The engine's own commands that sponson runs as the engine would, in the
// configuration directory with sponson's provider available
// (docs/design.md §4 "The CLI contract"). Each goes through terraform-exec;
// what the engine prints on stdout for a person streams to the session's
// stdout, and a command whose answer is JSON returns it parsed and as the
// engine's exact bytes.

// InitConfig runs the engine's `init` with the user's options, streaming
// its output. It is not the run's Init: the run initialises the scope's own
// data directory against the state server.
func (s *Session) InitConfig(ctx context.Context, opts ...tfexec.InitOption) error {
	defer s.streaming()()
	return s.wrap("init", s.tf.Init(ctx, opts...))
}

// Validate runs `validate -json`: the result, and the engine's bytes.
func (s *Session) Validate(ctx context.Context) (*tfjson.ValidateOutput, []byte, error) {
	var out *tfjson.ValidateOutput
	raw, err := s.capture(func() (err error) {
		out, err = s.tf.Validate(ctx)
		return err
	})
	return out, raw, s.wrap("validate", err)
}

// FormatCheck lists the files `fmt -check` finds unformatted.
func (s *Session) FormatCheck(ctx context.Context, opts ...tfexec.FormatOption) (bool, []string, error) {
	ok, files, err := s.tf.FormatCheck(ctx, opts...)
	return ok, files, s.wrap("fmt", err)
}

// FormatWrite formats the files in place, printing each file it changed.
func (s *Session) FormatWrite(ctx context.Context, opts ...tfexec.FormatOption) error {
	defer s.streaming()()
	return s.wrap("fmt", s.tf.FormatWrite(ctx, opts...))
}

// ProvidersLock runs `providers lock`, streaming its output.
func (s *Session) ProvidersLock(ctx context.Context, opts ...tfexec.ProvidersLockOption) error {
	defer s.streaming()()
	return s.wrap("providers lock", s.tf.ProvidersLock(ctx, opts...))
}

// ProvidersMirror runs `providers mirror DIR`, streaming its output.
func (s *Session) ProvidersMirror(ctx context.Context, dir string, opts ...tfexec.ProvidersMirrorOption) error {
	defer s.streaming()()
	return s.wrap("providers mirror", s.tf.ProvidersMirror(ctx, dir, opts...))
}

// ProvidersSchema runs `providers schema -json` and returns the engine's
// bytes.
func (s *Session) ProvidersSchema(ctx context.Context) ([]byte, error) {
	raw, err := s.capture(func() error {
		_, err := s.tf.ProvidersSchema(ctx)
		return err
	})
	return raw, s.wrap("providers schema", err)
}

// Graph returns the engine's graph in DOT.
func (s *Session) Graph(ctx context.Context, opts ...tfexec.GraphOption) (string, error) {
	g, err := s.tf.Graph(ctx, opts...)
	return g, s.wrap("graph", err)
}

// Get runs `get`, streaming its output.
func (s *Session) Get(ctx context.Context, opts ...tfexec.GetCmdOption) error {
	defer s.streaming()()
	return s.wrap("get", s.tf.Get(ctx, opts...))
}

// Test runs `test -json`: the engine's machine-readable UI goes to w as it
// is (raw), or as the lines a person reads.
func (s *Session) Test(ctx context.Context, w io.Writer, raw bool) error {
	defer s.tf.SetStdout(io.Discard)
	if raw {
		return s.wrap("test", s.tf.Test(ctx, w))
	}
	ui := newUIStream(w, nil)
	err := s.tf.Test(ctx, ui)
	ui.Flush()
	return s.wrap("test", err)
}

// MetadataFunctions returns the engine's `metadata functions -json` bytes.
func (s *Session) MetadataFunctions(ctx context.Context) ([]byte, error) {
	raw, err := s.capture(func() error {
		_, err := s.tf.MetadataFunctions(ctx)
		return err
	})
	return raw, s.wrap("metadata functions", err)
}

// ShowPlanJSON is ShowPlan that also returns the engine's exact bytes, for
// the tools that read plan JSON (`sponson show -json`, `plan --json-plan`).
func (s *Session) ShowPlanJSON(ctx context.Context, path string) (*tfjson.Plan, []byte, error) {
	var p *tfjson.Plan
	raw, err := s.capture(func() (err error) {
		p, err = s.tf.ShowPlanFile(ctx, path)
		return err
	})
	return p, raw, s.wrap("show", err)
}

// ShowStateJSON renders a state file as the engine's `show -json` does.
func (s *Session) ShowStateJSON(ctx context.Context, path string) ([]byte, error) {
	raw, err := s.capture(func() error {
		_, err := s.tf.ShowStateFile(ctx, path)
		return err
	})
	return raw, s.wrap("show", err)
}

// ShowText renders a saved plan or a state file as the engine prints it,
// without colour.
func (s *Session) ShowText(ctx context.Context, path string) (string, error) {
	txt, err := s.tf.ShowPlanFileRaw(ctx, path)
	return txt, s.wrap("show", err)
}

// capture runs fn with the engine's stdout copied into a buffer:
// terraform-exec writes what it parses to the session's stdout as well, so
// the bytes are the engine's own.
func (s *Session) capture(fn func() error) ([]byte, error) {
	var buf bytes.Buffer
	s.tf.SetStdout(&buf)
	defer s.tf.SetStdout(io.Discard)
	err := fn()
	return buf.Bytes(), err
}

// InitConfigJSON is InitConfig with the engine's machine-readable output
// (`init -json`) sent to w.
func (s *Session) InitConfigJSON(ctx context.Context, w io.Writer, opts ...tfexec.InitOption) error {
	defer s.tf.SetStdout(io.Discard)
	return s.wrap("init", s.tf.InitJSON(ctx, w, opts...))
}

// FormatString formats one file's content as the engine's fmt would.
func (s *Session) FormatString(ctx context.Context, content string) (string, error) {
	out, err := s.tf.FormatString(ctx, content)
	return out, s.wrap("fmt", err)
}

// VersionJSON returns the engine's `version -json` bytes with the versions
// they hold: the engine's and the selected providers'.
func (s *Session) VersionJSON(ctx context.Context) ([]byte, *version.Version, map[string]*version.Version, error) {
	var v *version.Version
	var providers map[string]*version.Version
	raw, err := s.capture(func() (err error) {
		v, providers, err = s.tf.Version(ctx, true)
		return err
	})
	return raw, v, providers, s.wrap("version", err)
}
