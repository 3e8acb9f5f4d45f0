package enginecmd

import (
	"fmt"
	"runtime"
	"sort"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/version"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// NewCmdVersion builds `sponson version` (and `-version`): sponson's version
// and the engine's, as the engine's own version command prints it.
func NewCmdVersion(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	for _, ec := range engineCommands() {
		if ec.use == "version" {
			cmd := newEngineCmd(f, out, "", ec)
			cmd.Short = "Print the version of sponson, of the provider it serves and of the engine"
			return cmd
		}
	}
	panic("no version in the engine commands")
}

func versionResult() map[string]any {
	return map[string]any{"version": version.Version, "provider": version.Mirror(), "go": runtime.Version(), "platform": runtime.GOOS + "_" + runtime.GOARCH}
}

func versionLine() string {
	return fmt.Sprintf("sponson %s (provider sponson/sponson %s, %s, %s/%s)", version.Version, version.Mirror(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
