package enginecmd

import (
	"context"
	"flag"
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

func versionFlags(fs *flag.FlagSet) engineRun {
	js := fs.Bool("json", false, "print the engine's version JSON")
	return func(ctx context.Context, c *engineCall, args []string) (any, error) {
		if err := noArgs("version", args); err != nil {
			return nil, err
		}
		if c.sess == nil {
			if !c.jsonMode {
				fmt.Fprintln(c.out, versionLine())
			}
			return versionResult(), nil
		}
		raw, v, providers, err := c.sess.VersionJSON(ctx)
		if err != nil {
			return nil, err
		}
		res := versionResult()
		res["engine"] = c.sess.Describe()
		res["engineBinary"] = c.sess.Binary
		if *js && !c.jsonMode {
			_, err := c.out.Write(raw)
			return res, err
		}
		if !c.jsonMode {
			fmt.Fprintln(c.out, versionLine())
			fmt.Fprintf(c.out, "%s v%s (%s)\n", engineTitle(c.sess.Name), v, c.sess.Binary)
			for _, p := range sortedKeys(providers) {
				fmt.Fprintf(c.out, "+ provider %s v%s\n", p, providers[p])
			}
		}
		return res, nil
	}
}

func engineTitle(name string) string {
	if name == "opentofu" {
		return "OpenTofu"
	}
	return "Terraform"
}
