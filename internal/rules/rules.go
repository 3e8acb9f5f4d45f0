// Package rules decides where a run's rules come from: the environments, their
// protection and approvers, the identity schemes, address-owned types and
// policies that judge a run are read from the trusted revision, never from
// the change under review (docs/design.md §2.18 "Trusted rules").
//
// The trusted revision is the repository's default branch as the remote has
// it (refs/remotes/origin/<default>, or the revision SPONSON_RULES_REF names).
// A run of the default branch itself (scope main, no pull request) is that
// revision, so its checkout is trusted. Every other run reads sponson.hcl,
// and the policy files it declares, from the trusted revision with git; the
// checkout's copy, when it differs, is a proposal: shown, never used. When
// the trusted revision cannot be read, a run in CI is refused
// (RULES_UNTRUSTED): falling back to the checkout would let a pull request
// that deletes the default branch from its clone choose its own rules. A
// local run outside CI uses the checkout's rules and says so.
//
// The default branch is read as refs/remotes/origin/<default branch> (the
// CI host's name for it), else origin/HEAD, origin/main, origin/master, in a
// constant number of git processes. Each difference between the checkout's
// rules and the trusted ones (Diff) is printed as `proposed rule change:
// ...`, listed in --json (proposedRules) and in the summary under "Rule
// changes, effective when merged". The store records the commit of the rules
// that set the identity schemes and whether they were trusted
// (ownership.MayChangeSchemes decides who may move them).
package rules

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

// RefVar names the trusted revision explicitly (a branch, a remote-tracking
// ref, a commit), or Checkout: the checkout's own files are trusted, for a
// repository whose rules are the checkout's on purpose (a local run, a job
// whose checkout is the default branch by construction); the run says so.
// Only the CI configuration sets it, which a change under review does not
// run with unreviewed (the workflow of a pull request from a fork is the
// base's, and a team protects its CI files as it protects sponson.hcl).
const RefVar = "SPONSON_RULES_REF"

// Checkout is the RefVar value that trusts the checkout's files.
const Checkout = "checkout"

// Origin says where a run's rules were read from.
type Origin struct {
	// Ref is the revision the rules were read at (origin/main); "" when
	// they are the checkout's files, Checkout when RefVar said to trust
	// them.
	Ref string `json:"ref,omitempty"`
	// Commit is the commit of the trusted revision; "" when unknown (a
	// local run outside a repository, or one that used its checkout).
	Commit string `json:"commit,omitempty"`
	// Trusted is false only for a local run that could not read the trusted
	// revision and used its checkout's rules.
	Trusted bool `json:"trusted"`
	// Why says in words where the rules came from, for the run's output.
	Why string `json:"why"`
}

// Rules are the rules a run enforces and, when the checkout proposes other
// ones, the proposal.
type Rules struct {
	Declared environments.Declared
	// Files are the files of the trusted revision, rooted at the directory
	// of the declaration (the policies it names are read from here); nil
	// when nothing is declared.
	Files  fs.FS
	Origin Origin
	// Proposed is the checkout's declaration when it differs from the
	// trusted one (a pull request that edits sponson.hcl or a policy).
	Proposed *Proposal
}

// Proposal is what the checkout declares, different from the trusted rules.
type Proposal struct {
	Declared environments.Declared
	Files    fs.FS
	// Changes are the differences, in words, one per line.
	Changes []string
}

// Sources is what Load consults: the process's environment and git, run in
// the repository (gitcli in production; a fake in tests). A nil Git is no
// git.
type Sources struct {
	Getenv func(string) string
	Git    func(ctx context.Context, stdin []byte, args ...string) ([]byte, error)
}

// Load reads the rules of the run whose configuration is in dir and whose
// context is c.
func Load(ctx context.Context, dir string, c runctx.Context, src Sources) (Rules, error) {
	getenv := src.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Rules{}, errcode.Wrap(errcode.Usage, err, "cannot resolve the configuration directory %q", dir)
	}
	checkout, err := environments.Load(abs)
	if err != nil {
		return Rules{}, err
	}
	ref := strings.TrimSpace(getenv(RefVar))
	if ref == Checkout {
		return fromCheckout(checkout, Origin{Ref: Checkout, Commit: c.Commit, Trusted: true, Why: "the checkout, as " + RefVar + "=" + Checkout + " says"}), nil
	}
	if ref == "" && c.PullRequest == 0 && c.Scope == "main" {
		// The default branch's own run: its checkout is the trusted revision.
		return fromCheckout(checkout, Origin{Commit: c.Commit, Trusted: true, Why: "the checkout of the default branch"}), nil
	}
	onCI := runctx.OnCI(getenv)
	root, rel, found := repository(abs)
	if !found || src.Git == nil {
		return untrusted(checkout, onCI, "", "the configuration is not in a git repository")
	}
	refs := candidates(ref, c.DefaultBranch)
	t := tree{git: src.Git, root: root}
	at, commit, decl, err := t.declaration(ctx, refs, rel)
	if err != nil {
		return Rules{}, err
	}
	if at == "" {
		return untrusted(checkout, onCI, strings.Join(refs, ", "), fmt.Sprintf("%s cannot be read", strings.Join(refs, " nor ")))
	}
	r := Rules{Origin: Origin{Ref: at, Commit: commit, Trusted: true, Why: "the default branch (" + at + ")"}}
	if ref != "" {
		r.Origin.Why = "the revision " + RefVar + " names (" + at + ")"
	}
	if decl.path == "" {
		r.Declared = environments.Default()
	} else {
		if r.Declared, err = environments.Parse(decl.src, decl.path+" at "+at); err != nil {
			return Rules{}, err
		}
		if r.Files, err = t.files(ctx, commit, path.Dir(decl.path), policyPaths(r.Declared)); err != nil {
			return Rules{}, err
		}
	}
	checkoutRules := fromCheckout(checkout, Origin{})
	if changes := Diff(r, checkoutRules); len(changes) > 0 {
		r.Proposed = &Proposal{Declared: checkout, Files: checkoutRules.Files, Changes: changes}
	}
	return r, nil
}

// fromCheckout is the rules of the checkout's own declaration.
func fromCheckout(d environments.Declared, o Origin) Rules {
	r := Rules{Declared: d, Origin: o}
	if d.Source != "" {
		r.Files = os.DirFS(filepath.Dir(d.Source))
	}
	return r
}

// untrusted is the outcome when the trusted revision cannot be read:
// refused in CI, the checkout's rules (said to be so) outside it.
func untrusted(checkout environments.Declared, onCI bool, refs, why string) (Rules, error) {
	if onCI {
		return Rules{}, errcode.New(errcode.RulesUntrusted, "the rules of this run cannot be read from the default branch: %s, and a pull request's own sponson.hcl is never used in CI", why).
			WithHint("Fetch the default branch before sponson runs (actions/checkout with fetch-depth: 0, or `git fetch --depth=1 origin main:refs/remotes/origin/main`), or name the trusted revision with "+RefVar+".").
			With("revisions", refs)
	}
	return fromCheckout(checkout, Origin{Why: "the checkout (a local run: " + why + ")"}), nil
}

// candidates are the revisions the trusted rules may be read at, in order.
func candidates(ref, defaultBranch string) []string {
	if ref != "" {
		return []string{ref}
	}
	if defaultBranch != "" {
		return []string{"refs/remotes/origin/" + defaultBranch}
	}
	return []string{"refs/remotes/origin/HEAD", "refs/remotes/origin/main", "refs/remotes/origin/master"}
}

// repository finds the repository of dir as environments.Load does (the
// first directory upward that holds .git) and dir's path in it.
func repository(dir string) (root, rel string, found bool) {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			rel, err := filepath.Rel(d, dir)
			if err != nil {
				return "", "", false
			}
			return d, filepath.ToSlash(rel), true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", "", false
		}
		d = parent
	}
}

// policyPaths are every policy path the declaration names, each once.
func policyPaths(d environments.Declared) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range d.Environments {
		for _, p := range e.Policies {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Diff lists, in words, how the rules of b differ from those of a: the
// environments, their protection and approvers, identity schemes,
// address-owned types, policies (by their files' contents) and watch lists.
func Diff(a, b Rules) []string {
	var out []string
	envs := func(d environments.Declared) map[string]environments.Environment {
		m := map[string]environments.Environment{}
		for _, e := range d.Environments {
			m[e.Name] = e
		}
		return m
	}
	ea, eb := envs(a.Declared), envs(b.Declared)
	for _, e := range a.Declared.Environments {
		o, ok := eb[e.Name]
		if !ok {
			out = append(out, fmt.Sprintf("environment %s removed", e.Name))
			continue
		}
		if e.Protected != o.Protected {
			out = append(out, fmt.Sprintf("environment %s: protected %t → %t", e.Name, e.Protected, o.Protected))
		}
		if !reflect.DeepEqual(e.Approvers, o.Approvers) {
			out = append(out, fmt.Sprintf("environment %s: approvers %s → %s", e.Name, names(e.Approvers), names(o.Approvers)))
		}
		out = append(out, schemeChanges(e.Name, e.Identity, o.Identity)...)
		if !reflect.DeepEqual(e.AddressOwned, o.AddressOwned) {
			out = append(out, fmt.Sprintf("environment %s: address_owned %s → %s", e.Name, names(e.AddressOwned), names(o.AddressOwned)))
		}
		if !reflect.DeepEqual(e.Policies, o.Policies) {
			out = append(out, fmt.Sprintf("environment %s: policies %s → %s", e.Name, names(e.Policies), names(o.Policies)))
		}
	}
	for _, e := range b.Declared.Environments {
		if _, ok := ea[e.Name]; !ok {
			out = append(out, fmt.Sprintf("environment %s added", e.Name))
		}
	}
	for _, f := range changedFiles(a, b) {
		out = append(out, "policy file "+f+" changed")
	}
	if !reflect.DeepEqual(a.Declared.Watch, b.Declared.Watch) {
		out = append(out, "watch lists changed")
	}
	return out
}

// schemeChanges are the identity schemes of env that differ.
func schemeChanges(env string, a, b map[string][]string) []string {
	var out []string
	for _, typ := range sortedKeys(a, b) {
		if !reflect.DeepEqual(a[typ], b[typ]) {
			out = append(out, fmt.Sprintf("environment %s: identity of %s %s → %s", env, typ, names(a[typ]), names(b[typ])))
		}
	}
	return out
}

// changedFiles are the policy files, by path, whose contents differ
// between a and b (or that only one has).
func changedFiles(a, b Rules) []string {
	read := func(r Rules) map[string]string {
		m := map[string]string{}
		if r.Files == nil {
			return m
		}
		for _, p := range policyPaths(r.Declared) {
			// A path one side lacks, or cannot read, holds no file of it:
			// the other side's files then count as changed.
			_ = fs.WalkDir(r.Files, cleanRel(p), func(name string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if data, rerr := fs.ReadFile(r.Files, name); rerr == nil {
						m[name] = string(data)
					}
				}
				return nil
			})
		}
		return m
	}
	fa, fb := read(a), read(b)
	var out []string
	for _, name := range sortedKeys(fa, fb) {
		va, oka := fa[name]
		vb, okb := fb[name]
		if oka != okb || va != vb {
			out = append(out, name)
		}
	}
	return out
}

// cleanRel is a declared path as an fs.FS name.
func cleanRel(p string) string {
	p = path.Clean(filepath.ToSlash(strings.TrimSpace(p)))
	return strings.TrimPrefix(p, "./")
}

func names(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// Describe is the one line a run prints about its rules, or "" when there
// is nothing to say (the trusted rules, and the checkout proposes none).
func (r Rules) Describe() string {
	if !r.Origin.Trusted {
		return "rules: from " + r.Origin.Why + "; in CI they are read from the default branch"
	}
	if r.Origin.Ref == Checkout {
		return "rules: from " + r.Origin.Why
	}
	if r.Proposed != nil {
		return "rules: from " + r.Origin.Why + "; this change proposes other rules, effective when merged (not used by this run)"
	}
	return ""
}

// sortedKeys are the keys of a and b, each once, sorted.
func sortedKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}
