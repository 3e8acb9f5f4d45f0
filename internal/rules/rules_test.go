package rules

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

const mainRules = `
identity = { local_file = ["filename"] }
policies = ["policy"]

environment "preview" {}

environment "production" {
  protected = true
  approvers = ["alice"]
}
`

const mainPolicy = "package main\n\ndeny contains msg if { false; msg := \"never\" }\n"

// run runs a command in dir and fails the test when it fails.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pullRequest makes a remote whose main declares mainRules and mainPolicy,
// and a clone of it on branch feature where edit changed the files; it
// returns the clone and main's commit.
func pullRequest(t *testing.T, edit func(clone string)) (clone, mainCommit string) {
	t.Helper()
	base := t.TempDir()
	origin := filepath.Join(base, "origin")
	run(t, base, "git", "init", "-q", "-b", "main", origin)
	write(t, filepath.Join(origin, "sponson.hcl"), mainRules)
	write(t, filepath.Join(origin, "policy", "deny.rego"), mainPolicy)
	write(t, filepath.Join(origin, "stacks", "app", "main.tf"), "")
	run(t, origin, "git", "add", "-A")
	run(t, origin, "git", "commit", "-q", "-m", "rules")
	mainCommit = run(t, origin, "git", "rev-parse", "HEAD")
	clone = filepath.Join(base, "clone")
	run(t, base, "git", "clone", "-q", origin, clone)
	run(t, clone, "git", "checkout", "-q", "-b", "feature")
	if edit != nil {
		edit(clone)
		run(t, clone, "git", "commit", "-q", "-am", "edit")
	}
	return clone, mainCommit
}

func prContext() runctx.Context {
	return runctx.Context{Environment: "preview", Scope: "pr-3", PullRequest: 3, Branch: "feature", DefaultBranch: "main"}
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// A pull request that drops the identity line and loosens production is
// judged by main's rules, and shown its own as a proposal.
func TestPullRequestIsJudgedByTheDefaultBranch(t *testing.T) {
	t.Parallel()
	clone, mainCommit := pullRequest(t, func(clone string) {
		src := strings.Replace(mainRules, "identity = { local_file = [\"filename\"] }\n", "", 1)
		src = strings.Replace(src, `approvers = ["alice"]`, `approvers = ["alice", "mallory"]`, 1)
		write(t, filepath.Join(clone, "sponson.hcl"), src)
		write(t, filepath.Join(clone, "policy", "deny.rego"), "package main\n")
	})
	r, err := Load(context.Background(), filepath.Join(clone, "stacks", "app"), prContext(), Sources{Getenv: env(map[string]string{"CI": "true"}), Git: GitIn(clone)})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Origin.Trusted || r.Origin.Ref != "refs/remotes/origin/main" || r.Origin.Commit != mainCommit {
		t.Errorf("Origin = %+v, want trusted refs/remotes/origin/main at %s", r.Origin, mainCommit)
	}
	pre, err := r.Declared.Lookup("preview")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"local_file": {"filename"}}, pre.Identity); diff != "" {
		t.Errorf("trusted identity (-want +got):\n%s", diff)
	}
	prod, _ := r.Declared.Lookup("production")
	if diff := cmp.Diff([]string{"alice"}, prod.Approvers); diff != "" {
		t.Errorf("trusted approvers (-want +got):\n%s", diff)
	}
	got, err := fs.ReadFile(r.Files, "policy/deny.rego")
	if err != nil || string(got) != mainPolicy {
		t.Errorf("trusted policy = %q, %v; want main's", got, err)
	}
	if r.Proposed == nil {
		t.Fatal("no proposal: the change's own rules must be shown")
	}
	want := []string{
		"environment preview: identity of local_file [filename] → (none)",
		"environment production: approvers [alice] → [alice, mallory]",
		"environment production: identity of local_file [filename] → (none)",
		"policy file policy/deny.rego changed",
	}
	if diff := cmp.Diff(want, r.Proposed.Changes); diff != "" {
		t.Errorf("proposed changes (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.Describe(), "effective when merged") {
		t.Errorf("Describe() = %q", r.Describe())
	}
}

// Deleting sponson.hcl in the change does not remove the rules.
func TestDeletedDeclarationStillJudges(t *testing.T) {
	t.Parallel()
	clone, _ := pullRequest(t, func(clone string) {
		run(t, clone, "git", "rm", "-q", "sponson.hcl")
	})
	r, err := Load(context.Background(), clone, prContext(), Sources{Git: GitIn(clone)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Declared.Source == "" {
		t.Fatal("the trusted declaration was not read")
	}
	if r.Proposed == nil || !strings.Contains(strings.Join(r.Proposed.Changes, "\n"), "identity of local_file [filename] → (none)") {
		t.Errorf("proposal = %+v", r.Proposed)
	}
}

// The default branch's own run trusts its checkout, and asks git nothing.
func TestDefaultBranchRunTrustsItsCheckout(t *testing.T) {
	t.Parallel()
	clone, _ := pullRequest(t, nil)
	write(t, filepath.Join(clone, "sponson.hcl"), "environment \"preview\" {}\nenvironment \"staging\" {}\n")
	c := runctx.Context{Environment: "staging", Scope: "main", Branch: "main", DefaultBranch: "main", Commit: "abc"}
	noGit := func(context.Context, []byte, ...string) ([]byte, error) {
		t.Error("git was started for a run of the default branch")
		return nil, nil
	}
	r, err := Load(context.Background(), clone, c, Sources{Git: noGit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Declared.Lookup("staging"); err != nil || !r.Origin.Trusted || r.Origin.Commit != "abc" {
		t.Errorf("Load = %+v, %v; want the checkout's rules, trusted", r.Origin, err)
	}
}

// Without the default branch in the clone, CI is refused and a local run
// uses its checkout, saying so.
func TestUnreadableTrustedRules(t *testing.T) {
	t.Parallel()
	clone, _ := pullRequest(t, nil)
	run(t, clone, "git", "update-ref", "-d", "refs/remotes/origin/main")
	src := Sources{Getenv: env(map[string]string{"GITHUB_ACTIONS": "true"}), Git: GitIn(clone)}
	_, err := Load(context.Background(), clone, prContext(), src)
	if !errcode.Is(err, errcode.RulesUntrusted) || !strings.Contains(errcode.As(err).Hint, "fetch") {
		t.Fatalf("in CI: err = %v, want RULES_UNTRUSTED with a hint to fetch", err)
	}
	r, err := Load(context.Background(), clone, prContext(), Sources{Git: GitIn(clone)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Origin.Trusted || !strings.Contains(r.Describe(), "a local run") {
		t.Errorf("local run: Origin = %+v, Describe = %q", r.Origin, r.Describe())
	}
	// SPONSON_RULES_REF=checkout trusts the checkout, outside a repository too.
	r, err = Load(context.Background(), t.TempDir(), prContext(), Sources{Getenv: env(map[string]string{RefVar: Checkout, "CI": "true"}), Git: GitIn(clone)})
	if err != nil || !r.Origin.Trusted || !strings.Contains(r.Origin.Why, RefVar+"="+Checkout) {
		t.Errorf("%s=%s: Origin = %+v, %v", RefVar, Checkout, r.Origin, err)
	}
	// SPONSON_RULES_REF names another revision.
	run(t, clone, "git", "branch", "trusted", "main")
	r, err = Load(context.Background(), clone, prContext(), Sources{Getenv: env(map[string]string{RefVar: "trusted", "CI": "true"}), Git: GitIn(clone)})
	if err != nil || r.Origin.Ref != "trusted" || !r.Origin.Trusted {
		t.Errorf("%s=trusted: Origin = %+v, %v", RefVar, r.Origin, err)
	}
}

// Outside a repository there is no trusted revision.
func TestOutsideARepository(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Load(context.Background(), dir, prContext(), Sources{Getenv: env(map[string]string{"CI": "true"}), Git: GitIn(dir)})
	if !errcode.Is(err, errcode.RulesUntrusted) {
		t.Fatalf("in CI: err = %v, want RULES_UNTRUSTED", err)
	}
	r, err := Load(context.Background(), dir, prContext(), Sources{Git: GitIn(dir)})
	if err != nil || r.Origin.Trusted || r.Declared.Source != "" {
		t.Errorf("local: %+v, %v; want the defaults, untrusted", r, err)
	}
}
