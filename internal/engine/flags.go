package engine

import (
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// Flags are the engine's own plan and apply flags that a run passes through
// as the user gave them on the sponson command line (the wrapper reads them
// in the engine's spelling; see internal/engineflag).
type Flags struct {
	Targets  []string // -target, in order
	Replace  []string // -replace, in order
	Excludes []string // -exclude (OpenTofu only), in order
	// RefreshOnly plans only the update of the state to match the real
	// objects; NoRefresh skips the refresh (-refresh=false).
	RefreshOnly, NoRefresh bool
	Parallelism            int // -parallelism; 0 leaves the engine's default
	CompactWarnings        bool
	// PlanDestroy is plan -destroy: the plan is the one a destroy would
	// make (sponson plan only; a destroy is `sponson destroy`).
	PlanDestroy bool
}

// Empty reports whether no flag is set.
func (f Flags) Empty() bool {
	return len(f.Targets)+len(f.Replace)+len(f.Excludes) == 0 && !f.RefreshOnly && !f.NoRefresh && f.Parallelism == 0 && !f.CompactWarnings && !f.PlanDestroy
}

// Partial reports whether a plan with these flags may leave out changes a
// full plan would make: a targeted, excluded or refresh-only plan.
func (f Flags) Partial() bool {
	return len(f.Targets)+len(f.Excludes) > 0 || f.RefreshOnly
}

// check refuses the flags an engine does not have, before anything runs:
// HashiCorp Terraform has no -exclude.
func (f Flags) check(engineName, version string) error {
	if engineName != "opentofu" && len(f.Excludes) > 0 {
		return fmt.Errorf("-exclude is an OpenTofu flag; %s %s has no such flag", engineName, version)
	}
	if f.RefreshOnly && f.NoRefresh {
		return fmt.Errorf("-refresh-only and -refresh=false contradict each other")
	}
	return nil
}

// planOptions are the terraform-exec options for the flags it knows.
// terraform-exec always passes -parallelism and -refresh after anything
// given through TF_CLI_ARGS_plan, so those must go through it.
func (f Flags) planOptions() []tfexec.PlanOption {
	var opts []tfexec.PlanOption
	for _, t := range f.Targets {
		opts = append(opts, tfexec.Target(t))
	}
	for _, r := range f.Replace {
		opts = append(opts, tfexec.Replace(r))
	}
	if f.RefreshOnly {
		opts = append(opts, tfexec.RefreshOnly(true))
	}
	if f.NoRefresh {
		opts = append(opts, tfexec.Refresh(false))
	}
	if f.Parallelism > 0 {
		opts = append(opts, tfexec.Parallelism(f.Parallelism))
	}
	return opts
}

func (f Flags) applyOptions() []tfexec.ApplyOption {
	if f.Parallelism > 0 {
		return []tfexec.ApplyOption{tfexec.Parallelism(f.Parallelism)}
	}
	return nil
}

// planExtra are the plan arguments terraform-exec cannot express: -var and
// -var-file in the order the user gave them (terraform-exec puts every
// -var-file before every -var, which changes which value wins), -exclude
// and -compact-warnings.
func (f Flags) planExtra(vars []VarArg) []string {
	var args []string
	for _, v := range vars {
		if v.File {
			args = append(args, "-var-file="+v.Value)
		} else {
			args = append(args, "-var="+v.Value)
		}
	}
	for _, e := range f.Excludes {
		args = append(args, "-exclude="+e)
	}
	if f.CompactWarnings {
		args = append(args, "-compact-warnings")
	}
	return args
}

func (f Flags) applyExtra() []string {
	if f.CompactWarnings {
		return []string{"-compact-warnings"}
	}
	return nil
}

// ShellQuote quotes args for a TF_CLI_ARGS_* variable, which both engines
// split with github.com/mattn/go-shellwords (no variable or backtick
// expansion): each argument in single quotes, a single quote as '\”.
func ShellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// CLIArgsPrefix is the prefix of the engine's TF_CLI_ARGS and
// TF_CLI_ARGS_<command> variables: arguments the engine adds to its command
// line.
const CLIArgsPrefix = "TF_CLI_ARGS"

// withCLIArgs sets TF_CLI_ARGS_<command> to args for the duration of one
// engine command. The engine inserts them right after the subcommand, before
// terraform-exec's own arguments.
func withCLIArgs(command string, args []string) (restore func(), err error) {
	name := CLIArgsPrefix + "_" + command
	if len(args) == 0 {
		return func() {}, os.Unsetenv(name)
	}
	if err := os.Setenv(name, ShellQuote(args)); err != nil {
		return nil, err
	}
	return func() { os.Unsetenv(name) }, nil
}

// clearCLIArgs removes every TF_CLI_ARGS* variable from the process
// environment, which the engine inherits: sponson decides the engine's
// arguments (the wrapper reads the user's TF_CLI_ARGS and
// TF_CLI_ARGS_<command> as part of its own command line, refusing there
// what would defeat the scope's guarantees).
func clearCLIArgs() {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == CLIArgsPrefix || strings.HasPrefix(k, CLIArgsPrefix+"_") {
			os.Unsetenv(k)
		}
	}
}
