package manystacks

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stack"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/stackoutputs"
	"github.com/sponson/terraform-provider-sponson/internal/stackrun"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// EveryStack is --all of gc and drift: the command in every stack of the
// repository (or under --chdir), each as its own sponson process
// (docs/design.md §4.7).
type EveryStack struct {
	All         bool
	Parallelism int
}

func (e *EveryStack) Bind(cmd *cobra.Command, all string) {
	cmd.Flags().BoolVar(&e.All, "all", false, all)
	cmd.Flags().IntVar(&e.Parallelism, "parallelism", defaultStackParallelism, "with --all: how many stacks run at once (env SPONSON_PARALLELISM)")
}

// CheckOne refuses --parallelism without --all.
func (e *EveryStack) CheckOne(cmd *cobra.Command) error {
	if !e.All && cmd.Flags().Changed("parallelism") {
		return errcode.New(errcode.Usage, "--parallelism is how many stacks run at once with --all; it needs --all")
	}
	return nil
}

// EveryStackRun is gc or drift over every stack.
type EveryStackRun struct {
	command string
	Set     *StacksResult
	Lines   *lockedPrinter
	// argsFor is the command line of one stack's run.
	ArgsFor func(s *stackgraph.Stack) []string
	self    string
	env     []string
	// line is a succeeded stack's closing line, from its result.
	Line func(r *StackRunResult) string
	// quiet says whether a failed stack's output is left out of the log
	// (a drifted stack: its line says what drifted).
	Quiet func(r *StackRunResult) bool

	mu      sync.Mutex
	results map[string]*StackRunResult
	because map[string]string
}

// EveryStackArgs is the command line of one stack's gc or drift: the
// user's flags as given (every value of a repeatable one), without those
// that choose the stacks or the output, which the parent sets.
func EveryStackArgs(cmd *cobra.Command, command string, positional []string) []string {
	out := []string{command}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "chdir", "json", "stack", "all", "parallelism", "summary":
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+fl.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+fl.Name+"="+fl.Value.String())
	})
	return append(out, positional...)
}

// StartEveryStack finds the stacks under chdir and prepares their runs: a
// command's prepare calls it, and its run starts them (Run).
func StartEveryStack(cmd *cobra.Command, f *cmdutil.Factory, command, chdir string, parallelism int) (*EveryStackRun, []string, error) {
	if strings.TrimSpace(f.Getenv(stack.EnvVar)) != "" {
		return nil, nil, errcode.New(errcode.Usage, "%s names one stack; %s --all names each stack itself", stack.EnvVar, command).
			WithHint("Unset SPONSON_STACK, or run the one stack without --all.")
	}
	set, warnings, err := SelectStacks(cmd.Context(), f.Getenv, &StacksOptions{Chdir: chdir})
	if err != nil {
		return nil, warnings, err
	}
	if len(set.Stacks) == 0 {
		return nil, warnings, NoStacks(command, set)
	}
	storeFlag, _ := cmd.Flags().GetString("store")
	envFlag, _ := cmd.Flags().GetString("env")
	warnings = append(warnings, AllWarnings(cmd.Context(), f.Getenv, command, storeFlag, runctx.Flags{Environment: envFlag}, set)...)
	self, err := f.Executable()
	if err != nil {
		return nil, warnings, errcode.Wrap(errcode.Internal, err, "cannot find the sponson executable to run each stack")
	}
	m := &EveryStackRun{command: command, Set: set, self: self,
		env:     append(append(os.Environ(), stack.EnvVar+"=", stackoutputs.EnvVar+"="), reviewEnv...),
		results: map[string]*StackRunResult{}, because: map[string]string{}}
	jsonMode, _ := cmd.Flags().GetBool("json")
	p := cmdutil.Printer{W: f.Out}
	if jsonMode || cmdutil.WantsJSON(nil, f.Getenv) {
		p.W = f.ErrOut
	}
	m.Lines = &lockedPrinter{p: p}
	for _, w := range warnings {
		m.Lines.Line("warning: %s", w)
	}
	m.Lines.Line("sponson %s --all · %d stacks · parallelism %d", command, len(set.Stacks), max(parallelism, 1))
	return m, warnings, nil
}

// Run runs the command in every stack: in reverse dependency order for gc
// (a dependent's scopes are destroyed before those of the stacks it reads,
// as destroy --all does), all at once up to the parallelism for drift,
// which changes nothing.
func (m *EveryStackRun) Run(ctx context.Context, reverse bool, parallelism int) []StackRunResult {
	stacks := m.Set.Stacks
	if !reverse {
		stacks = make([]*stackgraph.Stack, len(m.Set.Stacks))
		for i, s := range m.Set.Stacks {
			c := *s
			c.Needs = nil
			stacks[i] = &c
		}
	}
	status := stackrun.Run(ctx, stacks, stackrun.Options{
		Reverse:     reverse,
		Parallelism: max(parallelism, 1),
		Run: func(ctx context.Context, s *stackgraph.Stack) bool {
			r, output := runStackProcess(ctx, m.self, s, m.ArgsFor(s), m.env)
			m.mu.Lock()
			m.results[s.Directory] = r
			m.mu.Unlock()
			if r.Status == stackrun.Failed && !m.Quiet(r) {
				m.Lines.block(s.Directory, r, output)
			}
			return r.Status == stackrun.Succeeded
		},
		Event: m.event,
	})
	var out []StackRunResult
	for _, s := range m.Set.Stacks {
		m.mu.Lock()
		r := m.results[s.Directory]
		m.mu.Unlock()
		if r == nil {
			r = &StackRunResult{Status: status[s.Directory], Because: m.because[s.Directory]}
		}
		r.Stack, r.Directory, r.Depth, r.Needs = s.Name, s.Directory, s.Depth, s.Needs
		out = append(out, *r)
	}
	if out == nil {
		out = []StackRunResult{}
	}
	return out
}

func (m *EveryStackRun) event(e stackrun.Event) {
	dir := e.Stack.Directory
	m.mu.Lock()
	r := m.results[dir]
	m.mu.Unlock()
	switch {
	case e.Started:
		m.Lines.event(dir, "running", "", fmt.Sprintf("%s: %s started", dir, m.command))
	case e.Status == stackrun.Skipped:
		m.mu.Lock()
		m.because[dir] = e.Because
		m.mu.Unlock()
		m.Lines.event(dir, "skipped", e.Because, fmt.Sprintf("%s: skipped: %s", dir, e.Because))
	case e.Status == stackrun.Succeeded || (r != nil && m.Quiet(r)):
		m.Lines.event(dir, string(e.Status), "", fmt.Sprintf("%s: %s", dir, m.Line(r)))
	}
}

// worst is the error of the stack that failed worst (the highest exit
// code), naming every stack that failed or was skipped; nil when none did.
func WorstOf(results []StackRunResult) error {
	var worst *StackRunResult
	var failed, skipped []string
	for i := range results {
		r := &results[i]
		switch r.Status {
		case stackrun.Failed:
			failed = append(failed, r.Directory)
			if worst == nil || r.ExitCode > worst.ExitCode {
				worst = r
			}
		case stackrun.Skipped:
			skipped = append(skipped, r.Directory)
		}
	}
	switch {
	case worst != nil:
		return stacksError(worst, failed, skipped)
	case len(skipped) > 0:
		return errcode.New(errcode.Interrupted, "the run was interrupted before %s", strings.Join(skipped, ", ")).With("skipped", skipped)
	}
	return nil
}
