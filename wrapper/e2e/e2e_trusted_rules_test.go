package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// The trusted-rules attacks of issue 46 (docs/design.md §2.18), with real
// sponson and engine processes, hashicorp/local, a real git remote and one
// file store shared by every checkout: the rules that judge a pull request
// are its default branch's, never its own copy of sponson.hcl.

// rulesFromCheckout is the environment entry of the tests that stand for a
// CI job in a directory without the default branch (a copy of a
// configuration, a repository without a remote) whose subject is not the
// rules: it trusts the checkout's, as a job may say on purpose (§2.18).
const rulesFromCheckout = "SPONSON_RULES_REF=checkout"

const trustedDeclaration = "identity = { local_file = [\"filename\"] }\n\nenvironment \"preview\" {}\n"

// rulesRepo is a bare remote whose main holds testdata/trustedrules and
// trustedDeclaration, the shared store, and the environment of runs over
// hashicorp/local.
type rulesRepo struct {
	t      *testing.T
	h      *harness
	origin string
	store  string
	env    []string
}

func newRulesRepo(t *testing.T, h *harness) *rulesRepo {
	t.Helper()
	mirror := realproviders.Install(t)
	cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	r := &rulesRepo{t: t, h: h, origin: filepath.Join(base, "origin.git"), store: filepath.Join(base, "store"),
		env: []string{"TF_CLI_CONFIG_FILE=" + cfg}}
	gitIn(t, base, "init", "--quiet", "--bare", "-b", "main", r.origin)
	seed := h.workdir("testdata/trustedrules")
	writeFile(t, filepath.Join(seed, "sponson.hcl"), trustedDeclaration)
	writeFile(t, filepath.Join(seed, ".gitignore"), ".terraform/\n.terraform.lock.hcl\n")
	gitIn(t, seed, "init", "--quiet", "-b", "main")
	gitIn(t, seed, "add", "-A")
	gitIn(t, seed, "commit", "--quiet", "-m", "main declares local_file by filename")
	gitIn(t, seed, "remote", "add", "origin", r.origin)
	gitIn(t, seed, "push", "--quiet", "origin", "main")
	return r
}

// clone is a checkout of the remote on branch, where edit (if any) changed
// the files and committed them.
func (r *rulesRepo) clone(branch string, edit func(dir string)) string {
	r.t.Helper()
	dir := filepath.Join(r.t.TempDir(), "checkout")
	gitIn(r.t, filepath.Dir(dir), "clone", "--quiet", r.origin, dir)
	if branch != "main" {
		gitIn(r.t, dir, "checkout", "--quiet", "-b", branch)
	}
	if edit != nil {
		edit(dir)
		gitIn(r.t, dir, "commit", "--quiet", "-am", "edit on "+branch)
	}
	return dir
}

// apply runs `sponson apply --json` of file with content in dir as pull
// request pr (0: the default branch's scope main), with extra environment.
func (r *rulesRepo) apply(dir string, pr, file, content string, extra ...string) result {
	r.t.Helper()
	args := []string{"apply", "--json", "--store", "file://" + r.store, "-var", "file=" + file, "-var", "content=" + content}
	if pr != "" {
		args = append(args, "--pr", pr)
	}
	return r.h.run(dir, append(append([]string{}, r.env...), extra...), args...)
}

// owners are the scopes whose latest ledger owns local_file.f at file.
func (r *rulesRepo) owners(file string) []string {
	r.t.Helper()
	st, err := filestore.Open(r.store)
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	scopes, err := store.ListScopes(r.t.Context(), st, "preview", "")
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, s := range scopes {
		if s.Latest == nil {
			continue
		}
		for _, e := range s.Latest.Ledger {
			if e.Type == "local_file" && strings.Contains(e.Identity, file) {
				out = append(out, s.Key.Scope)
			}
		}
	}
	return out
}

// record is a record of the environment's intent lease key (the identity
// schemes and where they came from).
func (r *rulesRepo) record(name string) string {
	r.t.Helper()
	st, err := filestore.Open(r.store)
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	data, err := st.ReadRecord(r.t.Context(), store.Key{Environment: "preview", Scope: ownership.IntentLeaseScope}, name)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(data)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dropIdentity is the pull request's edit: sponson.hcl without its
// identity line.
func dropIdentity(t *testing.T) func(dir string) {
	return func(dir string) {
		writeFile(t, filepath.Join(dir, "sponson.hcl"), "environment \"preview\" {}\n")
	}
}

func mustExit(t *testing.T, what string, r result, exit int, code string) {
	t.Helper()
	if r.exit != exit || r.code(t) != code {
		t.Fatalf("%s: exit %d %q, want %d %q\nstdout:\n%s\nstderr:\n%s", what, r.exit, r.code(t), exit, code, r.stdout, r.stderr)
	}
}

// TestE2ETrustedIdentityScheme: pr-1 owns a file by its filename, as main's
// sponson.hcl declares; pr-3, whose checkout drops that line, is refused
// all the same (main's rule holds), is shown its rule as a proposal, and
// changes neither the file nor the recorded scheme. Without the default
// branch in its clone, a CI run is refused rather than judged by its own
// rules.
func TestE2ETrustedIdentityScheme(t *testing.T) {
	h := e2e(t)
	repo := newRulesRepo(t, h)
	file := filepath.Join(t.TempDir(), "shared.txt")

	pr1 := repo.clone("feat-1", nil)
	if r := repo.apply(pr1, "1", file, "pr-1"); r.exit != 0 {
		t.Fatalf("pr-1: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	schemes := repo.record(ownership.SchemesRecord)
	if !strings.Contains(schemes, "filename") {
		t.Fatalf("the identity-schemes record after pr-1: %s", schemes)
	}
	refused(t, "pr-2 with pr-1's file", repo.apply(repo.clone("feat-2", nil), "2", file, "pr-2"), "pr-1")

	pr3 := repo.clone("feat-3", dropIdentity(t))
	r := repo.apply(pr3, "3", file, "pr-3")
	refused(t, "pr-3 without the identity line", r, "pr-1")
	if !strings.Contains(r.stderr, "proposed rule change: environment preview: identity of local_file [filename] → (none)") {
		t.Errorf("pr-3's log does not show its rule as a proposal:\n%s", r.stderr)
	}
	var env struct {
		Result struct {
			Rules struct {
				Ref     string `json:"ref"`
				Trusted bool   `json:"trusted"`
			} `json:"rules"`
			ProposedRules []string `json:"proposedRules"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil {
		t.Fatal(err)
	}
	if env.Result.Rules.Ref != "refs/remotes/origin/main" || !env.Result.Rules.Trusted || len(env.Result.ProposedRules) == 0 {
		t.Errorf("pr-3's --json rules: %+v", env.Result)
	}
	if got := string(readFile(t, file)); got != "pr-1" {
		t.Errorf("the file is %q after pr-3's refused apply, want pr-1's", got)
	}
	if got := repo.record(ownership.SchemesRecord); got != schemes {
		t.Errorf("pr-3 changed the identity-schemes record: %s, was %s", got, schemes)
	}
	if got := repo.owners(file); len(got) != 1 || got[0] != "pr-1" {
		t.Errorf("owners of the file: %v, want pr-1 alone", got)
	}

	// In CI, a clone without the default branch cannot be judged.
	gitIn(t, pr3, "update-ref", "-d", "refs/remotes/origin/main")
	gitIn(t, pr3, "symbolic-ref", "--delete", "refs/remotes/origin/HEAD")
	r = repo.apply(pr3, "3", file, "pr-3", "CI=true")
	mustExit(t, "pr-3 in CI without origin/main", r, 2, "RULES_UNTRUSTED")
	if got := string(readFile(t, file)); got != "pr-1" {
		t.Errorf("the file is %q after the refused CI run, want pr-1's", got)
	}
}

// TestE2ETrustedRulesRace: a pull request that keeps the identity line and
// one that drops it apply the same file at once; both are judged by main's
// rules, so exactly one owns it.
func TestE2ETrustedRulesRace(t *testing.T) {
	h := e2e(t)
	repo := newRulesRepo(t, h)
	file := filepath.Join(t.TempDir(), "raced.txt")
	dirs := []string{repo.clone("feat-4", nil), repo.clone("feat-5", dropIdentity(t))}
	results := make([]result, 2)
	done := make(chan int)
	for i := range 2 {
		go func() {
			results[i] = repo.apply(dirs[i], []string{"4", "5"}[i], file, []string{"pr-4", "pr-5"}[i])
			done <- i
		}()
	}
	<-done
	<-done
	won := -1
	for i, r := range results {
		switch {
		case r.exit == 0:
			if won >= 0 {
				t.Fatalf("both applied:\n%s\n%s", results[0].stderr, results[1].stderr)
			}
			won = i
		case r.code(t) != "OWNED_BY_OTHER_SCOPE":
			t.Fatalf("pr-%d: exit %d %q\n%s\n%s", 4+i, r.exit, r.code(t), r.stdout, r.stderr)
		}
	}
	if won < 0 {
		t.Fatalf("neither applied:\n%s\n%s", results[0].stdout, results[1].stdout)
	}
	winner := []string{"pr-4", "pr-5"}[won]
	if got := repo.owners(file); len(got) != 1 || got[0] != winner {
		t.Errorf("owners of the file: %v, want %s alone", got, winner)
	}
	if got := string(readFile(t, file)); got != winner {
		t.Errorf("the file holds %q, want the winner's %q", got, winner)
	}
}

// TestE2ETrustedSchemeChangeMovesForward: main drops the scheme; its own
// run (the default branch's checkout is the trusted revision) re-indexes
// the environment. A pull request whose clone still has the old main is
// refused (RULES_STALE) instead of moving the scheme back; fetched, it runs.
func TestE2ETrustedSchemeChangeMovesForward(t *testing.T) {
	h := e2e(t)
	repo := newRulesRepo(t, h)
	file := filepath.Join(t.TempDir(), "shared.txt")
	if r := repo.apply(repo.clone("feat-1", nil), "1", file, "pr-1"); r.exit != 0 {
		t.Fatalf("pr-1: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	stale := repo.clone("feat-2", nil) // cloned before main changes

	main := repo.clone("main", dropIdentity(t))
	gitIn(t, main, "push", "--quiet", "origin", "main")
	head := gitIn(t, main, "rev-parse", "HEAD")
	mainFile := filepath.Join(t.TempDir(), "main.txt")
	if r := repo.apply(main, "", mainFile, "main"); r.exit != 0 {
		t.Fatalf("main's run after the scheme change: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if got := repo.record(ownership.SchemesRecord); strings.Contains(got, "filename") {
		t.Errorf("main's run left the old scheme recorded: %s", got)
	}
	if got := repo.record(ownership.SchemesFromRecord); !strings.Contains(got, head) {
		t.Errorf("the schemes' origin %s does not name main's commit %s", got, head)
	}

	r := repo.apply(stale, "2", filepath.Join(t.TempDir(), "other.txt"), "pr-2")
	mustExit(t, "pr-2 with the old rules", r, 2, "RULES_STALE")
	if got := repo.record(ownership.SchemesRecord); strings.Contains(got, "filename") {
		t.Errorf("the stale run moved the scheme back: %s", got)
	}
	gitIn(t, stale, "fetch", "--quiet", "origin")
	if r := repo.apply(stale, "2", filepath.Join(t.TempDir(), "other.txt"), "pr-2"); r.exit != 0 {
		t.Fatalf("pr-2 after fetching main: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
}
