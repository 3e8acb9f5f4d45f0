package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// Policies as code (issue 46 item 5, docs/design.md §2.19), with real
// sponson and engine processes and hashicorp/local: Rego policies in
// conftest's conventions judge every plan after it is made and before
// anything is written.

// allowedDirPolicy is conftest's example of a deny over the plan JSON,
// written for local_file: every file must be written under dir.
func allowedDirPolicy(dir string) string {
	return fmt.Sprintf(`package main

import rego.v1

allowed := %q

deny contains msg if {
	rc := input.resource_changes[_]
	rc.type == "local_file"
	rc.change.actions[_] == "create"
	not startswith(rc.change.after.filename, allowed)
	msg := sprintf("%%s writes %%s, outside %%s", [rc.address, rc.change.after.filename, allowed])
}

warn contains msg if {
	rc := input.resource_changes[_]
	rc.change.actions[_] == "create"
	msg := sprintf("%%s is created in %%s/%%s", [rc.address, data.sponson.environment, data.sponson.scope])
}
`, dir+"/")
}

// noProductionDeletes, in the Rego v0 syntax of older conftest policies,
// refuses every delete in production (a replacement deletes too), as
// violation objects with msg and details, naming the owning scope from
// data.sponson.
const noProductionDeletes = `package main

violation[{"msg": msg, "details": {"address": rc.address}}] {
	data.sponson.environment == "production"
	rc := input.resource_changes[_]
	rc.change.actions[_] == "delete"
	msg := sprintf("%s would be deleted in production (owned by %s)", [rc.address, object.get(data.sponson.owners, rc.address, "nobody")])
}
`

// policyEnv is the environment of runs over hashicorp/local.
func policyEnv(t *testing.T) []string {
	t.Helper()
	mirror := realproviders.Install(t)
	cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"TF_CLI_CONFIG_FILE=" + cfg}
}

// policyWorkdir is testdata/policy with sponson.hcl and the policy files.
func policyWorkdir(t *testing.T, h *harness, decl string, policies map[string]string) string {
	t.Helper()
	dir := h.workdir("testdata/policy")
	putFile(t, filepath.Join(dir, "sponson.hcl"), decl)
	for name, src := range policies {
		putFile(t, filepath.Join(dir, name), src)
	}
	return dir
}

func putFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// policyResult is what the tests read of a run's --json document.
type policyResult struct {
	Result struct {
		Status   string            `json:"status"`
		Policies *receipt.Policies `json:"policies"`
		Changes  []struct {
			Address string `json:"address"`
		} `json:"changes"`
	} `json:"result"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodePolicy(t *testing.T, r result) policyResult {
	t.Helper()
	var p policyResult
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("stdout is not the --json document: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return p
}

// mustDeny checks that a run failed with POLICY_DENIED naming want.
func mustDeny(t *testing.T, what string, r result, want string) policyResult {
	t.Helper()
	p := decodePolicy(t, r)
	if r.exit != 1 || p.Error.Code != "POLICY_DENIED" || !strings.Contains(p.Error.Message, want) {
		t.Fatalf("%s: exit %d %s %q, want 1 POLICY_DENIED naming %q\nstdout:\n%s\nstderr:\n%s", what, r.exit, p.Error.Code, p.Error.Message, want, r.stdout, r.stderr)
	}
	return p
}

// scopeReceipt is the latest receipt of a scope, nil when it has none.
func scopeReceipt(t *testing.T, dir, env, scope string) *receipt.Receipt {
	t.Helper()
	s, err := filestore.Open(filepath.Join(dir, ".sponson"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := store.Latest(t.Context(), s, store.Key{Stack: e2eStack, Environment: env, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestE2EPolicyAllowedDirectory: a policy that keeps local_file inside one
// directory refuses the plan and the apply of a file outside it, before
// anything is written (no file, no receipt); a file inside it applies,
// with the policy's warning in the receipt, --json and the summary.
func TestE2EPolicyAllowedDirectory(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env := policyEnv(t)
	allowed, outside := t.TempDir(), t.TempDir()
	dir := policyWorkdir(t, h, "policies = [\"policy\"]\n\nenvironment \"preview\" {}\n",
		map[string]string{"policy/files.rego": allowedDirPolicy(allowed)})
	bad := filepath.Join(outside, "f.txt")

	// The plan is shown and fails like a policy check.
	r := h.run(dir, env, "plan", "--json", "--env", "preview", "--scope", "pr-1", "-var", "file="+bad)
	p := mustDeny(t, "the plan of a file outside", r, "local_file.f writes "+bad+", outside "+allowed+"/ (deny, policy/files.rego)")
	if p.Result.Status != "changes" || len(p.Result.Changes) == 0 || p.Result.Policies == nil || len(p.Result.Policies.Deny) != 1 {
		t.Errorf("the refused plan's result: %+v", p.Result)
	}

	summaryFile := filepath.Join(t.TempDir(), "summary.md")
	r = h.run(dir, append(env, "GITHUB_STEP_SUMMARY="+summaryFile), "apply", "--json", "--env", "preview", "--scope", "pr-1", "-var", "file="+bad)
	mustDeny(t, "the apply of a file outside", r, "outside "+allowed)
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("the refused apply wrote %s (%v)", bad, err)
	}
	if rec := scopeReceipt(t, dir, "preview", "pr-1"); rec != nil {
		t.Errorf("the refused apply wrote a receipt: %+v", rec)
	}

	good := filepath.Join(allowed, "f.txt")
	r = h.run(dir, append(env, "GITHUB_STEP_SUMMARY="+summaryFile), "apply", "--json", "--env", "preview", "--scope", "pr-1", "-var", "file="+good)
	if r.exit != 0 {
		t.Fatalf("the apply of a file inside: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if _, err := os.Stat(good); err != nil {
		t.Errorf("the apply did not write %s: %v", good, err)
	}
	wantWarn := "local_file.f is created in preview/pr-1"
	rec := scopeReceipt(t, dir, "preview", "pr-1")
	if rec == nil || rec.Status != receipt.StatusApplied || rec.Policies == nil || len(rec.Policies.Deny) != 0 || !hasMsg(rec.Policies.Warn, wantWarn) {
		t.Errorf("the receipt's verdict: %+v", rec)
	}
	if p := decodePolicy(t, r); p.Result.Policies == nil || !hasMsg(p.Result.Policies.Warn, wantWarn) {
		t.Errorf("--json has no warning: %s", r.stdout)
	}
	if !strings.Contains(r.stderr, "policy warning: "+wantWarn) {
		t.Errorf("the log has no warning:\n%s", r.stderr)
	}
	if md := string(readFile(t, summaryFile)); !strings.Contains(md, "Policies: passed with warnings") || !strings.Contains(md, "Policies: denied") {
		t.Errorf("the summaries lack the verdicts:\n%s", md)
	}

	// `sponson policy test` gives the same verdict from the saved plan.
	planFile := filepath.Join(t.TempDir(), "plan.bin")
	h.run(dir, env, "plan", "--json", "--env", "preview", "--scope", "pr-2", "-var", "file="+bad, "-out", planFile)
	r = h.run(dir, env, "policy", "test", "--json", "--policy", "policy", planFile)
	mustDeny(t, "policy test of the saved plan", r, "outside "+allowed)
}

// TestE2EPolicyNoDeletesInProduction: a policy that refuses deletes in
// production refuses an approved destroy and a replacement, and the
// object stays where it was; the receipt stays the apply's.
func TestE2EPolicyNoDeletesInProduction(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env := policyEnv(t)
	out := t.TempDir()
	dir := policyWorkdir(t, h, "policies = [\"policy\"]\n\nenvironment \"production\" {}\n",
		map[string]string{"policy/deletes.rego": noProductionDeletes})
	first, second := filepath.Join(out, "first.txt"), filepath.Join(out, "second.txt")
	args := func(cmd, file string) []string {
		return []string{cmd, "--json", "--env", "production", "--scope", "main", "--approved-by", "alice", "-var", "file=" + file}
	}
	if r := h.run(dir, env, args("apply", first)...); r.exit != 0 {
		t.Fatalf("the first apply: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	applied := scopeReceipt(t, dir, "production", "main")

	// filename forces a replacement: a delete of the first file.
	mustDeny(t, "the replacement", h.run(dir, env, args("apply", second)...), "local_file.f would be deleted in production (owned by main)")
	mustDeny(t, "the approved destroy", h.run(dir, env, args("destroy", first)...), "local_file.f would be deleted in production")
	if _, err := os.Stat(first); err != nil {
		t.Errorf("the first file is gone: %v", err)
	}
	if _, err := os.Stat(second); !os.IsNotExist(err) {
		t.Errorf("the refused replacement wrote %s (%v)", second, err)
	}
	if rec := scopeReceipt(t, dir, "production", "main"); rec == nil || rec.RunID != applied.RunID {
		t.Errorf("a refused run wrote a receipt: %+v", rec)
	}
	if st := stateResources(t, dir, "production", "main"); st["local_file.f"] == nil {
		t.Errorf("the state lost local_file.f: %v", st)
	}
}

func hasMsg(ms []receipt.PolicyMessage, want string) bool {
	for _, m := range ms {
		if strings.Contains(m.Msg, want) {
			return true
		}
	}
	return false
}

// TestE2EPolicyLoosenedByPullRequest: main's policy keeps files in one
// directory; a pull request that loosens it (its own copy allows any
// directory) is still judged by main's and refused, nothing written, and
// its review shows the proposed policy's verdict beside it.
func TestE2EPolicyLoosenedByPullRequest(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env := policyEnv(t)
	allowed, outside := t.TempDir(), t.TempDir()
	base := t.TempDir()
	origin, storeDir := filepath.Join(base, "origin.git"), filepath.Join(base, "store")
	gitIn(t, base, "init", "--quiet", "--bare", "-b", "main", origin)
	seed := policyWorkdir(t, h, "policies = [\"policy\"]\n\nenvironment \"preview\" {}\n",
		map[string]string{"policy/files.rego": allowedDirPolicy(allowed), ".gitignore": ".terraform/\n.terraform.lock.hcl\n"})
	gitIn(t, seed, "init", "--quiet", "-b", "main")
	gitIn(t, seed, "add", "-A")
	gitIn(t, seed, "commit", "--quiet", "-m", "main keeps files in one directory")
	gitIn(t, seed, "remote", "add", "origin", origin)
	gitIn(t, seed, "push", "--quiet", "origin", "main")

	pr := filepath.Join(t.TempDir(), "checkout")
	gitIn(t, filepath.Dir(pr), "clone", "--quiet", origin, pr)
	gitIn(t, pr, "checkout", "--quiet", "-b", "loosen")
	putFile(t, filepath.Join(pr, "policy", "files.rego"), allowedDirPolicy(""))
	gitIn(t, pr, "commit", "--quiet", "-am", "allow every directory")

	bad := filepath.Join(outside, "f.txt")
	r := h.run(pr, env, "apply", "--json", "--store", "file://"+storeDir, "--pr", "5", "-var", "file="+bad)
	p := mustDeny(t, "the pull request that loosens the policy", r, "outside "+allowed)
	if pol := p.Result.Policies; pol == nil || pol.Proposed == nil || len(pol.Proposed.Deny) != 0 || len(pol.Deny) != 1 {
		t.Errorf("the verdicts in --json: %+v", pol)
	}
	if !strings.Contains(r.stderr, "the change's proposed policies (effective when merged, not judging this run) would deny 0") {
		t.Errorf("the log does not show the proposed verdict:\n%s", r.stderr)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("the refused apply wrote %s (%v)", bad, err)
	}
	s, err := filestore.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec, err := store.Latest(t.Context(), s, store.Key{Stack: e2eStack, Environment: "preview", Scope: "pr-5"}); err != nil || rec != nil {
		t.Errorf("the refused apply wrote a receipt: %+v (%v)", rec, err)
	}
}
