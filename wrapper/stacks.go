package wrapper

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/stackpipeline"
)

// StacksOptions are the options of `sponson stacks`, and the stack
// selection of plan, apply and destroy with --all or --changed.
type StacksOptions struct {
	Chdir string
	// Changed keeps the stacks that changed files between Base and HEAD
	// touch, and their dependents.
	Changed bool
	Base    string
	// GitLabPipeline is the file the GitLab child pipeline of the stacks
	// is written to, from GitLabTemplate (internal/stackpipeline).
	GitLabPipeline, GitLabTemplate string
	// varFiles are the run's -var-file paths, which --changed counts as
	// files of every stack (plan and apply only).
	varFiles []string
}

// StacksResult is the result part of the envelope of `sponson stacks`.
type StacksResult struct {
	// Root is the directory searched; Base the revision compared with
	// (--changed only).
	Root string `json:"root"`
	// Top is the repository's root, Root outside a repository.
	Top  string `json:"-"`
	Base string `json:"base,omitempty"`
	// Uncommitted are the changed files (--changed) that only the working
	// tree changed: modified, staged, or not tracked and not ignored.
	Uncommitted []string            `json:"uncommitted,omitempty"`
	Stacks      []*stackgraph.Stack `json:"stacks"`
	// Layers are Stacks by depth: Layers[d] holds the stacks of depth d,
	// what one layer of a CI matrix takes (GitHub Actions:
	// fromJSON(...).result.layers[d]).
	Layers [][]*stackgraph.Stack `json:"layers"`
}

// layered fills Layers from Stacks.
func (r *StacksResult) layered() {
	r.Layers = [][]*stackgraph.Stack{}
	for _, s := range r.Stacks {
		for len(r.Layers) <= s.Depth {
			r.Layers = append(r.Layers, []*stackgraph.Stack{})
		}
		r.Layers[s.Depth] = append(r.Layers[s.Depth], s)
	}
}

var stacksFlagEnv = map[string]string{"chdir": "SPONSON_CHDIR", "base": "SPONSON_BASE"}

// NewCmdStacks builds `sponson stacks`.
func NewCmdStacks(f *Factory, out *outcome, runF func(context.Context, *StacksOptions) outcome) *cobra.Command {
	opts := &StacksOptions{}
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
		RunE: runE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return bindEnv(cmd.Flags(), stacksFlagEnv, f.Getenv)
		}, runF, runStacks),
	}
	opts.bind(cmd, "list")
	cmd.Flags().StringVar(&opts.GitLabPipeline, "gitlab-pipeline", "", "write a GitLab child pipeline of the listed stacks to `FILE`: a stage per depth, a job per stack extending "+stackpipeline.StackJob+" of --gitlab-template")
	cmd.Flags().StringVar(&opts.GitLabTemplate, "gitlab-template", "", "the GitLab CI `FILE` --gitlab-pipeline starts from: it defines the hidden job "+stackpipeline.StackJob+" (one stack's job) and no stages")
	cmd.Flags().StringVar(&opts.Chdir, "chdir", "", "the directory to look for stacks in (env SPONSON_CHDIR; default: the repository root, else the working directory)")
	return cmd
}

func (o *StacksOptions) bind(cmd *cobra.Command, verb string) {
	fs := cmd.Flags()
	fs.BoolVar(&o.Changed, "changed", false, verb+" only the stacks that changed between --base and HEAD, and the stacks that depend on them")
	fs.StringVar(&o.Base, "base", "", "the revision --changed compares HEAD with (env SPONSON_BASE; default: the pull request's target branch, else origin/HEAD, else main)")
}

func runStacks(cmd *cobra.Command, f *Factory, opts *StacksOptions) outcome {
	o := outcome{command: "stacks"}
	if opts.Base != "" && !opts.Changed {
		o.err = errcode.New(errcode.Usage, "--base is the revision --changed compares with; it needs --changed")
		return o
	}
	if (opts.GitLabPipeline == "") != (opts.GitLabTemplate == "") {
		o.err = errcode.New(errcode.Usage, "--gitlab-pipeline and --gitlab-template go together: the pipeline is written from the template").
			WithHint("Pass --gitlab-template FILE, the GitLab CI file that defines " + stackpipeline.StackJob + ", with --gitlab-pipeline FILE.")
		return o
	}
	res, warnings, err := selectStacks(cmd.Context(), f, opts)
	o.warnings = warnings
	if err != nil {
		o.err = err
		return o
	}
	o.result = res
	if opts.GitLabPipeline != "" {
		if err := writeGitLabPipeline(opts, res); err != nil {
			o.err = err
			return o
		}
	}
	if jsonMode, _ := cmd.Flags().GetBool("json"); jsonMode || wantsJSON(nil, f.Getenv) {
		return o
	}
	p := printer{w: f.ErrOut}
	for _, w := range warnings {
		p.warn(w)
	}
	writeStacks(f.Out, res)
	return o
}

// selectStacks discovers the stacks of opts.Chdir's repository and, with
// --changed, keeps the changed ones.
func selectStacks(ctx context.Context, f *Factory, opts *StacksOptions) (*StacksResult, []string, error) {
	dir := opts.Chdir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Usage, err, "--chdir %q", opts.Chdir)
	}
	git := runctx.ProcessSources(dir).Git
	top := dir
	if t, err := git("rev-parse", "--show-toplevel"); err == nil && t != "" {
		top = t
		if opts.Chdir == "" {
			dir = t
		}
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if t, err := filepath.EvalSymlinks(top); err == nil {
		top = t
	}
	// --changed lists the changes while the stacks are discovered: git
	// walks the working tree while the files are parsed (issue 50).
	listed := make(chan changes, 1)
	if opts.Changed {
		go func() {
			c := changes{base: opts.Base}
			if c.base == "" {
				c.base = defaultBase(f.Getenv, git)
			}
			c.files, c.uncommitted, c.err = changedFiles(ctx, top, c.base)
			listed <- c
		}()
	}
	set, err := stackgraph.Discover(stackgraph.Options{Root: dir, Top: top, Getenv: f.Getenv})
	if err != nil {
		return nil, nil, err
	}
	res := &StacksResult{Root: dir, Top: top, Stacks: set.Stacks}
	if opts.Changed {
		c := <-listed
		if c.err != nil {
			return nil, set.Warnings, c.err
		}
		res.Base, res.Uncommitted = c.base, c.uncommitted
		res.Stacks = set.ChangedBy(stackgraph.Changes{Files: c.files, Uncommitted: c.uncommitted, VarFiles: opts.varFiles}).Stacks
	}
	if res.Stacks == nil {
		res.Stacks = []*stackgraph.Stack{}
	}
	res.layered()
	return res, set.Warnings, nil
}

// changes are what --changed compares: the base and the files changed
// since it (changedFiles).
type changes struct {
	base               string
	files, uncommitted []string
	err                error
}

// writeGitLabPipeline writes the GitLab child pipeline of the selected
// stacks (internal/stackpipeline).
func writeGitLabPipeline(opts *StacksOptions, res *StacksResult) error {
	tpl, err := os.ReadFile(opts.GitLabTemplate)
	if err != nil {
		return errcode.Wrap(errcode.Usage, err, "--gitlab-template %q cannot be read", opts.GitLabTemplate)
	}
	why := fmt.Sprintf("all %d stacks", len(res.Stacks))
	if res.Base != "" {
		why = fmt.Sprintf("%d %s changed since %s, or depending on one that did", len(res.Stacks), plural(len(res.Stacks), "stack", "stacks"), res.Base)
	}
	out, err := stackpipeline.GitLab(tpl, res.Stacks, why)
	if err != nil {
		return err
	}
	if err := writeFile(opts.GitLabPipeline, out); err != nil {
		return errcode.Wrap(errcode.Usage, err, "writing --gitlab-pipeline %s", opts.GitLabPipeline)
	}
	return nil
}

// defaultBase is the revision --changed compares with when --base is not
// given: the pull request's target branch, else the remote's default branch.
func defaultBase(getenv func(string) string, git func(...string) (string, error)) string {
	if b := getenv("GITHUB_BASE_REF"); b != "" {
		return "origin/" + b
	}
	if sha := getenv("CI_MERGE_REQUEST_DIFF_BASE_SHA"); sha != "" {
		return sha
	}
	if b := getenv("CI_MERGE_REQUEST_TARGET_BRANCH_NAME"); b != "" {
		return "origin/" + b
	}
	if ref, err := git("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"); err == nil && ref != "" {
		return strings.TrimPrefix(ref, "refs/remotes/")
	}
	return "main"
}

// changedFiles lists the files changed between base and HEAD, relative to
// the repository root: `git diff --name-only base...HEAD`, what the branch
// changed since it left base; and those the working tree changed beside
// them (uncommitted): modified or staged (`git diff --name-only HEAD`) and
// not tracked (`git ls-files --others --exclude-standard`), as a user
// running --changed before committing expects. What the engine and sponson
// write into a stack's directory themselves (.terraform/, .sponson/, a new
// .terraform.lock.hcl) is not a change of the working tree.
func changedFiles(ctx context.Context, top, base string) (files, uncommitted []string, err error) {
	committed, stderr, err := gitFiles(ctx, top, "diff", "--name-only", "--no-renames", "-z", base+"...HEAD", "--")
	if err != nil {
		return nil, nil, errcode.New(errcode.Usage, "cannot list the files changed between %s and HEAD: %s", base, stderr).
			WithHint("Pass --base REF naming a revision this checkout has (fetch it first: a shallow CI checkout may lack it, e.g. actions/checkout with fetch-depth: 0).")
	}
	modified, stderr, err := gitFiles(ctx, top, "diff", "--name-only", "--no-renames", "-z", "HEAD", "--")
	if err != nil {
		return nil, nil, errcode.New(errcode.Usage, "cannot list the files the working tree changed: %s", stderr)
	}
	untracked, stderr, err := gitFiles(ctx, top, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, nil, errcode.New(errcode.Usage, "cannot list the files the working tree does not track: %s", stderr)
	}
	seen := map[string]bool{}
	for _, f := range committed {
		seen[f] = true
	}
	files = committed
	for i, list := range [][]string{modified, untracked} {
		for _, f := range list {
			if seen[f] || written(f, i == 1) {
				continue
			}
			seen[f] = true
			files = append(files, f)
			uncommitted = append(uncommitted, f)
		}
	}
	return files, uncommitted, nil
}

// written reports whether a file of the working tree is one the engine or
// sponson writes: under .terraform/ or .sponson/, or a lock file that is
// not tracked yet (init writes it).
func written(f string, untracked bool) bool {
	for _, e := range strings.Split(f, "/") {
		if e == ".terraform" || e == ".sponson" {
			return true
		}
	}
	return untracked && path.Base(f) == ".terraform.lock.hcl"
}

// gitFiles runs a git command that prints NUL-separated paths.
func gitFiles(ctx context.Context, top string, args ...string) ([]string, string, error) {
	out, stderr, err := gitcli.Cmd{Dir: top, Args: args, Timeout: time.Minute}.Run(ctx)
	if err != nil {
		return nil, strings.TrimSpace(stderr), err
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, "", nil
}

// writeStacks prints the stacks as a table, then why each changed one is
// listed.
func writeStacks(w io.Writer, res *StacksResult) {
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
		fmt.Fprintf(w, "\nwhy each is listed (changes since %s, and %d %s of the working tree not committed):\n", res.Base, len(res.Uncommitted), plural(len(res.Uncommitted), "file", "files"))
	} else {
		fmt.Fprintf(w, "\nwhy each is listed (changes since %s):\n", res.Base)
	}
	for _, s := range res.Stacks {
		for _, r := range s.Reasons {
			fmt.Fprintf(w, "  %s: %s\n", s.Directory, r)
		}
	}
}
