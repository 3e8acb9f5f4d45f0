package runcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/engineflag"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// ImportOptions are the options of `sponson import`.
type ImportOptions struct {
	cmdutil.RunFlags
	// Address and ID are the arguments: the resource instance ADDR and the
	// existing object's ID.
	Address, ID string
	// in is the run the flags resolve to, before it starts.
	in *runner.RunInput
}

// NewCmdImport builds `sponson import ADDR ID`. runF replaces the run in
// tests.
func NewCmdImport(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) *cobra.Command {
	opts := &ImportOptions{}
	cmd := &cobra.Command{
		Use:   "import ADDR ID [flags]",
		Short: "Bring an existing object under this scope's management",
		Long: `Import adopts the existing object ID as the resource ADDR of the configuration,
in the run's scope, the way an apply does everything: under the scope's lease,
with every state write fenced. It plans the import (a temporary import block
for ADDR, and -target=ADDR), and refuses before anything is written when
another scope of the environment owns the object (exit 1,
OWNED_BY_OTHER_SCOPE) or when the plan would do more than import it (exit 2,
USAGE: the configuration does not match the object, or ADDR depends on
something not applied yet). The receipt's ledger then lists the object as
adopted: the scope owns it from now on, and its destroy deletes it. ADDR must
be declared in the configuration, as for the engine's import.

In a protected environment (production, or one sponson.hcl protects) an
import changes what the environment owns, as an apply does: it needs
--approved-by NAME (env SPONSON_APPROVED_BY), one sponson.hcl allows, or it
is refused (exit 2, ENV_NOT_APPROVED) before anything is leased or written;
the receipt records the approver.

` + engineflag.Help(engineflag.Import),
		Args: cobra.ExactArgs(2),
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, args []string) error {
			opts.Address, opts.ID = args[0], args[1]
			return opts.resolve(cmd, f)
		}, nil, func(ctx context.Context, opts *ImportOptions) cmdutil.Outcome {
			return runImport(ctx, opts, runF)
		}),
	}
	opts.EngineCommand = engineflag.Import
	opts.Bind(cmd, true)
	return cmd
}

// importAddress is what an ADDR may look like: a resource instance address,
// keys quoted or numeric. Anything else could change the meaning of the
// import block it is written into.
var importAddress = regexp.MustCompile(`^(module\.[A-Za-z_][A-Za-z0-9_-]*(\[("[^"\\{}$\n]*"|[0-9]+)\])?\.)*[A-Za-z_][A-Za-z0-9_-]*\.[A-Za-z_][A-Za-z0-9_-]*(\[("[^"\\{}$\n]*"|[0-9]+)\])?$`)

// resolve refuses an import that cannot run, before anything is leased or
// written: an address that is not a managed resource instance, an empty ID,
// a protected environment without an approver; then resolves the run.
func (opts *ImportOptions) resolve(cmd *cobra.Command, f *cmdutil.Factory) error {
	addr, id := opts.Address, opts.ID
	if !importAddress.MatchString(addr) || strings.HasPrefix(addr, "data.") {
		return errcode.New(errcode.Usage, "%q is not the address of a managed resource instance", addr).
			WithHint(`Give it as the engine would, e.g. aws_s3_bucket.logs or 'module.app.fixture_object.o["a"]'.`)
	}
	if strings.TrimSpace(id) == "" || strings.ContainsAny(id, "\n") {
		return errcode.New(errcode.Usage, "the import ID %q is empty or spans lines", id)
	}
	// Asked first, so the refusal names the import rather than its apply.
	if _, err := cmdutil.EditApproval(f.Getenv, opts.Chdir, cmdutil.FlagEnvironment(f.Getenv, opts.Env), "import", opts.ApprovedBy); err != nil {
		return err
	}
	in, err := runner.ResolveRun(&opts.RunFlags, cmd, f, scoperun.Apply, nil)
	if err != nil {
		return err
	}
	in.Opts.EngineFlags.Targets = append(in.Opts.EngineFlags.Targets, addr)
	in.Opts.ImportOnly = true
	in.Opts.Label = "import"
	opts.in = in
	return nil
}

// runImport writes the import block beside the configuration for the run,
// and runs it (runF in tests).
func runImport(ctx context.Context, opts *ImportOptions, runF func(context.Context, *runner.RunInput) cmdutil.Outcome) cmdutil.Outcome {
	in := opts.in
	file, err := writeImportBlock(in.Opts.Dir, opts.Address, opts.ID)
	if err != nil {
		in.Opts.Store.Close()
		return cmdutil.Outcome{Command: "import", Err: errcode.Wrap(errcode.Internal, err, "writing the import block in %s", in.Opts.Dir)}
	}
	defer os.Remove(file)
	if runF == nil {
		runF = runner.RunScope
	}
	o := runF(ctx, in)
	o.Command = "import"
	return o
}

// writeImportBlock writes the temporary configuration file that holds the
// import block, named so that it is plainly sponson's and removed after the
// run.
func writeImportBlock(dir, addr, id string) (string, error) {
	suffix := strings.TrimPrefix(scoperun.NewRunID(), "run-")
	file := filepath.Join(dir, "sponson_import_"+suffix+".tf")
	// The ID is a string literal: quote it, and keep "${" and "%{" literal.
	lit := fmt.Sprintf("%q", id)
	lit = strings.ReplaceAll(strings.ReplaceAll(lit, "${", "$${"), "%{", "%%{")
	body := fmt.Sprintf("# Written by `sponson import` for one run; removed when it ends.\nimport {\n  to = %s\n  id = %s\n}\n", addr, lit)
	return file, os.WriteFile(file, []byte(body), 0o600)
}
