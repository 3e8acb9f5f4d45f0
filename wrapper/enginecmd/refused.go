package enginecmd

import "github.com/sponson/terraform-provider-sponson/internal/errcode"

// refusedCommands are the engine's commands sponson does not run, each
// with what to use instead.
var refusedCommands = map[string]string{
	"console":     "terraform-exec cannot run the engine's interactive console. For the scope's state: `sponson state pull > scope.tfstate`, then `tofu console -state=scope.tfstate` in the configuration directory.",
	"workspace":   "A scope replaces a workspace: each pull request (pr-<n>), branch and named scope has its own state, lease and receipts. Choose it with --scope NAME, --pr N or --branch NAME (or let CI detection choose); `sponson status` lists the scopes.",
	"refresh":     "Use `sponson apply -refresh-only` (or `sponson plan -refresh-only` to see what it would record); `sponson drift` checks every scope.",
	"taint":       "Use `sponson plan -replace=ADDR` and `sponson apply -replace=ADDR`.",
	"untaint":     "Plan and apply again; `sponson state list` shows the scope's instances.",
	"login":       "Run the engine's own `tofu login` or `terraform login`: sponson's engine reads the same credentials.",
	"logout":      "Run the engine's own `tofu logout` or `terraform logout`.",
	"modules":     "Run the engine's own `modules -json` in the configuration directory after `sponson init`.",
	"query":       "Run the engine's own `query` in the configuration directory after `sponson init`.",
	"0.12upgrade": "Run the engine of that version directly.",
	"0.13upgrade": "Run the engine of that version directly.",
}

// UnknownCommand refuses a command sponson does not have, naming it and
// what to use.
func UnknownCommand(name string) *errcode.Error {
	if hint, ok := refusedCommands[name]; ok {
		return errcode.New(errcode.Usage, "sponson does not run the engine's %q command", name).WithHint(hint).With("command", name)
	}
	return errcode.New(errcode.Usage, "%q is not a sponson command", name).
		WithHint("sponson runs plan, apply, destroy, import, output, state and show in a scope, and the engine's init, validate, fmt, providers, version, graph, get, test and metadata as the engine would; `sponson --help` lists them all.").
		With("command", name)
}
