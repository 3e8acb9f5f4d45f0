package wrapper

import (
	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
)

// stackFlagHelp is the --stack help of every command that takes it.
const stackFlagHelp = "stack name: one root module of one repository (env SPONSON_STACK; default: the sponson_scope " +
	"stack attribute, else the repository and the configuration's directory in it, e.g. github.com/acme/infra//stacks/app)"

func bindStack(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "stack", "", help)
}

// detectStack decides the stack of the configuration in dir (absolute):
// --stack, SPONSON_STACK, the sponson_scope attribute, then the derived
// name (internal/stack).
func detectStack(f *Factory, dir, flag string) (stack.Result, error) {
	declared, err := stack.Declared(dir)
	if err != nil {
		return stack.Result{}, err
	}
	src := runctx.ProcessSources(dir)
	return stack.Detect(dir, flag, declared, stack.Sources{Getenv: f.Getenv, Git: src.Git})
}
