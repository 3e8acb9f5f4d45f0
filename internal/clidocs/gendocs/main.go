// Command gendocs writes the sponson CLI reference into a directory:
//
//	go run ./internal/clidocs/gendocs docs/cli
//
// `make generate` runs it through the go:generate line in internal/clidocs.
package main

import (
	"fmt"
	"os"

	"github.com/sponson/terraform-provider-sponson/internal/clidocs"
	"github.com/sponson/terraform-provider-sponson/wrapper"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DIR")
		os.Exit(2)
	}
	// The tree is only built, never executed, so no outcome is needed: the
	// commands write theirs only when they run.
	root := wrapper.NewCmdRoot(cmdutil.NewFactory(), nil)
	if err := clidocs.Write(os.Args[1], clidocs.Render(root)); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
