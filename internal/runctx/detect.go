package runctx

import (
	"strconv"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Variables that override detection, for CI hosts Sponson does not know and
// for scripts. They come right after the flags.
const (
	EnvEnvironment = "SPONSON_CTX_ENV"
	EnvScope       = "SPONSON_CTX_SCOPE"
	EnvBranch      = "SPONSON_CTX_BRANCH"
	EnvCommit      = "SPONSON_CTX_SHA"
	EnvPullRequest = "SPONSON_CTX_PR"
)

// Values of Context.Source: the source that decided the scope.
const (
	SourceFlags     = "flags"
	SourceEnv       = "env"
	SourceGitHub    = "github"
	SourceGitLab    = "gitlab"
	SourceCircleCI  = "circleci"
	SourceBitbucket = "bitbucket"
	SourceGit       = "git"
)

// Detect decides the context of a run. Each field is asked of the flags,
// then the SPONSON_CTX_* variables, then the CI host, then local git, and
// the first source that answers wins (blank answers are no answer), so an
// explicit answer always beats a guess and a CI host beats whatever the
// checkout happens to look like.
//
// The environment comes only from --env or SPONSON_CTX_ENV and defaults to
// DefaultEnvironment: production must be asked for by name, never inferred
// from a branch. The scope is --scope or SPONSON_CTX_SCOPE if given, else
// ScopeFor(branch, pull request, default branch). On a known CI host a
// missing pull request is final ("no pull request"); local git never answers
// one, as Sponson does not call gh or the network.
//
// A value is checked only when it is the answer that is used: an invalid
// SPONSON_CTX_PR under a valid --pr is not an error. Errors: CTX_NULL when
// neither a scope, a branch nor a pull request can be found, or a pull
// request value is not a positive integer; USAGE when the environment or the
// scope is not a valid name (ValidName).
func Detect(f Flags, src Sources) (Context, error) {
	d := newDetection(f, src)
	env, err := d.environment()
	if err != nil {
		return Context{}, err
	}
	c := Context{Environment: env, Tag: d.host.tag}
	var branchSource string
	c.Branch, branchSource = d.branch(c.Tag)
	c.Commit = commitOf(d.layers, d.git, d.host)
	c.DefaultBranch = d.defaultBranch()
	var prSource string
	if c.PullRequest, c.Fork, prSource, err = d.pullRequest(); err != nil {
		return Context{}, err
	}
	if err := d.scope(&c, branchSource, prSource); err != nil {
		return Context{}, err
	}
	c.Predecessor = predecessor(c)
	return c, nil
}

// detection is the sources one Detect call asks, in order: the layers that
// answer field by field, the CI host (also a layer when onHost) for what
// only a host knows, and local git as the last resort.
type detection struct {
	layers []layer
	host   layer
	onHost bool
	git    *localGit
}

// newDetection orders the sources: flags, then SPONSON_CTX_*, then the CI
// host if one is detected. A missing Getenv reads as an empty environment.
func newDetection(f Flags, src Sources) detection {
	getenv := src.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	d := detection{layers: []layer{flagLayer(f), envLayer(getenv)}, git: &localGit{run: src.Git}}
	d.host, d.onHost = detectHost(getenv, src.ReadFile)
	if d.onHost {
		d.layers = append(d.layers, d.host)
	}
	return d
}

// environment is asked only of the flags and SPONSON_CTX_ENV (a host layer
// has none), so production is never inferred from a branch.
func (d detection) environment() (string, error) {
	env, _ := first(d.layers, func(l layer) string { return l.environment })
	if env == "" {
		env = DefaultEnvironment
	}
	if err := ValidName("environment", env); err != nil {
		return "", err
	}
	return env, nil
}

// branch is the first layer's branch, else the checkout's. A host that ran
// for a tag has said there is no branch: a checkout that happens to be on
// one must not turn a release into a branch scope.
func (d detection) branch(tag string) (branch, source string) {
	branch, source = first(d.layers, func(l layer) string { return l.branch })
	if branch != "" || tag != "" {
		return branch, source
	}
	if branch = d.git.branch(); branch != "" {
		return branch, SourceGit
	}
	return "", source
}

// defaultBranch is the first layer's default branch, else the checkout's.
func (d detection) defaultBranch() string {
	if b, _ := first(d.layers, func(l layer) string { return l.defaultBranch }); b != "" {
		return b
	}
	return d.git.defaultBranch()
}

// pullRequest is the first layer that knows the pull request (a CI host's
// "no pull request" included), whether it is a fork's, and the name of that
// layer. A layer holding a value that is not a pull request number stops
// the search with its error, but only when no earlier layer knew: a value
// is checked only when it is the answer that is used.
func (d detection) pullRequest() (n int, fork bool, source string, err error) {
	for _, l := range d.layers {
		if l.pr.err != nil {
			return 0, false, "", l.pr.err
		}
		if l.pr.known {
			return l.pr.n, l.fork && l.pr.n > 0, l.name, nil
		}
	}
	return 0, false, "", nil
}

// scope sets c's scope and its source: a named scope if a layer gives one,
// else the one derived from the pull request or branch. A run for a tag
// with neither, or a run where nothing answers, is CTX_NULL.
func (d detection) scope(c *Context, branchSource, prSource string) error {
	scope, scopeSource := first(d.layers, func(l layer) string { return l.scope })
	switch {
	case scope != "":
		if err := namedScope(scope); err != nil {
			return err
		}
		c.Scope, c.Source = scope, scopeSource
		return nil
	case c.PullRequest > 0 || c.Branch != "":
		return d.derivedScope(c, branchSource, prSource)
	case c.Tag != "":
		return tagError(d.host.name, c.Tag)
	default:
		return nullError(d.onHost, d.host.name, d.git)
	}
}

// namedScope checks a scope a user named. Names starting with _ hold the
// leases of shared parent objects, so no run may take one as its scope.
func namedScope(scope string) error {
	if err := ValidName("scope", scope); err != nil {
		return err
	}
	if strings.HasPrefix(scope, "_") {
		return errcode.New(errcode.Usage, "scope %q is reserved: names starting with _ hold the leases of shared parent objects", scope).
			WithHint("Use pr-<n>, main or branch-<name>, or another name that starts with a letter or digit.")
	}
	return nil
}

// derivedScope sets c's scope from its pull request or branch (ScopeFor).
// A derived name can be too long where the branch is, so the hint names the
// branch and the way to choose another scope. A scope derived from a host's
// own branch (not a pull request) takes the host's plan-only reason, as
// the host knows the run cannot apply.
func (d detection) derivedScope(c *Context, branchSource, prSource string) error {
	c.Scope = ScopeFor(c.Branch, c.PullRequest, c.DefaultBranch)
	c.Source = branchSource
	if c.PullRequest > 0 {
		c.Source = prSource
	}
	if err := ValidName("scope", c.Scope); err != nil {
		return errcode.As(err).WithHint("The scope was derived from the branch " + strconv.Quote(c.Branch) +
			"; pass --scope NAME or set " + EnvScope + " to choose a shorter one.")
	}
	if d.onHost && c.PullRequest == 0 && branchSource == d.host.name {
		c.PlanOnly = d.host.planOnly
	}
	return nil
}

// commitOf is the first commit a layer answers, else the checkout's, else
// the host's commit for events whose checkout says what runs
// (layer.commitAfterGit).
func commitOf(layers []layer, git *localGit, host layer) string {
	if c, _ := first(layers, func(l layer) string { return l.commit }); c != "" {
		return c
	}
	if c := git.commit(); c != "" {
		return c
	}
	return host.commitAfterGit
}

// predecessor is the scope a pr-<n> scope inherits from: its head branch's
// scope (DESIGN §2 "Succession"). A pull request whose head is main, master
// or the default branch has none: inheriting main would hand the main
// scope's resources to a pull request whose destroy would then delete them.
// An invalid name is dropped rather than an error, since no scope of that
// name can exist to inherit from.
//
// A pull request from a fork has none either: its head branch is in another
// repository, and the base repository's branch of the same name is someone
// else's work.
func predecessor(c Context) string {
	if c.PullRequest <= 0 || c.Branch == "" || c.Scope != ScopeFor("", c.PullRequest, "") || c.Fork {
		return ""
	}
	if IsDefaultBranch(c.Branch, "") || IsDefaultBranch(c.Branch, c.DefaultBranch) {
		return ""
	}
	p := ScopeFor(c.Branch, 0, c.DefaultBranch)
	if !strings.HasPrefix(p, "branch-") || ValidName("scope", p) != nil {
		return ""
	}
	return p
}

// tagError refuses a run for a tag that names no scope. The tag rule
// (docs/design.md §2.13): a tag names a commit, not a line of
// work, so no scope is derived from it. A scope per tag would be a new
// environment per release that nothing ever destroys (gc would see a branch
// that does not exist), and guessing the branch the tag was cut from is
// ambiguous. A release job says where it deploys: --scope main (typically
// with --env production), or --branch, or SPONSON_CTX_SCOPE.
func tagError(hostName, tag string) error {
	return errcode.New(errcode.CtxNull,
		"cannot decide the scope: the %s CI host ran for tag %q, and a tag names a commit, not a scope", hostName, tag).
		WithHint("Say where a release deploys: pass --scope NAME (for example --scope main --env production) or set "+EnvScope+".").
		With("tag", tag)
}

// nullError says what was looked at, so that a user can tell which source
// they expected to answer and why it did not.
func nullError(onHost bool, hostName string, git *localGit) error {
	hostNote := "no CI host detected"
	if onHost {
		hostNote = "the " + hostName + " CI host gave no branch or pull request"
	}
	return errcode.New(errcode.CtxNull,
		"cannot decide the scope: no scope, branch or pull request from the flags (--scope, --branch, --pr), %s, %s or %s; %s; local git: %s",
		EnvScope, EnvBranch, EnvPullRequest, hostNote, git.why()).
		WithHint("Pass --scope NAME, --branch NAME or --pr N, or set " + EnvBranch + " (or " + EnvScope + ", " + EnvPullRequest + ").")
}

// layer is what one source answers; a blank field is no answer.
type layer struct {
	name          string // a Source* value
	environment   string
	scope         string
	branch        string
	commit        string
	defaultBranch string
	pr            prAnswer
	// Only CI hosts answer these.
	tag      string // the run is for this tag, and so has no branch
	fork     bool   // the pull request's head is in another repository
	planOnly string // why a scope derived from this host's branch is plan only
	// commitAfterGit is the host's commit when local git has none: for
	// events whose checkout, not the event, says what runs.
	commitAfterGit string
}

// prAnswer distinguishes "no answer, ask the next source" from "there is no
// pull request", which a CI host knows and which must stop the search.
type prAnswer struct {
	n     int   // > 0: the pull request
	known bool  // n is the answer, "no pull request" when 0
	err   error // the source holds a value that is not a pull request number
}

// first returns the first non-blank answer and the name of its source.
func first(layers []layer, field func(layer) string) (string, string) {
	for _, l := range layers {
		if v := field(l); v != "" {
			return v, l.name
		}
	}
	return "", ""
}

func flagLayer(f Flags) layer {
	return layer{
		name:        SourceFlags,
		environment: strings.TrimSpace(f.Environment),
		scope:       strings.TrimSpace(f.Scope),
		branch:      strings.TrimSpace(f.Branch),
		commit:      strings.TrimSpace(f.Commit),
		pr:          explicitPR("--pr", f.PullRequest),
	}
}

func envLayer(getenv func(string) string) layer {
	return layer{
		name:        SourceEnv,
		environment: strings.TrimSpace(getenv(EnvEnvironment)),
		scope:       strings.TrimSpace(getenv(EnvScope)),
		branch:      strings.TrimSpace(getenv(EnvBranch)),
		commit:      strings.TrimSpace(getenv(EnvCommit)),
		pr:          explicitPR(EnvPullRequest, getenv(EnvPullRequest)),
	}
}

// explicitPR reads a pull request a user gave; blank is no answer (so
// SPONSON_CTX_PR="" defers to the CI host rather than forcing "no PR").
func explicitPR(name, raw string) prAnswer {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return prAnswer{}
	}
	n, err := parsePR(name, raw)
	if err != nil {
		return prAnswer{err: err}
	}
	return prAnswer{n: n, known: true}
}

// parsePR accepts only a positive decimal integer: no sign, no fraction, no
// overflow. Anything else is an error rather than "no pull request", because
// guessing would put the run in the wrong scope and so the wrong state.
func parsePR(name, raw string) (int, error) {
	ok := raw != ""
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			ok = false
			break
		}
	}
	if ok {
		if n, err := strconv.Atoi(raw); err == nil && n > 0 {
			return n, nil
		}
	}
	return 0, errcode.New(errcode.CtxNull, "%s is %q, which is not a pull request number (a positive integer)", name, raw).
		WithHint("Give the pull request as a positive integer (--pr 42 or " + EnvPullRequest + "=42), which also overrides the CI host's value.")
}
