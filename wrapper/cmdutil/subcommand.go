package cmdutil

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// NeedsSubcommand is the RunE of a command that only groups others: run
// alone or with a word that is none of its subcommands, it fails.
func NeedsSubcommand(out *Outcome) func(*cobra.Command, []string) error {
	// prepare always refuses: there is nothing to run.
	return RunE(nil, out, struct{}{}, unknownSubcommand, nil, func(context.Context, struct{}) Outcome { return Outcome{} })
}

// unknownSubcommand refuses a missing or unknown subcommand of a command
// that only groups others, naming them.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	what := "needs a subcommand"
	for _, a := range args {
		// A group that parses no flags (the engine's) sees them here.
		if !strings.HasPrefix(a, "-") {
			what = fmt.Sprintf("has no subcommand %q", a)
			break
		}
	}
	return errcode.New(errcode.Usage, "sponson %s %s", cmd.Name(), what).
		WithHint(fmt.Sprintf("Its subcommands: %s (`sponson %s --help`).", strings.Join(names, ", "), cmd.Name()))
}
