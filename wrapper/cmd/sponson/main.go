// Command sponson is the Sponson CLI. The same binary is also the provider:
// under the wrapper it serves the provider from its own process
// (docs/design.md §7.2), so the wrapper and the provider are always the same
// build; started by an engine as terraform-provider-sponson (installed from
// a mirror `sponson provider mirror` wrote), it serves the provider alone.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/reaper"
	"github.com/sponson/terraform-provider-sponson/internal/version"
	"github.com/sponson/terraform-provider-sponson/provider"
	"github.com/sponson/terraform-provider-sponson/wrapper"
)

func main() {
	if strings.HasPrefix(filepath.Base(os.Args[0]), engine.ProviderBinaryPrefix) {
		if err := provider.Serve(context.Background(), version.Version, false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == reaper.Command {
		// The watcher a run starts to end its engine's children if the run
		// dies (package reaper); not a command for people.
		if err := reaper.Main(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	os.Exit(int(wrapper.Main()))
}
