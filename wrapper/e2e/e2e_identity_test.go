package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The identity attacks of issue 12, with real sponson and tofu processes:
// a scope's own policy must not decide whether it collides with an owner
// (item 1), an identity is the same whether read from a plan or from a
// state (item 2), and an import is a change of ownership even when the
// engine plans it as a no-op (item 3).

const inputPolicy = `policy={terraform_data=["input"]}`

// dataID returns the id of terraform_data.d[key] in a scope's state.
func dataID(t *testing.T, dir, scope, key string) string {
	t.Helper()
	var id string
	for addr, attrs := range stateResourcesByAddress(t, dir, "preview", scope) {
		if addr == fmt.Sprintf("terraform_data.d[%q]", key) {
			id, _ = attrs["id"].(string)
		}
	}
	if id == "" {
		t.Fatalf("no terraform_data.d[%q] in the state of %s", key, scope)
	}
	return id
}

// refused asserts that a run was refused with OWNED_BY_OTHER_SCOPE naming
// owner.
func refused(t *testing.T, what string, r result, owner string) {
	t.Helper()
	if r.exit != 1 || r.code(t) != "OWNED_BY_OTHER_SCOPE" || !strings.Contains(r.stdout, "scope "+owner+" owns") {
		t.Fatalf("%s: exit %d %q, want OWNED_BY_OTHER_SCOPE naming %s\nstdout:\n%s\nstderr:\n%s", what, r.exit, r.code(t), owner, r.stdout, r.stderr)
	}
}

// TestE2EDynamicIdentityFromPlanAndState (issue 12 item 2): main owns a
// terraform_data whose input is identifying; its ledger reads the input
// from the state, where a dynamically typed value is stored with its type.
// Another scope planning the same input must collide with it.
func TestE2EDynamicIdentityFromPlanAndState(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/identity")
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", inputPolicy, "-var", `data={a="same"}`)
	for _, e := range latestReceipt(t, dir, "preview", "main").Ledger {
		if e.Type == "terraform_data" && e.Identity != `terraform.io/builtin/terraform|terraform_data|input="same"` {
			t.Errorf("main's ledger identity %q; want the input's value, as a plan gives it", e.Identity)
		}
	}
	for _, cmd := range []string{"plan", "apply"} {
		r := h.run(dir, env, cmd, "--scope", "pr-2", "--json", "-var", inputPolicy, "-var", `data={b="same"}`)
		refused(t, cmd+" pr-2 with main's input", r, "main")
	}
}

// TestE2ENoOpImportOfForeignObject (issue 12 item 3): importing another
// scope's object unchanged is a change of ownership. It must be refused;
// otherwise the importer co-owns the object and the owner's destroy is
// refused forever.
func TestE2ENoOpImportOfForeignObject(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, objects := fixtureEnv(t)
	dir := h.workdir("testdata/identity")
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", `objects={a="shared"}`)
	for _, cmd := range []string{"plan", "apply"} {
		r := h.run(dir, env, cmd, "--scope", "pr-2", "--json", "-var", `objects={x="shared"}`, "-var", `import_objects={x="shared"}`)
		refused(t, cmd+" pr-2 importing main's object unchanged", r, "main")
	}
	h.mustRunEnv(dir, env, "destroy", "--scope", "main", "-var", `objects={a="shared"}`)
	if _, err := os.Stat(filepath.Join(objects, "objects", "shared.json")); err == nil {
		t.Error("main's destroy left its object")
	}
}

// stateResourcesByAddress returns the attributes of every managed resource
// instance of a scope's state by address.
func stateResourcesByAddress(t *testing.T, dir, env, scope string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range readStateObjects(t, filepath.Join(scopeDir(dir, env, scope), "terraform.tfstate")) {
		out[o.address] = o.attrs
	}
	return out
}

type stateObject struct {
	address string
	attrs   map[string]any
}

func readStateObjects(t *testing.T, path string) []stateObject {
	t.Helper()
	var st struct {
		Resources []struct {
			Mode, Type, Name string
			Instances        []struct {
				IndexKey   any            `json:"index_key"`
				Attributes map[string]any `json:"attributes"`
			}
		}
	}
	if err := json.Unmarshal(readFile(t, path), &st); err != nil {
		t.Fatal(err)
	}
	var out []stateObject
	for _, r := range st.Resources {
		if r.Mode != "managed" {
			continue
		}
		for _, in := range r.Instances {
			addr := r.Type + "." + r.Name
			switch k := in.IndexKey.(type) {
			case string:
				addr += fmt.Sprintf("[%q]", k)
			case float64:
				addr += fmt.Sprintf("[%d]", int(k))
			}
			out = append(out, stateObject{addr, in.Attributes})
		}
	}
	return out
}

// TestE2EPolicyCannotDodgeTheCheck (issue 12 item 1): a scope that declares
// another identity policy than the owner must still collide with the
// owner's objects. Both directions: the owner declares nothing and the
// attacker an identity, and the reverse. The attacker imports the owner's
// object with a change; it must be refused, and the owner's object must
// survive the attacker's destroy.
func TestE2EPolicyCannotDodgeTheCheck(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	for _, c := range []struct {
		name, owner, attacker string
	}{
		{"owner-declares-nothing", `policy=null`, inputPolicy},
		{"attacker-declares-nothing", inputPolicy, `policy=null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := h.workdir("testdata/identity")
			h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", c.owner, "-var", `data={a="x"}`)
			id := dataID(t, dir, "main", "a")
			args := []string{"--scope", "pr-2", "--json", "-var", c.attacker, "-var", `data={a="changed"}`, "-var", fmt.Sprintf(`imports={a=%q}`, id)}
			for _, cmd := range []string{"plan", "apply"} {
				refused(t, cmd+" pr-2 importing main's object", h.run(dir, env, append([]string{cmd}, args...)...), "main")
			}
			h.run(dir, env, append([]string{"destroy"}, args...)...)
			if got := dataID(t, dir, "main", "a"); got != id {
				t.Fatalf("main's object changed: id %s, was %s", got, id)
			}
			// main still owns it: its own run changes and destroys it.
			h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", c.owner, "-var", `data={a="y"}`)
			h.mustRunEnv(dir, env, "destroy", "--scope", "main", "-var", c.owner, "-var", `data={a="y"}`)
		})
	}
}

// TestE2ECreateCheckedUnderTheOwnersScheme (issue 12 item 1): main declares
// that a terraform_data's input identifies it; a scope declaring nothing
// that creates one with the same input is checked under main's scheme and
// refused, its intent included.
func TestE2ECreateCheckedUnderTheOwnersScheme(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/identity")
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", inputPolicy, "-var", `data={a="x"}`)
	for _, cmd := range []string{"plan", "apply"} {
		refused(t, cmd+" pr-2 creating main's input", h.run(dir, env, cmd, "--scope", "pr-2", "--json", "-var", `data={b="x"}`), "main")
	}
	// Another input is another object.
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-2", "-var", `data={b="y"}`)
}

// TestE2EPolicyChangeThatLosesOwnershipRefused (issue 12 item 1): a policy
// naming an attribute the scope's objects do not have would record them
// under their address, unmatchable by any other scope: refused before the
// engine writes.
func TestE2EPolicyChangeThatLosesOwnershipRefused(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/identity")
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", `data={a="x"}`)
	before := latestReceipt(t, dir, "preview", "main")
	r := h.run(dir, env, "apply", "--scope", "main", "--json", "-var", `policy={terraform_data=["inptu"]}`, "-var", `data={a="x"}`)
	if r.exit != 2 || r.code(t) != "IDENTITY_POLICY" || !strings.Contains(r.stdout, `terraform_data.d[\"a\"] has no value for inptu`) {
		t.Fatalf("a policy that loses main's objects: exit %d %q\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if after := latestReceipt(t, dir, "preview", "main"); after.RunID != before.RunID {
		t.Errorf("the refused run wrote receipt %s", after.RunID)
	}
}

// TestE2ESensitiveIdentityHashed (issue 12 item 10): an identifying value
// marked sensitive is kept as a keyed hash, never in clear, in the receipt
// and the ownership index; another scope planning the same value collides
// with it, whether its plan marks the value sensitive or not.
func TestE2ESensitiveIdentityHashed(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/identity")
	const secret = "hunter2-correct-horse"
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", inputPolicy, "-var", "secret="+secret, "-var", `secret_at=["a"]`)
	var hashed bool
	for _, e := range latestReceipt(t, dir, "preview", "main").Ledger {
		if e.Address == `terraform_data.s["a"]` {
			hashed = strings.Contains(e.Identity, "|input=hmac:")
		}
	}
	if !hashed {
		t.Errorf("the sensitive input is not identified by its keyed hash: %+v", latestReceipt(t, dir, "preview", "main").Ledger)
	}
	for p, content := range snapshot(t, filepath.Join(dir, ".sponson")) {
		if strings.HasSuffix(p, ".tfstate") {
			continue // the state holds it, as the engine wrote it
		}
		if strings.Contains(content, secret) {
			t.Errorf("%s holds the sensitive identifying value in clear", p)
		}
	}
	for _, args := range [][]string{
		{"-var", "secret=" + secret, "-var", `secret_at=["b"]`},
		{"-var", fmt.Sprintf("data={b=%q}", secret)},
	} {
		r := h.run(dir, env, append([]string{"apply", "--scope", "pr-2", "--json", "-var", inputPolicy}, args...)...)
		refused(t, fmt.Sprintf("pr-2 with main's secret input (%s)", args[len(args)-1]), r, "main")
	}
}

// TestE2EDeclaredIdentityScheme (issue 24 item 1): the environment declares
// in sponson.hcl that a terraform_data's input identifies it; every scope
// computes that identity, without any policy of its own, so a create of
// the same input in another scope is refused before the engine writes,
// another input is not, and the owner's ledger records the scheme.
func TestE2EDeclaredIdentityScheme(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/identity")
	declareInputScheme(t, dir)
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", `data={a="x"}`)
	if e := ledgerOf(t, dir, "main")[`terraform_data.d["a"]`]; !strings.HasSuffix(e.Identity, `|terraform_data|input="x"`) {
		t.Fatalf("main's object is identified as %q, want by its input", e.Identity)
	}
	for _, cmd := range []string{"plan", "apply"} {
		refused(t, cmd+" pr-2 creating main's input", h.run(dir, env, cmd, "--scope", "pr-2", "--json", "-var", `data={b="x"}`), "main")
	}
	h.mustRunEnv(dir, env, "apply", "--scope", "pr-2", "-var", `data={b="y"}`)
	h.mustRunEnv(dir, env, "destroy", "--scope", "pr-2", "-var", `data={b="y"}`)
	h.mustRunEnv(dir, env, "destroy", "--scope", "main", "-var", `data={a="x"}`)
}

// TestE2EDeclaredSchemeChangeReindexes (issue 24 item 1): main owns an
// object indexed under its id; then sponson.hcl declares that the input
// identifies terraform_data. The next run that writes re-indexes main under
// the new scheme, under main's lease, before its own check: a create of
// main's input in pr-2 is refused, not let through by a stale index.
func TestE2EDeclaredSchemeChangeReindexes(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	env, _ := fixtureEnv(t)
	dir := h.workdir("testdata/identity")
	h.mustRunEnv(dir, env, "apply", "--scope", "main", "-var", `data={a="x"}`)
	before := ledgerOf(t, dir, "main")[`terraform_data.d["a"]`]
	declareInputScheme(t, dir)
	refused(t, "apply pr-2 creating main's input", h.run(dir, env, "apply", "--scope", "pr-2", "--json", "-var", `data={b="x"}`), "main")
	after := ledgerOf(t, dir, "main")[`terraform_data.d["a"]`]
	if !strings.HasSuffix(after.Identity, `|terraform_data|input="x"`) || after.ID != before.ID || after.CreatedBy != before.CreatedBy {
		t.Fatalf("main's entry after the migration: %+v, was %+v", after, before)
	}
	// The migration is done once: main's own run plans no change.
	r := h.mustRunEnv(dir, env, "plan", "--scope", "main", "--json", "-var", `data={a="x"}`)
	if sum := r.envelope(t)["result"].(map[string]any)["summary"].(map[string]any); sum["add"] != 0.0 || sum["change"] != 0.0 {
		t.Errorf("main's plan after the migration: %v", sum)
	}
	h.mustRunEnv(dir, env, "destroy", "--scope", "main", "-var", `data={a="x"}`)
}

// declareInputScheme writes a sponson.hcl in dir declaring that a
// terraform_data's input identifies it, in every environment.
func declareInputScheme(t *testing.T, dir string) {
	t.Helper()
	decl := "identity = { terraform_data = [\"input\"] }\nenvironment \"preview\" {}\nenvironment \"production\" {}\n"
	if err := os.WriteFile(filepath.Join(dir, "sponson.hcl"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
}
