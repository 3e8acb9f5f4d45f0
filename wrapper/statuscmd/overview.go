package statuscmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/overview"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// OverviewFlags are the flags of the overview status builds (status --html,
// --json, and the filters of its table).
type OverviewFlags struct {
	// HTML is the file the page is written to; "-" is standard output.
	HTML string
	// State keeps the scopes in this state (overview.States).
	State string
	// The facts of gc's pr-closed and older-than rules, for what gc
	// would collect.
	cmdutil.GCFactFlags
}

// checkState refuses a --state that names no state.
func (f OverviewFlags) checkState() error {
	if f.State != "" && !slices.Contains(overview.States, f.State) {
		return errcode.New(errcode.Usage, "--state %q is no state", f.State).
			WithHint("Use one of " + strings.Join(overview.States, ", ") + ".")
	}
	return nil
}

// writeHTML renders the page to path ("-": out) whole, then renames it in
// place, so that a reader never sees half a page.
func writeHTML(opts *StatusOptions, m *overview.Model) error {
	var buf bytes.Buffer
	if err := overview.Render(&buf, m, overview.RenderOptions{}); err != nil {
		return err
	}
	if opts.HTML == "-" {
		_, err := opts.Out.Write(buf.Bytes())
		return err
	}
	path := opts.HTML // as every file flag: relative to the working directory
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "--html %s", opts.HTML)
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644) //nolint:gosec // a page to publish: world-readable on purpose
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return errcode.Wrap(errcode.Usage, err, "--html %s", opts.HTML)
	}
	fmt.Fprintf(opts.Human(), "wrote the overview of %d scopes to %s\n", m.Counts.Scopes, path)
	return nil
}

// filtered keeps the model's scopes that --stack and --state select.
func filtered(m *overview.Model, stack, state string) {
	m.Scopes = slices.DeleteFunc(m.Scopes, func(s overview.Scope) bool {
		return (stack != "" && s.Stack != stack) || (state != "" && !slices.Contains(s.States, state))
	})
	m.Recount()
}
