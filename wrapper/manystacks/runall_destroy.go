package manystacks

import (
	"context"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// checkDestroyDependents refuses destroy --all, before anything runs, when
// a stack of the repository outside the run (destroy --all under --chdir)
// depends on a stack of the run and still holds state in the run's scope:
// destroying the upstream would pull the ground from under it
// (docs/design.md §4.7). Stacks of the run are destroyed dependents first,
// so only those outside it are checked.
func checkDestroyDependents(ctx context.Context, f *cmdutil.Factory, flags *cmdutil.RunFlags, res *StacksResult) error {
	if res.Top == res.Root {
		return nil // the run holds every stack of the repository
	}
	full, _, err := SelectStacks(ctx, f.Getenv, &StacksOptions{Chdir: res.Top})
	if err != nil {
		return err
	}
	inRun := map[string]bool{}
	for _, s := range res.Stacks {
		inRun[s.Directory] = true
	}
	var holding []string
	for _, s := range full.Stacks {
		if inRun[s.Directory] {
			continue
		}
		var upstream []string
		for _, n := range s.Needs {
			if inRun[n] {
				upstream = append(upstream, n)
			}
		}
		if len(upstream) == 0 {
			continue
		}
		src := runctx.ProcessSources(s.Dir)
		src.Getenv = f.Getenv
		c, err := runctx.Detect(runctx.Flags{Environment: flags.Env, Scope: flags.Scope, Branch: flags.Branch, PullRequest: flags.PR, Commit: flags.Commit}, src)
		if err != nil {
			return err
		}
		env, err := cmdutil.DeclaredEnvironment(ctx, f.Getenv, s.Dir, c)
		if err != nil {
			return err
		}
		st, _, err := storeurl.OpenFor(flags.Store, s.Dir, env.Name)
		if err != nil {
			return err
		}
		state, err := st.ReadState(ctx, store.Key{Stack: s.Name, Environment: env.Name, Scope: c.Scope})
		st.Close()
		if err != nil {
			return err
		}
		if scoperun.StateHolds(state) {
			holding = append(holding, s.Directory+" (it needs "+strings.Join(upstream, ", ")+")")
		}
	}
	if len(holding) > 0 {
		return errcode.New(errcode.StackHasDependents, "destroy --all under %s would destroy stacks that stacks outside it still depend on, and those hold state in this scope: %s",
			res.Root, strings.Join(holding, "; ")).With("dependents", holding)
	}
	return nil
}
