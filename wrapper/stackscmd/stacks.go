// Package stackscmd is `sponson stacks`: the stacks of a repository in
// dependency order, or those a change touches (docs/design.md §4.7).
package stackscmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/stackpipeline"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/manystacks"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// StacksOptions are the options of `sponson stacks`: the selection of
// stacks, and where its run writes.
type StacksOptions struct {
	*cmdutil.IO
	manystacks.StacksOptions
}

var stacksFlagEnv = map[string]string{"chdir": "SPONSON_CHDIR", "base": "SPONSON_BASE"}

// NewCmdStacks builds `sponson stacks`.
func NewCmdStacks(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *StacksOptions) cmdutil.Outcome) *cobra.Command {
	opts := &StacksOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "stacks [flags]",
		Short: "List the repository's stacks in dependency order",
		Long: `Stacks lists the stacks of the repository (or of the --chdir directory): every
directory whose root module declares a sponson_scope resource, except hidden
directories (.git, .terraform, .sponson). Each has its name (the same one its
runs use), its directory relative to the repository root, the directories of
the stacks it depends on, and its depth: 0 without dependencies, else one more
than its deepest dependency. A stack depends on the stacks named in the after
attribute of its sponson_scope and in the stack attribute of its
sponson_outputs data sources, read from the files without running the engine
(so they must be literal strings). A cycle is refused (exit 2, STACK_CYCLE),
naming it. Stacks come by depth, then by directory: the order plan --all and
apply --all run them in.

--changed keeps the stacks whose files changed between --base and HEAD
(` + "`git diff --name-only BASE...HEAD`" + `): a file under the stack's directory (and
under no deeper stack's), under a local module it uses (followed through
modules of modules), or a sponson.hcl in its directory or above; a file the
stack or its local modules read through file, templatefile, fileset,
fileexists, filebase64 or the file hashes (filemd5, filesha256, ...) whose
path is known before the engine runs (literals, path.module, path.root,
path.cwd, locals made of them); the target of a symbolic link in the stack's
directory or its modules'; a file matching a watch glob of its sponson.hcl
(watch = [...] for every stack, stack "DIR" { watch = [...] } for one); and
every stack that depends on one of them. Each says why it is listed. A stack
that reads a path sponson cannot resolve (file(var.x), a data source's
result) is listed on every change, saying where, unless its sponson.hcl
declares its own watch list (stack "DIR" { watch = [...] }): then that list
is what it reads. What the
working tree changed and is not committed yet counts too (modified, staged,
or new and not ignored), and its files are named "(not committed)": run
locally, --changed shows what the next commit would change; what the engine
and sponson write (.terraform/, .sponson/, a new .terraform.lock.hcl) is left
out. A CI checkout is clean, so there only commits count. --base
defaults to the pull request's target branch on GitHub Actions
(origin/$GITHUB_BASE_REF) and GitLab (the merge request's diff base), else
the remote's default branch (origin/HEAD), else main. On a push to the
default branch pass the commit before the push (--base
${{ github.event.before }}, $CI_COMMIT_BEFORE_SHA): the branch is its own base.

--changed also lists the stacks removed since the merge base of --base and
HEAD: a stack of the base whose name HEAD no longer has (its directory
deleted, or its configuration moved to another directory: "renamed"), with
the scopes its state holds in the environment (in the store SPONSON_STORE
names), read from a checkout of the merge base (git worktree, removed
after). plan --changed plans their destroy and apply --changed destroys
them; under --json they are result.removed.

--json gives the envelope whose result.stacks is a list of {"stack",
"directory", "depth", "needs", "reasons"}: what a GitHub Actions matrix
(fromJSON) or a GitLab parent-child pipeline takes, one job per stack, a
layer of jobs per depth. result.layers holds the same stacks by depth
(layers[0] are those of depth 0): the matrix of one layer of a GitHub Actions
workflow (fromJSON(needs.stacks.outputs.stacks).result.layers[0]).

--gitlab-pipeline FILE writes a GitLab child pipeline of the listed stacks to
FILE, for a trigger job to run (trigger:include:artifact): the --gitlab-template
file first (a GitLab CI file that defines the hidden job .sponson-stack, one
stack's job: image, install, the sponson line; and no stages or visible jobs),
then a stage per depth (depth-0, depth-1, ...) and, per stack, a job "stack DIR"
extending .sponson-stack in its depth's stage with SPONSON_CHDIR set to its
directory. Without a stack to run the pipeline holds one job saying so.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return cmdutil.BindEnv(cmd.Flags(), stacksFlagEnv, opts.Getenv)
		}, runF, runStacks),
	}
	opts.Bind(cmd, "list")
	cmd.Flags().StringVar(&opts.GitLabPipeline, "gitlab-pipeline", "", "write a GitLab child pipeline of the listed stacks to `FILE`: a stage per depth, a job per stack extending "+stackpipeline.StackJob+" of --gitlab-template")
	cmd.Flags().StringVar(&opts.GitLabTemplate, "gitlab-template", "", "the GitLab CI `FILE` --gitlab-pipeline starts from: it defines the hidden job "+stackpipeline.StackJob+" (one stack's job) and no stages")
	cmd.Flags().StringVar(&opts.Chdir, "chdir", "", "the directory to look for stacks in (env SPONSON_CHDIR; default: the repository root, else the working directory)")
	return cmd
}

func runStacks(ctx context.Context, opts *StacksOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "stacks"}
	if opts.Base != "" && !opts.Changed {
		o.Err = errcode.New(errcode.Usage, "--base is the revision --changed compares with; it needs --changed")
		return o
	}
	if (opts.GitLabPipeline == "") != (opts.GitLabTemplate == "") {
		o.Err = errcode.New(errcode.Usage, "--gitlab-pipeline and --gitlab-template go together: the pipeline is written from the template").
			WithHint("Pass --gitlab-template FILE, the GitLab CI file that defines " + stackpipeline.StackJob + ", with --gitlab-pipeline FILE.")
		return o
	}
	res, warnings, err := manystacks.SelectStacks(ctx, opts.Getenv, &opts.StacksOptions)
	o.Warnings = warnings
	if err != nil {
		o.Err = err
		return o
	}
	res.Close() // the checkout of the base is for a run of the removed stacks
	if len(res.Removed) > 0 && (opts.JSON || opts.GitLabPipeline != "") {
		// A matrix of result.layers, or the child pipeline, runs the
		// stacks of HEAD only.
		o.Warnings = append(o.Warnings, fmt.Sprintf("%d %s removed since %s (result.removed) %s no job of a CI matrix or child pipeline: `sponson plan --changed` and `apply --changed` on one runner plan and apply their destroy",
			len(res.Removed), cmdutil.Plural(len(res.Removed), "stack", "stacks"), res.Base, cmdutil.Plural(len(res.Removed), "has", "have")))
	}
	o.Result = res
	if opts.GitLabPipeline != "" {
		if err := writeGitLabPipeline(&opts.StacksOptions, res); err != nil {
			o.Err = err
			return o
		}
	}
	if opts.JSON {
		return o
	}
	p := cmdutil.Printer{W: opts.ErrOut}
	for _, w := range warnings {
		p.Warn(w)
	}
	writeStacks(opts.Out, res)
	return o
}

// writeGitLabPipeline writes the GitLab child pipeline of the selected
// stacks (internal/stackpipeline).
func writeGitLabPipeline(opts *manystacks.StacksOptions, res *manystacks.StacksResult) error {
	tpl, err := os.ReadFile(opts.GitLabTemplate)
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "--gitlab-template %q cannot be read", opts.GitLabTemplate)
	}
	why := fmt.Sprintf("all %d stacks", len(res.Stacks))
	if res.Base != "" {
		why = fmt.Sprintf("%d %s changed since %s, or depending on one that did", len(res.Stacks), cmdutil.Plural(len(res.Stacks), "stack", "stacks"), res.Base)
	}
	out, err := stackpipeline.GitLab(tpl, res.Stacks, why)
	if err != nil {
		return err
	}
	if err := runner.WriteFile(opts.GitLabPipeline, out); err != nil {
		return errcode.Wrap(errcode.Usage, err, "writing --gitlab-pipeline %s", opts.GitLabPipeline)
	}
	return nil
}

// writeStacks prints the stacks as a table, then why each changed one is
// listed.
func writeStacks(w io.Writer, res *manystacks.StacksResult) {
	defer writeRemoved(w, res)
	if len(res.NotStacks) > 0 && res.Base == "" {
		defer fmt.Fprintf(w, "\nnot stacks (root modules without sponson_scope, left out of --all): %s\n", strings.Join(res.NotStacks, ", "))
	}
	if len(res.Stacks) == 0 && len(res.Removed) > 0 {
		return
	}
	if len(res.Stacks) == 0 {
		if res.Base != "" {
			fmt.Fprintf(w, "no stack changed since %s\n", res.Base)
		} else {
			fmt.Fprintf(w, "no stacks under %s (a stack is a directory whose configuration declares sponson_scope)\n", res.Root)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEPTH\tDIRECTORY\tSTACK\tNEEDS")
	for _, s := range res.Stacks {
		needs := strings.Join(s.Needs, ", ")
		if needs == "" {
			needs = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Depth, s.Directory, s.Name, needs)
	}
	_ = tw.Flush()
	if res.Base == "" {
		return
	}
	if len(res.Uncommitted) > 0 {
		fmt.Fprintf(w, "\nwhy each is listed (changes since %s, and %d %s of the working tree not committed):\n", res.Base, len(res.Uncommitted), cmdutil.Plural(len(res.Uncommitted), "file", "files"))
	} else {
		fmt.Fprintf(w, "\nwhy each is listed (changes since %s):\n", res.Base)
	}
	for _, s := range res.Stacks {
		for _, r := range s.Reasons {
			fmt.Fprintf(w, "  %s: %s\n", s.Directory, r)
		}
	}
}

// writeRemoved prints the stacks of the base that HEAD no longer has, with
// the scopes their state holds and what a run of the change does with them.
func writeRemoved(w io.Writer, res *manystacks.StacksResult) {
	if len(res.Removed) == 0 {
		return
	}
	fmt.Fprintf(w, "\nremoved since %s (plan --changed plans their destroy from the base's configuration; apply --changed destroys them, dependents first; the state of a renamed one moves to its new stack instead, nothing destroyed):\n", res.Base)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  DIRECTORY\tSTACK\tSCOPES\tWHY")
	for _, r := range res.Removed {
		scopes := "-"
		switch {
		case r.ScopesError != "":
			scopes = "unknown (" + r.ScopesError + ")"
		case len(r.Scopes) > 0:
			scopes = r.Environment + ": " + strings.Join(r.Scopes, ", ")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Directory, r.Name, scopes, strings.Join(r.Reasons, "; "))
	}
	_ = tw.Flush()
}
