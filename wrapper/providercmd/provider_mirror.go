package providercmd

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/providermirror"
	"github.com/sponson/terraform-provider-sponson/internal/version"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// ProviderMirrorOptions are the options of `sponson provider mirror`.
type ProviderMirrorOptions struct {
	*cmdutil.IO
	// Executable is the sponson binary written into the mirror.
	Executable func() (string, error)
	Dir        string
}

// NewCmdProviderMirror builds `sponson provider mirror DIR`.
func NewCmdProviderMirror(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *ProviderMirrorOptions) cmdutil.Outcome) *cobra.Command {
	opts := &ProviderMirrorOptions{IO: f.IO(), Executable: f.Executable}
	return &cobra.Command{
		Use:   "mirror DIR",
		Short: "Write the provider into a filesystem mirror for tofu and terraform",
		Long: `Mirror writes this sponson binary, as provider sponson/sponson, into DIR in the
packed layout of a filesystem mirror, under both registry hosts:

  DIR/registry.opentofu.org/sponson/sponson/terraform-provider-sponson_VERSION_OS_ARCH.zip
  DIR/registry.terraform.io/sponson/sponson/terraform-provider-sponson_VERSION_OS_ARCH.zip

for this machine's platform only. It prints the provider_installation block
of the CLI configuration (TF_CLI_CONFIG_FILE, ~/.tofurc or ~/.terraformrc)
that installs sponson/sponson from DIR, and the package's h1: and zh: hashes
for the lock file: 'init' records the h1: hash and checks it on every later
'init'. Writing the mirror again with the same binary gives the same zips.

Under 'sponson plan', 'apply' and 'destroy' none of this is needed: sponson
offers its own provider to the engine.`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.RunE(f, out, opts, func(_ *cobra.Command, args []string) error {
			opts.Dir = args[0]
			return nil
		}, runF, runProviderMirror),
	}
}

func runProviderMirror(_ context.Context, opts *ProviderMirrorOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "provider mirror"}
	bin, err := opts.Executable()
	if err != nil {
		o.Err = errcode.Wrap(errcode.MirrorFailed, err, "finding the sponson binary")
		return o
	}
	m, err := providermirror.Write(opts.Dir, bin, version.Mirror(), runtime.GOOS+"_"+runtime.GOARCH)
	if err != nil {
		o.Err = errcode.Wrap(errcode.MirrorFailed, err, "writing the provider mirror into %s", opts.Dir)
		return o
	}
	cli := providermirror.CLIConfig(m.Dir)
	o.Result = map[string]any{"mirror": m, "cliConfig": cli}
	if opts.JSON {
		return o
	}
	fmt.Fprintf(opts.Out, "provider sponson/sponson %s (%s) written to %s\n", m.Version, m.Platform, m.Dir)
	for _, a := range m.Archives {
		fmt.Fprintf(opts.Out, "  %s\n", a)
	}
	fmt.Fprintf(opts.Out, "lock file hashes:\n  %s\n", strings.Join(m.Hashes, "\n  "))
	fmt.Fprintf(opts.Out, "CLI configuration that installs it from there:\n\n%s", cli)
	return o
}
