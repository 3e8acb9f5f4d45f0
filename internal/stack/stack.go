// Package stack names the stack of a run: one root module of one
// repository. Everything a store keeps is keyed by (stack, environment,
// scope), so two root modules of a monorepo, or the same directory of two
// repositories on one store, never share state, lease or ledger
// (docs/design.md, Stacks).
//
// The name is derived without configuration and agrees on every machine
// and CI host: the repository's identity (host and path, from the CI host's
// repository variables or the normalised `origin` URL) and the
// configuration directory's path in the repository, joined by "//":
//
//	github.com/acme/infra//stacks/app
//	github.com/acme/infra          (a configuration at the repository root)
//
// --stack, SPONSON_STACK and a literal `stack` attribute of the
// configuration's sponson_scope resource (read from the .tf files before the
// lease is taken, see hcl.go) override it, in that order; an attribute that
// is not a literal string is USAGE. A credential in
// the origin URL is dropped before anything else; outside a repository the
// name is local/<path>, with a warning. The provider derives it the same
// way. Parent leases and the intent lease have no stack (Key.Stack == "",
// only for _parent-* scopes). status and gc list every stack unless --stack
// names one.
package stack

import (
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// EnvVar overrides the derived name, as --stack does.
const EnvVar = "SPONSON_STACK"

// Sources is what Detect consults. A nil Getenv reads as an empty
// environment; a nil Git as no git at all.
type Sources struct {
	Getenv func(string) string
	// Git runs `git args...` in the configuration directory and returns
	// its trimmed standard output.
	Git func(args ...string) (string, error)
	// Declared reads the stack attribute declared in a directory (Resolve
	// reads the stack a reference names); nil is Declared, which parses the
	// directory's files. A caller that parsed them already answers from its
	// parse (internal/stackgraph: each file parsed once).
	Declared func(dir string) (string, error)
	// EvalSymlinks follows the symbolic links of a path; nil is
	// filepath.EvalSymlinks. A caller naming many directories answers it
	// from the paths it followed already.
	EvalSymlinks func(path string) (string, error)
}

// Result is a decided stack.
type Result struct {
	Name string
	// Source says where it came from: flag, env, hcl, github, gitlab,
	// circleci, bitbucket, origin or path.
	Source string
	// Warning is set when the name may differ on another machine (no
	// repository, no origin).
	Warning string
}

// Detect decides the stack of the configuration in dir (an absolute path):
// flag, then SPONSON_STACK, then declared (the sponson_scope attribute, ""
// if none), then the derived name.
func Detect(dir, flag, declared string, src Sources) (Result, error) {
	getenv := src.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	for _, c := range []struct{ v, source string }{{flag, "flag"}, {getenv(EnvVar), "env"}, {declared, "hcl"}} {
		if v := strings.TrimSpace(c.v); v != "" {
			if err := store.CheckStack(v); err != nil {
				return Result{}, err
			}
			return Result{Name: v, Source: c.source}, nil
		}
	}
	return derive(dir, getenv, src)
}

func derive(dir string, getenv func(string) string, src Sources) (Result, error) {
	git := src.Git
	var top string
	if git != nil {
		if out, err := git("rev-parse", "--show-toplevel"); err == nil && out != "" {
			top = out
		}
	}
	if top == "" {
		name := fromPath(dir)
		return checked(Result{Name: name, Source: "path",
			Warning: "the configuration is not in a git repository: its stack is named after its directory (" + name + "), which other machines will not share; pass --stack or set SPONSON_STACK"})
	}
	rel, err := relative(top, dir, src.EvalSymlinks)
	if err != nil {
		return Result{}, err
	}
	repo, source := ciRepository(getenv)
	var warning string
	if repo == "" && git != nil {
		if u, err := git("remote", "get-url", "origin"); err == nil && u != "" {
			repo, source = NormalizeURL(u), "origin"
		}
	}
	if repo == "" {
		repo, source = fromPath(top), "path"
		warning = "the repository has no origin remote: its stack is named after its directory (" + repo + "), which other machines will not share; pass --stack or set SPONSON_STACK"
	}
	name := repo
	if rel != "" {
		name = repo + "//" + rel
	}
	return checked(Result{Name: name, Source: source, Warning: warning})
}

func checked(r Result) (Result, error) {
	if err := store.CheckStack(r.Name); err != nil {
		return Result{}, errcode.As(err).WithHint("Name the stack with --stack NAME or SPONSON_STACK.")
	}
	return r, nil
}

// relative is dir's path in the repository rooted at top, "" for the root,
// with symbolic links resolved on both sides (macOS /tmp, CI workspaces).
func relative(top, dir string, evalSymlinks func(string) (string, error)) (string, error) {
	if evalSymlinks == nil {
		evalSymlinks = filepath.EvalSymlinks
	}
	if t, err := evalSymlinks(top); err == nil {
		top = t
	}
	if d, err := evalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || !filepath.IsLocal(rel) {
		return "", errcode.New(errcode.Usage, "the configuration %s is not inside its repository %s", dir, top)
	}
	if rel == "." {
		return "", nil
	}
	return clean(filepath.ToSlash(rel)), nil
}

// ciRepository is the repository identity from the CI host's variables:
// they name the repository whatever URL the checkout used.
func ciRepository(getenv func(string) string) (repo, source string) {
	if r := getenv("GITHUB_REPOSITORY"); r != "" {
		host := "github.com"
		if s := getenv("GITHUB_SERVER_URL"); s != "" {
			host = hostOf(s)
		}
		return join(host, r), "github"
	}
	if p := getenv("CI_PROJECT_PATH"); p != "" && getenv("GITLAB_CI") != "" {
		host := getenv("CI_SERVER_HOST")
		if host == "" {
			host = hostOf(getenv("CI_SERVER_URL"))
		}
		if host == "" {
			host = "gitlab.com"
		}
		return join(host, p), "gitlab"
	}
	if getenv("CIRCLECI") != "" {
		if u := getenv("CIRCLE_REPOSITORY_URL"); u != "" {
			return NormalizeURL(u), "circleci"
		}
		if o, r := getenv("CIRCLE_PROJECT_USERNAME"), getenv("CIRCLE_PROJECT_REPONAME"); o != "" && r != "" {
			return join("github.com", o+"/"+r), "circleci"
		}
	}
	if r := getenv("BITBUCKET_REPO_FULL_NAME"); r != "" {
		return join("bitbucket.org", r), "bitbucket"
	}
	return "", ""
}

var scpLike = regexp.MustCompile(`^(?:[^@/]+@)?([^:/]+):(.+)$`)

// NormalizeURL turns a git remote URL into host/path: no scheme, user,
// password or token, port, trailing ".git" or "/", the host in lower case.
// git@github.com:acme/infra.git, ssh://git@github.com:22/acme/infra and
// https://x-access-token:SECRET@github.com/acme/infra.git all give
// github.com/acme/infra. A local path gives local/<path>. Credentials are
// dropped before anything else, so they are never part of a name.
func NormalizeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	var host, p string
	switch {
	case strings.Contains(raw, "://"):
		u, err := url.Parse(raw)
		if err != nil {
			// Cut scheme and user by hand: never keep what url refused.
			rest := raw[strings.Index(raw, "://")+3:]
			if i := strings.LastIndex(rest, "@"); i >= 0 {
				rest = rest[i+1:]
			}
			host, p, _ = strings.Cut(rest, "/")
			host, _, _ = strings.Cut(host, ":")
		} else if u.Scheme == "file" {
			return fromPath(u.Path)
		} else {
			host, p = u.Hostname(), u.Path
		}
	case filepath.IsAbs(raw) || strings.HasPrefix(raw, "."):
		return fromPath(raw)
	default:
		m := scpLike.FindStringSubmatch(raw)
		if m == nil {
			return fromPath(raw)
		}
		host, p = m[1], m[2]
	}
	return join(strings.ToLower(host), p)
}

// join makes host/path with the path cleaned: no ".git" suffix, no empty or
// dot elements, characters a stack name cannot hold made "-".
func join(host, p string) string {
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	return clean(strings.ToLower(hostOf(host)) + "/" + p)
}

// hostOf is the host of a URL or a bare host[:port].
func hostOf(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			return u.Hostname()
		}
	}
	h, _, _ := strings.Cut(s, "/")
	h, _, _ = strings.Cut(h, ":")
	return h
}

// fromPath names a stack after a filesystem path: "local/" and the path
// without its leading "/".
func fromPath(p string) string {
	p = strings.TrimSuffix(path.Clean(filepath.ToSlash(p)), ".git")
	return clean("local/" + strings.TrimPrefix(p, "/"))
}

var notStackChar = regexp.MustCompile(`[^a-zA-Z0-9._/-]+`)

// clean makes s a valid stack name where it can: characters outside
// a-z A-Z 0-9 . _ / - become "-", and empty, "." and ".." elements and
// leading or trailing dots of elements are dropped.
func clean(s string) string {
	s = notStackChar.ReplaceAllString(s, "-")
	var parts []string
	for _, e := range strings.Split(s, "/") {
		e = strings.Trim(e, ".")
		e = strings.TrimSuffix(e, ".lock")
		for strings.Contains(e, "..") {
			e = strings.ReplaceAll(e, "..", ".")
		}
		if e != "" {
			parts = append(parts, e)
		}
	}
	return strings.Join(parts, "/")
}
