package e2e_test

import (
	"context"
	"crypto/sha1" //nolint:gosec // local_file's id is the SHA-1 of its content: the tests compute it to compare
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The real-provider tier: testdata/realproviders, a preview configuration
// over HashiCorp's local, null, random, time and tls providers (installed
// by internal/realproviders; the tests skip without them unless
// SPONSON_REQUIRE_REAL_PROVIDERS=1) and terraform_data, whose ids are not
// all identities (issue 24). testdata/idsemantics is the same configuration
// over the fixture provider's stand-ins, which mean the same by their ids;
// its tests (TestE2EIDSemantics*) run the same scenarios everywhere.

const (
	// idCreated is the time_static of every scope: created in the same
	// second, so with the same id.
	idCreated = "2026-01-02T03:04:05Z"
	// idPassword is the sensitive variable, the same in every scope: the
	// credentials files have the same content, so the same id.
	idPassword = "preview-password"
	idReadme   = "A preview environment of the app.\n"
)

// idTier is one configuration of the id-semantics scenarios.
type idTier struct {
	config string
	// env is the environment of the runs: the CLI configuration, and the
	// variables created and db_password (as CI passes secrets); files
	// reports whether a scope's README and credentials files exist.
	env func(t *testing.T) (env []string, files previewFiles)
	// ids are the state's resources, each with what its id must be.
	ids  map[string]func(scope, id string, attrs map[string]any) bool
	pet  string // the address of the name prefixed with the scope
	file string // the address of the README
	// equalIDs are the types whose objects in the three scopes have equal
	// ids, which only an address-owned type (internal/ownership) survives.
	equalIDs []string
	// addressOwned are the types the tier's sponson.hcl declares owned by
	// address: the fixture provider's stand-ins are in no table of
	// Sponson's, as a team's own provider would not be.
	addressOwned []string
}

// declaration is the sponson.hcl of the tier's scenarios, extra its further
// lines.
func (tier idTier) declaration(extra string) string {
	d := "environment \"preview\" {}\n" + extra
	if len(tier.addressOwned) > 0 {
		d += "address_owned = [\"" + strings.Join(tier.addressOwned, `", "`) + "\"]\n"
	}
	return d
}

// workdir is the tier's configuration in a fresh directory, with its
// declaration.
func (tier idTier) workdir(t *testing.T, h *harness) string {
	t.Helper()
	dir := h.workdir(tier.config)
	if err := os.WriteFile(filepath.Join(dir, "sponson.hcl"), []byte(tier.declaration("")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

var realTier = idTier{
	config: "testdata/realproviders",
	env: func(t *testing.T) ([]string, previewFiles) {
		mirror := realproviders.Install(t)
		cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		return append(idVars(), "TF_CLI_CONFIG_FILE="+cfg, "FIXTURE_DIR="+t.TempDir(), "TF_VAR_out="+out),
			previewFiles{dir: out, sep: "/"}
	},
	ids: map[string]func(scope, id string, attrs map[string]any) bool{
		// The SHA-1 of the content: equal files of two scopes share it.
		"local_file.readme":                func(_, id string, _ map[string]any) bool { return id == sha1Hex(idReadme) },
		"local_sensitive_file.credentials": func(_, id string, _ map[string]any) bool { return id == sha1Hex(idPassword) },
		// The second it stands for.
		"time_static.created": func(_, id string, _ map[string]any) bool { return id == idCreated },
		// A generated name, with the prefix.
		"random_pet.name": func(scope, id string, _ map[string]any) bool { return strings.HasPrefix(id, scope+"-") },
		// The SHA-1 of the public key's DER (white space trimmed).
		"tls_private_key.deploy": func(_, id string, a map[string]any) bool { return id == sha1DER(fmt.Sprint(a["public_key_pem"])) },
		// Random per creation.
		"null_resource.migrate": func(_, id string, _ map[string]any) bool { return numberRE.MatchString(id) },
		"terraform_data.app":    func(_, id string, _ map[string]any) bool { return uuidRE.MatchString(id) },
		"sponson_scope.this":    func(scope, id string, _ map[string]any) bool { return id == "preview/"+scope },
	},
	pet:      "random_pet.name",
	file:     "local_file.readme",
	equalIDs: []string{"local_file", "local_sensitive_file", "time_static"},
}

// fixtureTier is realTier over the fixture provider: its content-hash and
// timestamp types have equal ids across scopes as local_file's and
// time_static's do.
var fixtureTier = idTier{
	config: "testdata/idsemantics",
	env: func(t *testing.T) ([]string, previewFiles) {
		env, objects := fixtureEnv(t)
		return append(env, idVars()...), previewFiles{dir: filepath.Join(objects, "files"), sep: ".", byName: true}
	},
	ids: map[string]func(scope, id string, attrs map[string]any) bool{
		"fixture_file.readme":       func(_, id string, _ map[string]any) bool { return id == sha1Hex(idReadme) },
		"fixture_file.credentials":  func(_, id string, _ map[string]any) bool { return id == sha1Hex(idPassword) },
		"fixture_timestamp.created": func(_, id string, _ map[string]any) bool { return id == idCreated },
		"fixture_pet.name":          func(scope, id string, _ map[string]any) bool { return strings.HasPrefix(id, scope+"-") },
		"fixture_token.migrate":     func(_, id string, _ map[string]any) bool { return numberRE.MatchString(id) },
		"terraform_data.app":        func(_, id string, _ map[string]any) bool { return uuidRE.MatchString(id) },
		"sponson_scope.this":        func(scope, id string, _ map[string]any) bool { return id == "preview/"+scope },
	},
	pet:          "fixture_pet.name",
	file:         "fixture_file.readme",
	equalIDs:     []string{"fixture_file", "fixture_timestamp"},
	addressOwned: []string{"fixture_file", "fixture_timestamp", "fixture_pet"},
}

func idVars() []string {
	return []string{"TF_VAR_created=" + idCreated, "TF_VAR_db_password=" + idPassword}
}

// previewFiles are the README and credentials files of the scopes, in dir
// as SCOPE + sep + "README.md" and SCOPE + sep + "credentials".
type previewFiles struct {
	dir, sep string
	// byName: the configuration's filename is the name in dir, not the path.
	byName bool
}

func (f previewFiles) path(scope, name string) string {
	return filepath.Join(f.dir, scope+f.sep+name)
}

// exist reports whether a scope's files exist.
func (f previewFiles) exist(scope string) (readme, credentials bool) {
	_, r := os.Stat(f.path(scope, "README.md"))
	_, c := os.Stat(f.path(scope, "credentials"))
	return r == nil, c == nil
}

// readmeFilename is the README's filename attribute in a scope's
// configuration (variable readme_file).
func (f previewFiles) readmeFilename(scope string) string {
	if f.byName {
		return scope + f.sep + "README.md"
	}
	return f.path(scope, "README.md")
}

var (
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	numberRE = regexp.MustCompile(`^[0-9]+$`)
)

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s)) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

// sha1DER is the SHA-1 of the DER bytes of a PEM block with leading and
// trailing white space trimmed, as the tls provider hashes them for ids
// (hashForState): tls_private_key's id, of its public key. The trimming
// matters whenever the DER happens to end in a byte such as 0x0a.
func sha1DER(s string) string {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return "not PEM"
	}
	return sha1Hex(strings.TrimSpace(string(b.Bytes)))
}

// requireAddressOwned stops a scenario whose scopes hold equal ids of a
// type the ownership check would match by id, saying so.
func (tier idTier) requireAddressOwned(t *testing.T) {
	t.Helper()
	for _, typ := range tier.equalIDs {
		if !ownership.IsAddressOwned(typ) && !slices.Contains(tier.addressOwned, typ) {
			t.Fatalf("%s's ids are equal in the scopes of this scenario (content hashes or timestamps), but "+
				"neither internal/ownership's addressOwned table nor the tier's address_owned lists it: they would collide by id", typ)
		}
	}
}

// checkIDs checks what each resource's id is in a scope's state: the
// semantics the ownership check has to live with.
func (tier idTier) checkIDs(t *testing.T, scope string, res map[string]map[string]any) {
	t.Helper()
	for addr, ok := range tier.ids {
		a, found := res[addr]
		if !found {
			t.Errorf("%s: %s is not in the state", scope, addr)
			continue
		}
		if id := fmt.Sprint(a["id"]); !ok(scope, id, a) {
			t.Errorf("%s: %s has id %q, not of the semantics the tier expects", scope, addr, id)
		}
	}
	for addr := range res {
		if _, ok := tier.ids[addr]; !ok {
			t.Errorf("%s: unexpected resource %s in the state", scope, addr)
		}
	}
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

func TestE2ERealProvidersSameContent(t *testing.T) {
	t.Parallel()
	testSameContent(t, realTier)
}

func TestE2EIDSemanticsSameContent(t *testing.T) {
	t.Parallel()
	testSameContent(t, fixtureTier)
}

// stateReader is what the scenarios read back from a store.
type stateReader interface {
	LatestReceipt(ctx context.Context, key store.Key) (*receipt.Receipt, error)
	ReadState(ctx context.Context, key store.Key) ([]byte, error)
}

// idStore is a store a scenario runs on: open returns the run's extra
// arguments (--store) and environment, and a reader of the store, nil for
// the embedded file store, which the tests read as files.
type idStore struct {
	name string
	open func(t *testing.T) (args, env []string, read stateReader)
}

var idStores = []idStore{
	{"file", func(*testing.T) ([]string, []string, stateReader) { return nil, nil, nil }},
	{"git", func(t *testing.T) ([]string, []string, stateReader) {
		bare, flag, env := gitRemote(t)
		return []string{flag}, env, openBare(t, bare)
	}},
	{"postgres", func(t *testing.T) ([]string, []string, stateReader) {
		p := newPgE2E(t)
		return []string{"--store", p.url}, nil, p.check
	}},
	{"s3", func(t *testing.T) ([]string, []string, stateReader) {
		p := newS3E2E(t, "ids")
		return []string{"--store", p.url}, p.env, p.check
	}},
}

// storeView reads one scenario's scopes back from its store.
type storeView struct {
	dir  string
	read stateReader
}

func (v storeView) receipt(t *testing.T, scope string) *receipt.Receipt {
	t.Helper()
	if v.read == nil {
		return latestReceipt(t, v.dir, "preview", scope)
	}
	r, err := v.read.LatestReceipt(t.Context(), store.Key{Stack: e2eStack, Environment: "preview", Scope: scope})
	if err != nil || r == nil {
		t.Fatalf("%s: latest receipt %v, %v", scope, r, err)
	}
	return r
}

func (v storeView) resources(t *testing.T, scope string) map[string]map[string]any {
	t.Helper()
	if v.read == nil {
		return stateResources(t, v.dir, "preview", scope)
	}
	st, err := v.read.ReadState(t.Context(), store.Key{Stack: e2eStack, Environment: "preview", Scope: scope})
	if err != nil {
		t.Fatalf("%s: state: %v", scope, err)
	}
	return parseStateResources(t, st)
}

// testSameContent: main, pr-1 and pr-2 apply at once with equal file
// contents and the same creation second, so their content-hash and
// timestamp ids are equal. Each owns its own, reads its own outputs (the
// sensitive one hidden unless asked for), applies again unrefused (pr-1
// with -replace of its README too), and destroys alone: its files go, the
// others' stay. On each store.
func testSameContent(t *testing.T, tier idTier) {
	for _, st := range idStores {
		t.Run(st.name, func(t *testing.T) {
			h := e2e(t)
			tier.requireAddressOwned(t)
			env, files := tier.env(t)
			dir := tier.workdir(t, h)
			storeArgs, storeEnv, read := st.open(t)
			env = append(env, storeEnv...)
			view := storeView{dir: dir, read: read}
			scopeArgs := func(i int, more ...string) []string {
				return append(append(more, threeScopes[i]...), storeArgs...)
			}
			sameContentOn(t, h, tier, dir, env, files, view, scopeArgs)
		})
	}
}

func sameContentOn(t *testing.T, h *harness, tier idTier, dir string, env []string, files previewFiles, view storeView, scopeArgs func(i int, more ...string) []string) {
	applyAtOnce(t, h, dir, env, [][]string{scopeArgs(0), scopeArgs(1), scopeArgs(2)})

	scopes := []string{"main", "pr-1", "pr-2"}
	for _, scope := range scopes {
		tier.checkIDs(t, scope, view.resources(t, scope))
		rec := view.receipt(t, scope)
		if rec.Status != receipt.StatusApplied || len(rec.Ledger) != len(tier.ids) {
			t.Errorf("%s: receipt %s with %d entries, want applied with %d", scope, rec.Status, len(rec.Ledger), len(tier.ids))
		}
		if r, c := files.exist(scope); !r || !c {
			t.Errorf("%s: README %v, credentials %v after the apply", scope, r, c)
		}
	}

	// The outputs are each scope's own; the password only where asked for.
	for i, scope := range scopes {
		r := h.run(dir, env, scopeArgs(i, "output", "-json")...)
		var got map[string]struct {
			Sensitive bool `json:"sensitive"`
			Value     any  `json:"value"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); r.exit != 0 || err != nil {
			t.Fatalf("output -json of %s: exit %d, %v\n%s\n%s", scope, r.exit, err, r.stdout, r.stderr)
		}
		if name := fmt.Sprint(got["name"].Value); !strings.HasPrefix(name, scope+"-") || got["created"].Value != idCreated {
			t.Errorf("%s: outputs name %q, created %v", scope, name, got["created"].Value)
		}
		if pw := got["db_password"]; !pw.Sensitive || pw.Value != idPassword {
			t.Errorf("%s: output db_password %+v, want the password, marked sensitive", scope, pw)
		}
		human := h.run(dir, env, scopeArgs(i, "output")...)
		if human.exit != 0 || !strings.Contains(human.stdout, "db_password = <sensitive>") || strings.Contains(human.stdout, idPassword) {
			t.Errorf("%s: human output (exit %d):\n%s", scope, human.exit, human.stdout)
		}
	}

	// A second apply of each changes nothing and is not refused, and pr-1
	// may replace its README, whose id main's and pr-2's share.
	for i := range scopes {
		if r := h.run(dir, env, scopeArgs(i, "apply", "--json")...); r.exit != 0 {
			t.Fatalf("second apply of %s: exit %d %q\n%s\n%s", scopes[i], r.exit, r.code(t), r.stdout, r.stderr)
		}
	}
	if r := h.run(dir, env, scopeArgs(1, "apply", "--json", "-replace", tier.file)...); r.exit != 0 {
		t.Fatalf("apply -replace %s in pr-1: exit %d %q\n%s\n%s", tier.file, r.exit, r.code(t), r.stdout, r.stderr)
	}
	for _, scope := range scopes {
		if r, c := files.exist(scope); !r || !c {
			t.Errorf("after pr-1's -replace: %s's README %v, credentials %v", scope, r, c)
		}
	}

	left := map[string]bool{"main": true, "pr-1": true, "pr-2": true}
	for _, i := range []int{1, 0, 2} {
		scope := scopes[i]
		r := h.run(dir, env, scopeArgs(i, "destroy", "--json")...)
		if r.exit != 0 {
			t.Fatalf("destroy %s: exit %d %q\n%s\n%s", scope, r.exit, r.code(t), r.stdout, r.stderr)
		}
		delete(left, scope)
		if res := view.resources(t, scope); len(res) != 0 {
			t.Errorf("destroy %s left %v in its state", scope, res)
		}
		for _, other := range scopes {
			readme, creds := files.exist(other)
			if left[other] != readme || left[other] != creds {
				t.Errorf("after destroying %s: %s's README %v, credentials %v; want %v", scope, other, readme, creds, left[other])
			}
		}
	}
}

func TestE2ERealProvidersSuccession(t *testing.T) {
	t.Parallel()
	testSuccessionReplaces(t, realTier)
}

func TestE2EIDSemanticsSuccession(t *testing.T) {
	t.Parallel()
	testSuccessionReplaces(t, fixtureTier)
}

// testSuccessionReplaces: feat/x is applied as a branch, then its pull
// request's first apply takes it over. The pet's prefix is the scope, so
// the takeover replaces the pet (a computed id, unknown until the apply)
// and with it what depends on it, and the files whose path names the
// scope. It succeeds in one apply: the new objects are pr-3's, the branch
// is superseded with an empty ledger, and the replaced pet is in neither
// ledger.
func testSuccessionReplaces(t *testing.T, tier idTier) {
	h := e2e(t)
	env, files := tier.env(t)
	dir := tier.workdir(t, h)
	branch := []string{"--branch", "feat/x"}
	pr := []string{"--pr", "3", "--branch", "feat/x"}
	h.mustRunEnv(dir, env, append([]string{"apply"}, branch...)...)
	tier.checkIDs(t, "branch-feat-x", stateResources(t, dir, "preview", "branch-feat-x"))
	oldPet := fmt.Sprint(stateResources(t, dir, "preview", "branch-feat-x")[tier.pet]["id"])

	r := h.run(dir, env, append([]string{"apply", "--json"}, pr...)...)
	if r.exit != 0 {
		t.Fatalf("pr-3's first apply (the takeover): exit %d %q\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	tier.checkIDs(t, "pr-3", stateResources(t, dir, "preview", "pr-3"))
	rec := latestReceipt(t, dir, "preview", "pr-3")
	if rec.Status != receipt.StatusApplied || rec.InheritedFrom != "branch-feat-x" || rec.Inheriting != "" {
		t.Errorf("pr-3: status %q, inheritedFrom %q, inheriting %q", rec.Status, rec.InheritedFrom, rec.Inheriting)
	}
	if len(rec.Ledger) != len(tier.ids) {
		t.Errorf("pr-3 owns %d resources, want %d", len(rec.Ledger), len(tier.ids))
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
	if readme, creds := files.exist("pr-3"); !readme || !creds {
		t.Errorf("pr-3's files: README %v, credentials %v", readme, creds)
	}
	if readme, creds := files.exist("branch-feat-x"); readme || creds {
		t.Errorf("the branch's files were not replaced: README %v, credentials %v", readme, creds)
	}

	// A second apply has nothing to do, and each destroy removes only what
	// is its own: the superseded branch nothing.
	h.mustRunEnv(dir, env, append([]string{"apply"}, pr...)...)
	h.mustRunEnv(dir, env, append([]string{"destroy"}, branch...)...)
	if readme, creds := files.exist("pr-3"); !readme || !creds {
		t.Errorf("destroying the superseded branch deleted pr-3's files: README %v, credentials %v", readme, creds)
	}
	h.mustRunEnv(dir, env, append([]string{"destroy"}, pr...)...)
	if readme, creds := files.exist("pr-3"); readme || creds {
		t.Errorf("destroying pr-3 left its files: README %v, credentials %v", readme, creds)
	}
}

func TestE2ERealProvidersGC(t *testing.T) {
	t.Parallel()
	testGCSameContent(t, realTier)
}

func TestE2EIDSemanticsGC(t *testing.T) {
	t.Parallel()
	testGCSameContent(t, fixtureTier)
}

// testGCSameContent: of main, pr-1 and pr-2 (equal contents, the same
// second), gc with only pull request 2 open destroys pr-1 alone and leaves
// the others' files and states as they were.
func testGCSameContent(t *testing.T, tier idTier) {
	h := e2e(t)
	tier.requireAddressOwned(t)
	env, files := tier.env(t)
	dir := tier.workdir(t, h)
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
	if readme, creds := files.exist("pr-1"); readme || creds {
		t.Errorf("gc left pr-1's files: README %v, credentials %v", readme, creds)
	}
	for _, s := range []string{"main", "pr-2"} {
		if readme, creds := files.exist(s); !readme || !creds {
			t.Errorf("gc deleted %s's files: README %v, credentials %v", s, readme, creds)
		}
		if after := string(readFile(t, filepath.Join(scopeDir(dir, "preview", s), "terraform.tfstate"))); after != before[s] {
			t.Errorf("gc changed %s's state", s)
		}
	}
}

func TestE2ERealProvidersDeclaredFilename(t *testing.T) {
	t.Parallel()
	testDeclaredFilename(t, realTier)
}

func TestE2EIDSemanticsDeclaredFilename(t *testing.T) {
	t.Parallel()
	testDeclaredFilename(t, fixtureTier)
}

// testDeclaredFilename: with sponson.hcl identifying the README's type by
// filename, main and pr-1 (equal contents, so equal ids) each own their
// README by its filename; pr-1 pointing its README at main's file is
// refused before anything is written, naming main; each destroys alone.
func testDeclaredFilename(t *testing.T, tier idTier) {
	h := e2e(t)
	env, files := tier.env(t)
	dir := tier.workdir(t, h)
	typ, _, _ := strings.Cut(tier.file, ".")
	// The file's type is left out of address_owned: the declared scheme
	// alone identifies it, its equal ids in the two scopes do not count.
	tier.addressOwned = slices.DeleteFunc(slices.Clone(tier.addressOwned), func(s string) bool { return s == typ })
	hcl := tier.declaration(fmt.Sprintf("identity = { %s = [\"filename\"] }\n", typ))
	if err := os.WriteFile(filepath.Join(dir, "sponson.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	// Distinct seconds: this scenario is about the file alone. Given with
	// -var only: OpenTofu refuses to apply a saved plan whose -var differs
	// from a TF_VAR_ of the environment (Terraform does not).
	env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, "TF_VAR_created=") })
	mainArgs := append([]string{"-var", "created=2026-01-02T03:04:05Z"}, threeScopes[0]...)
	prArgs := append([]string{"-var", "created=2026-01-02T03:04:06Z"}, threeScopes[1]...)
	applyAtOnce(t, h, dir, env, [][]string{mainArgs, prArgs})
	for _, scope := range []string{"main", "pr-1"} {
		var identity string
		for _, e := range latestReceipt(t, dir, "preview", scope).Ledger {
			if e.Address == tier.file {
				identity = e.Identity
			}
		}
		if !strings.Contains(identity, "filename=") {
			t.Errorf("%s: %s is owned as %q, not by its filename", scope, tier.file, identity)
		}
	}

	mainReadme := files.path("main", "README.md")
	r := h.run(dir, env, append([]string{"apply", "--json", "-var", "readme_file=" + files.readmeFilename("main"), "-var", "readme=pr-1 was here\n"}, prArgs...)...)
	if r.exit != 1 || r.code(t) != "OWNED_BY_OTHER_SCOPE" || !strings.Contains(r.stdout, "scope main owns") {
		t.Fatalf("pr-1 writing main's README: exit %d %q\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if got := string(readFile(t, mainReadme)); got != idReadme {
		t.Errorf("the refused apply changed main's README to %q", got)
	}
	if readme, creds := files.exist("pr-1"); !readme || !creds {
		t.Errorf("the refused apply removed pr-1's own files: README %v, credentials %v", readme, creds)
	}

	h.mustRunEnv(dir, env, append([]string{"destroy"}, prArgs...)...)
	if readme, creds := files.exist("main"); !readme || !creds {
		t.Errorf("destroying pr-1 removed main's files: README %v, credentials %v", readme, creds)
	}
	h.mustRunEnv(dir, env, append([]string{"destroy"}, mainArgs...)...)
	if readme, creds := files.exist("main"); readme || creds {
		t.Errorf("destroying main left its files: README %v, credentials %v", readme, creds)
	}
}
