package wrapper

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/version"
)

// NewCmdVersion builds `sponson version`.
func NewCmdVersion(f *Factory, out *outcome) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of sponson and of the provider it serves",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			*out = outcome{command: "version", result: map[string]string{
				"version": version.Version, "provider": version.Mirror(), "go": runtime.Version(), "platform": runtime.GOOS + "_" + runtime.GOARCH,
			}}
			if j, _ := cmd.Flags().GetBool("json"); !j && !wantsJSON(nil, f.Getenv) {
				fmt.Fprintf(f.Out, "sponson %s (provider sponson/sponson %s, %s, %s/%s)\n", version.Version, version.Mirror(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			}
			return nil
		},
	}
}
