// Package runctx decides the coordinates of a run: its environment and its
// scope (pr-<n>, main, branch-<name>), with the branch, pull request and
// commit they came from. The wrapper and the provider share this one package;
// under the wrapper the provider does not detect anything itself but reads the
// context the wrapper decided from EnvVar, so both always agree.
//
// Each field is asked of the flags, then the SPONSON_CTX_* variables, then the
// CI host's own variables (and, on GitHub, the event payload; fixtures in the
// hosts' own shapes under testdata/), then local git; the first answer wins
// (docs/design.md §2.13). A pull request from a fork is marked Fork; a merge
// queue's run is PlanOnly; Checkout asks the GitHub API for the head of a
// comment-triggered run's pull request, which the payload does not name, and
// warns when HEAD is another commit. issue_comment on a pull request is
// pr-<issue.number>; a pull_request_target run records the commit its
// checkout holds, never the pull request's head.
package runctx

// EnvVar carries the context the wrapper decided, as JSON, into the
// environment of the engine and so of the provider.
const EnvVar = "SPONSON_RUN_CONTEXT"

// DefaultEnvironment is used when no environment is given. The environment
// is never inferred from a branch (production must be asked for by name).
const DefaultEnvironment = "preview"

// Context is the decided coordinates of a run.
type Context struct {
	// Stack is the root module of the run (internal/stack), decided by
	// the wrapper; Detect leaves it empty.
	Stack         string `json:"stack,omitempty"`
	Environment   string `json:"environment"`
	Scope         string `json:"scope"`
	Branch        string `json:"branch,omitempty"`
	PullRequest   int    `json:"pullRequest,omitempty"` // 0: no pull request
	Commit        string `json:"commit,omitempty"`
	DefaultBranch string `json:"defaultBranch,omitempty"`
	// Predecessor is the scope this one inherits from: branch-<head> for a
	// pr-<n> scope whose head branch is known, empty otherwise.
	Predecessor string `json:"predecessor,omitempty"`
	// Tag is the tag a CI host ran for (a tag push, release or tag
	// pipeline). A tag gives no scope of its own: see Detect.
	Tag string `json:"tag,omitempty"`
	// Fork is set when the pull request's head branch lives in another
	// repository than its base (a fork). Such a pull request never inherits
	// from the base repository's branch of the same name.
	Fork bool `json:"fork,omitempty"`
	// PlanOnly, when set, says why this context may only be planned: a merge
	// queue run, whose merge has not happened yet. apply and destroy refuse
	// it with CTX_NULL.
	PlanOnly string `json:"planOnly,omitempty"`
	// Source says where the scope came from: flags, env, github, gitlab,
	// circleci, bitbucket or git.
	Source string `json:"source,omitempty"`
}

// Flags are the explicit answers of the command line; empty (or blank)
// means unset, so the next source is asked.
type Flags struct {
	Environment string
	Scope       string
	Branch      string
	PullRequest string // a positive integer; "" unset
	Commit      string
}

// Sources is what Detect may consult besides the flags. Tests build it from
// a map; the CLI from the process (ProcessSources). A nil Getenv reads as an
// empty environment and a nil ReadFile as an unreadable file, so a partial
// Sources is safe.
type Sources struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error) // for GITHUB_EVENT_PATH
	// Git runs `git args...` in the configuration directory and returns its
	// trimmed standard output; nil means no local git.
	Git func(args ...string) (string, error)
}
