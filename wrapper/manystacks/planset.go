package manystacks

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/planset"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/version"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// A saved plan of many stacks (docs/design.md §4.2): `plan --all|--changed
// -out DIR` saves each stack's plan in DIR and, once every stack planned,
// the manifest (internal/planset); `apply DIR` applies those plans, and
// only those, in the manifest's order, each stack's own apply refusing its
// plan if it went stale.

// savedSet is the plan of many stacks an apply applies.
type savedSet struct {
	dir string
	m   *planset.Manifest
}

// prepareOut makes plan -out's directory ready, refusing what a saved plan
// of many stacks cannot hold.
func prepareOut(sel *StackSelection, res *StacksResult) error {
	if len(res.Removed) > 0 {
		var dirs []string
		for _, r := range res.Removed {
			dirs = append(dirs, r.Directory)
		}
		return errcode.New(errcode.Usage, "-out cannot save what the merge does to a removed or renamed stack (%s): a removed stack's destroy is planned in a checkout of the base, which the apply would not have, and a renamed stack's state moves before its new stack's plan", strings.Join(dirs, ", ")).
			WithHint("Plan without -out; after the merge `apply --changed` destroys or moves it.")
	}
	abs, err := filepath.Abs(sel.out)
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "-out %q", sel.out)
	}
	sel.out = abs
	return planset.Prepare(abs)
}

// stackArgs are the arguments of one stack's process beyond the run's own:
// where its plan goes, or the plan it applies.
func (m *manyRun) stackArgs(s *stackgraph.Stack) []string {
	switch {
	case m.out != "":
		return []string{"-out=" + filepath.Join(m.out, planset.File(s.Directory))}
	case m.set != nil:
		return []string{filepath.Join(m.set.dir, planset.File(s.Directory))}
	}
	return nil
}

// saveSet writes the manifest of the plans when every stack planned (whole),
// and tells how to apply them; otherwise it says why there is none.
func (m *manyRun) saveSet(whole bool) error {
	if !whole {
		m.lines.Line("no plans saved in %s: not every stack planned, and `sponson apply %s` refuses a directory without its manifest", m.out, m.out)
		return nil
	}
	key, err := savedplan.Key(m.io.Getenv)
	if err != nil {
		return err
	}
	man := &planset.Manifest{Sponson: version.Version, CreatedAt: time.Now().UTC(), Which: m.which, Stacks: []planset.Entry{}}
	for _, s := range m.res.Stacks {
		var rr runner.RunResult
		if r := m.result(s.Directory); r != nil && man.Commit == "" && json.Unmarshal(r.Result, &rr) == nil {
			man.Commit = rr.Context.Commit
		}
		man.Stacks = append(man.Stacks, planset.Entry{Stack: s.Name, Directory: s.Directory, Depth: s.Depth, Needs: s.Needs, File: planset.File(s.Directory)})
	}
	if err := planset.Write(m.out, man, key); err != nil {
		return err
	}
	m.lines.Line("saved the plans of %d stacks to %s (mode 0600: they hold the engines' plans, sensitive values included); `sponson apply %s` applies exactly these plans in order, or refuses a stack's that went stale", len(man.Stacks), m.out, m.out)
	return nil
}

// IsPlanSet reports whether apply's positional argument is a plan of many
// stacks (a directory) rather than one stack's saved plan.
func IsPlanSet(args []string) bool {
	return len(args) == 1 && planset.IsSet(args[0])
}

// PreparePlanSet prepares `apply DIR`: it checks the manifest and every plan
// in DIR before anything runs, and finds each planned stack in this
// checkout.
func PreparePlanSet(cmd *cobra.Command, f *cmdutil.Factory, flags *cmdutil.RunFlags, review *cmdutil.ReviewFlags, sel *StackSelection, dir string) *Prepared {
	o := cmdutil.Outcome{Command: string(scoperun.Apply)}
	m, err := preparePlanSet(cmd, f, flags, review, sel, dir)
	o.Err = err
	return &Prepared{outcome: o, m: m}
}

func preparePlanSet(cmd *cobra.Command, f *cmdutil.Factory, flags *cmdutil.RunFlags, review *cmdutil.ReviewFlags, sel *StackSelection, dir string) (*manyRun, error) {
	if err := bindSelectionEnv(cmd, f); err != nil {
		return nil, err
	}
	if raw, _ := cmd.Flags().GetStringArray(cmdutil.EngineArgFlag); len(raw) > 0 {
		return nil, errcode.New(errcode.Usage, "-var and engine flags cannot be given with a saved plan: the plans hold them").
			WithHint("Plan again with the flags, then apply the new plans.")
	}
	key, err := savedplan.Key(f.Getenv)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errcode.Wrap(errcode.Usage, err, "%q", dir)
	}
	man, err := planset.Read(abs, key)
	if err != nil {
		return nil, err
	}
	sel.Chdir = flags.Chdir
	sel.All = true
	res, _, err := SelectStacks(cmd.Context(), f.Getenv, &sel.StacksOptions)
	if err != nil {
		return nil, err
	}
	stacks, err := plannedStacks(man, res)
	if err != nil {
		res.Close()
		return nil, err
	}
	res.Stacks = stacks
	m, err := newManyRun(cmd, f, review, sel, scoperun.Apply, nil, res)
	if err != nil {
		res.Close()
		return nil, err
	}
	m.set = &savedSet{dir: abs, m: man}
	m.which = "of the plans in " + dir
	m.startLines(cmd, nil)
	m.lines.Line("%s: %s", dir, man.Describe())
	return m, nil
}

// plannedStacks are the manifest's stacks as this checkout has them, in the
// manifest's order: each must still be a stack, under the same name.
func plannedStacks(man *planset.Manifest, res *StacksResult) ([]*stackgraph.Stack, error) {
	here := map[string]*stackgraph.Stack{}
	for _, s := range res.Stacks {
		here[s.Directory] = s
	}
	var planned []string
	for _, e := range man.Stacks {
		planned = append(planned, e.Directory)
	}
	var out []*stackgraph.Stack
	for _, e := range man.Stacks {
		s := here[e.Directory]
		switch {
		case s == nil:
			return nil, errcode.New(errcode.PlanStale, "the plans hold stack %s (%s), which this checkout does not have", e.Stack, e.Directory).
				WithHint("Apply the plans in the checkout of the commit they were made at, or plan again.")
		case s.Name != e.Stack:
			return nil, errcode.New(errcode.PlanStale, "%s is stack %s here, and the plans were made for stack %s", e.Directory, s.Name, e.Stack).
				WithHint("Plan again.")
		}
		// The order is the plan's: a stack waits for those it needed then
		// that the plans hold.
		c := *s
		c.Depth, c.Needs = e.Depth, slices.DeleteFunc(slices.Clone(e.Needs), func(d string) bool { return !slices.Contains(planned, d) })
		out = append(out, &c)
	}
	return out, nil
}
