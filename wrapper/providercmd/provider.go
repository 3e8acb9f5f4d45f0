// Package providercmd is `sponson provider`: the provider served to the
// engine, and mirrored for a network that cannot reach the registry.
package providercmd

import (
	"github.com/spf13/cobra"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// NewCmdProvider builds `sponson provider`, the commands about the provider
// the sponson binary serves, for use without the wrapper.
func NewCmdProvider(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "provider <command>",
		Short: "Use the sponson provider without the wrapper",
		Long: `The sponson binary is also the provider sponson/sponson. Under 'sponson plan',
'apply' and 'destroy' the engine gets it automatically; these commands are for
running tofu or terraform directly (air-gapped teams, configurations that
only take a sponson_lease).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdProviderMirror(f, out, nil))
	return cmd
}
