package wrapper_test

import (
	"crypto/sha1" //nolint:gosec // local_file's id is the SHA-1 of its content: the tests compute it to compare
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// The real-provider tier: testdata/realproviders, a preview configuration
// over HashiCorp's local, null, random, time and tls providers (installed
// by internal/realproviders; the tests skip without them unless
// SPONSON_REQUIRE_REAL_PROVIDERS=1) and terraform_data, whose ids are not
// all identities (issue 24). The fixture provider's id-semantics resources
// stand in for them in e2e_idsemantics_test.go, which runs everywhere.

const (
	realConfig = "testdata/realproviders"
	// realCreated is the time_static of every scope: created in the same
	// second, so with the same id.
	realCreated = "2026-01-02T03:04:05Z"
	// realPassword is the sensitive variable, the same in every scope: the
	// credentials files have the same content, so the same id.
	realPassword = "preview-password"
	realReadme   = "A preview environment of the app.\n"
)

// realEnv is fixtureEnv with the real providers' mirror in the CLI
// configuration and the configuration's variables: out (the files'
// directory, returned) and the sensitive db_password, as CI passes secrets.
func realEnv(t *testing.T) (env []string, out string) {
	t.Helper()
	mirror := realproviders.Install(t)
	cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	out = t.TempDir()
	return []string{
		"TF_CLI_CONFIG_FILE=" + cfg,
		"FIXTURE_DIR=" + t.TempDir(),
		"TF_VAR_out=" + out,
		"TF_VAR_created=" + realCreated,
		"TF_VAR_db_password=" + realPassword,
	}, out
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s)) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

// sha1DER is the SHA-1 of the DER bytes of a PEM block: tls_private_key's
// id, of its public key.
func sha1DER(s string) string {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return "not PEM"
	}
	return sha1Hex(string(b.Bytes))
}

// checkRealIDs checks what each resource's id is in a scope's state, the
// semantics the ownership check has to live with.
func checkRealIDs(t *testing.T, dir, scope string) {
	t.Helper()
	res := stateResources(t, dir, "preview", scope)
	want := map[string]func(id string, attrs map[string]any) bool{
		// The SHA-1 of the content: equal files of two scopes share it.
		"local_file.readme":                func(id string, _ map[string]any) bool { return id == sha1Hex(realReadme) },
		"local_sensitive_file.credentials": func(id string, _ map[string]any) bool { return id == sha1Hex(realPassword) },
		"time_static.created":              func(id string, _ map[string]any) bool { return id == realCreated },
		"random_pet.name":                  func(id string, _ map[string]any) bool { return strings.HasPrefix(id, scope+"-") },
		"tls_private_key.deploy":           func(id string, a map[string]any) bool { return id == sha1DER(fmt.Sprint(a["public_key_pem"])) },
		"null_resource.migrate":            func(id string, _ map[string]any) bool { return regexp.MustCompile(`^[0-9]+$`).MatchString(id) },
		"terraform_data.app":               func(id string, _ map[string]any) bool { return uuidRE.MatchString(id) },
		"sponson_scope.this":               func(string, map[string]any) bool { return true },
	}
	for addr, ok := range want {
		a, found := res[addr]
		if !found {
			t.Errorf("%s: %s is not in the state", scope, addr)
			continue
		}
		if id := fmt.Sprint(a["id"]); !ok(id, a) {
			t.Errorf("%s: %s has id %q, not of the semantics the tier expects", scope, addr, id)
		}
	}
	for addr := range res {
		if _, ok := want[addr]; !ok {
			t.Errorf("%s: unexpected resource %s in the state", scope, addr)
		}
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// realFiles reports which of a scope's two files exist.
func realFiles(out, scope string) (readme, credentials bool) {
	_, r := os.Stat(filepath.Join(out, scope, "README.md"))
	_, c := os.Stat(filepath.Join(out, scope, "credentials"))
	return r == nil, c == nil
}

// applyAtOnce applies every scope of args at the same moment and fails the
// test unless all succeed.
func applyAtOnce(t *testing.T, h *harness, dir string, env []string, args [][]string) {
	t.Helper()
	var wg sync.WaitGroup
	results := make([]result, len(args))
	for i, a := range args {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.run(dir, env, append([]string{"apply", "--json"}, a...)...)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.exit != 0 {
			t.Errorf("apply %v: exit %d %q\n%s\n%s", args[i], r.exit, r.code(t), r.stdout, r.stderr)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// threeScopes are main and two pull requests.
var threeScopes = [][]string{
	{"--branch", "main"},
	{"--pr", "1", "--branch", "feat/one"},
	{"--pr", "2", "--branch", "feat/two"},
}

// TestE2ERealProvidersSameContent: main, pr-1 and pr-2 apply at once with
// equal file contents and the same creation second, so their local_file,
// local_sensitive_file and time_static objects have equal ids. Each owns
// its own, and each destroys alone: its files go, the others' stay, and no
// destroy is refused over another scope's object.
func TestE2ERealProvidersSameContent(t *testing.T) {
	h := e2e(t)
	env, out := realEnv(t)
	dir := h.workdir(realConfig)
	applyAtOnce(t, h, dir, env, threeScopes)

	for _, scope := range []string{"main", "pr-1", "pr-2"} {
		checkRealIDs(t, dir, scope)
		rec := latestReceipt(t, dir, "preview", scope)
		if rec.Status != receipt.StatusApplied || len(rec.Ledger) != 8 {
			t.Errorf("%s: receipt %s with %d entries, want applied with 8", scope, rec.Status, len(rec.Ledger))
		}
		if r, c := realFiles(out, scope); !r || !c {
			t.Errorf("%s: README %v, credentials %v after the apply", scope, r, c)
		}
	}

	// A second apply of each changes nothing and is not refused.
	for _, a := range threeScopes {
		r := h.run(dir, env, append([]string{"apply", "--json"}, a...)...)
		if r.exit != 0 {
			t.Fatalf("second apply %v: exit %d %q\n%s\n%s", a, r.exit, r.code(t), r.stdout, r.stderr)
		}
	}

	left := map[string]bool{"main": true, "pr-1": true, "pr-2": true}
	for _, d := range []struct {
		scope string
		args  []string
	}{
		{"pr-1", threeScopes[1]},
		{"main", threeScopes[0]},
		{"pr-2", threeScopes[2]},
	} {
		r := h.run(dir, env, append([]string{"destroy", "--json"}, d.args...)...)
		if r.exit != 0 {
			t.Fatalf("destroy %s: exit %d %q\n%s\n%s", d.scope, r.exit, r.code(t), r.stdout, r.stderr)
		}
		delete(left, d.scope)
		if res := stateResources(t, dir, "preview", d.scope); len(res) != 0 {
			t.Errorf("destroy %s left %v in its state", d.scope, res)
		}
		for _, scope := range []string{"main", "pr-1", "pr-2"} {
			readme, creds := realFiles(out, scope)
			if left[scope] != readme || left[scope] != creds {
				t.Errorf("after destroying %s: %s's README %v, credentials %v; want %v", d.scope, scope, readme, creds, left[scope])
			}
		}
	}
}

// TestE2ERealProvidersSuccession: feat/x is applied as a branch, then its
// pull request's first apply takes it over. random_pet's prefix is the
// scope, so the takeover replaces the pet (a computed id, unknown until the
// apply) and with it the null_resource and terraform_data that depend on
// it, and the files whose path names the scope. It succeeds in one apply:
// the new objects are pr-3's, the branch is superseded with an empty
// ledger, and the replaced objects are in neither ledger.
func TestE2ERealProvidersSuccession(t *testing.T) {
	h := e2e(t)
	env, out := realEnv(t)
	dir := h.workdir(realConfig)
	branch := []string{"--branch", "feat/x"}
	pr := []string{"--pr", "3", "--branch", "feat/x"}
	h.mustRunEnv(dir, env, append([]string{"apply"}, branch...)...)
	checkRealIDs(t, dir, "branch-feat-x")
	oldPet := fmt.Sprint(stateResources(t, dir, "preview", "branch-feat-x")["random_pet.name"]["id"])

	r := h.run(dir, env, append([]string{"apply", "--json"}, pr...)...)
	if r.exit != 0 {
		t.Fatalf("pr-3's first apply (the takeover): exit %d %q\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	checkRealIDs(t, dir, "pr-3")
	rec := latestReceipt(t, dir, "preview", "pr-3")
	if rec.Status != receipt.StatusApplied || rec.InheritedFrom != "branch-feat-x" || rec.Inheriting != "" {
		t.Errorf("pr-3: status %q, inheritedFrom %q, inheriting %q", rec.Status, rec.InheritedFrom, rec.Inheriting)
	}
	for _, e := range rec.Ledger {
		if e.ID == oldPet {
			t.Errorf("pr-3's ledger still holds the replaced pet %s: %+v", oldPet, e)
		}
	}
	br := latestReceipt(t, dir, "preview", "branch-feat-x")
	if br.SupersededBy != "pr-3" || len(br.Ledger) != 0 {
		t.Errorf("branch: supersededBy %q with %d entries", br.SupersededBy, len(br.Ledger))
	}
	if readme, creds := realFiles(out, "pr-3"); !readme || !creds {
		t.Errorf("pr-3's files: README %v, credentials %v", readme, creds)
	}
	if readme, creds := realFiles(out, "branch-feat-x"); readme || creds {
		t.Errorf("the branch's files were not replaced: README %v, credentials %v", readme, creds)
	}

	// A second apply converges on nothing to do, and the two destroys are
	// the successor's alone.
	h.mustRunEnv(dir, env, append([]string{"apply"}, pr...)...)
	h.mustRunEnv(dir, env, append([]string{"destroy"}, branch...)...)
	if readme, creds := realFiles(out, "pr-3"); !readme || !creds {
		t.Errorf("destroying the superseded branch deleted pr-3's files: README %v, credentials %v", readme, creds)
	}
	h.mustRunEnv(dir, env, append([]string{"destroy"}, pr...)...)
	if readme, creds := realFiles(out, "pr-3"); readme || creds {
		t.Errorf("destroying pr-3 left its files: README %v, credentials %v", readme, creds)
	}
}

// TestE2ERealProvidersGC: of main, pr-1 and pr-2 (equal contents, the same
// second), gc with only pull request 2 open destroys pr-1 alone.
func TestE2ERealProvidersGC(t *testing.T) {
	h := e2e(t)
	env, out := realEnv(t)
	dir := h.workdir(realConfig)
	remote := filepath.Join(t.TempDir(), "remote.git")
	gitRun(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
	src := t.TempDir()
	gitRun(t, src, "init", "-q")
	gitRun(t, src, "commit", "-q", "--allow-empty", "-m", "initial")
	gitRun(t, src, "push", "-q", remote, "HEAD:refs/heads/main")
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "remote", "add", "origin", remote)
	applyAtOnce(t, h, dir, env, threeScopes)
	before := map[string]string{}
	for _, s := range []string{"main", "pr-2"} {
		before[s] = string(readFile(t, filepath.Join(scopeDir(dir, "preview", s), "terraform.tfstate")))
	}

	r := h.run(dir, env, "gc", "--open-prs", "2", "--yes", "--json")
	if r.exit != 0 {
		t.Fatalf("gc --yes: exit %d %q\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if rows := gcRows(t, r); len(rows) != 1 || rows[0] != (gcRow{"pr-1", "destroyed", "pr-closed", ""}) {
		t.Errorf("gc: %+v, want pr-1 destroyed alone", rows)
	}
	if readme, creds := realFiles(out, "pr-1"); readme || creds {
		t.Errorf("gc left pr-1's files: README %v, credentials %v", readme, creds)
	}
	for _, s := range []string{"main", "pr-2"} {
		if readme, creds := realFiles(out, s); !readme || !creds {
			t.Errorf("gc deleted %s's files: README %v, credentials %v", s, readme, creds)
		}
		if after := string(readFile(t, filepath.Join(scopeDir(dir, "preview", s), "terraform.tfstate"))); after != before[s] {
			t.Errorf("gc changed %s's state", s)
		}
	}
}
