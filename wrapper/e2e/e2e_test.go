package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

const example = "../../examples/preview"

// TestE2EThreeScopes is the walking skeleton's promise: one configuration in
// three scopes (two applied at the same time), destroying one leaves the
// others' resources and state byte for byte, and a second apply changes
// nothing.
func TestE2EThreeScopes(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir(example)
	mainTF := readFile(t, filepath.Join(dir, "main.tf"))

	h.mustRun(dir, "apply", "--branch", "main")

	var wg sync.WaitGroup
	results := make([]result, 2)
	for i, pr := range []string{"1", "2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.run(dir, nil, "apply", "--pr", pr, "--branch", "feat/pr-"+pr)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.exit != 0 {
			t.Fatalf("apply pr-%d: exit %d\n%s\n%s", i+1, r.exit, r.stdout, r.stderr)
		}
	}

	for _, scope := range []string{"main", "pr-1", "pr-2"} {
		res := stateResources(t, dir, "preview", scope)
		if got, want := dynamic(res["terraform_data.app"]["output"]), "app-"+scope; got != want {
			t.Errorf("%s: app output = %v, want %v", scope, got, want)
		}
		rec := latestReceipt(t, dir, "preview", scope)
		if rec.Status != receipt.StatusApplied || len(rec.Ledger) != 3 {
			t.Errorf("%s: receipt status %q with %d ledger entries, want applied with 3", scope, rec.Status, len(rec.Ledger))
		}
	}
	// The provider saw exactly the context the wrapper decided.
	pr2 := latestReceipt(t, dir, "preview", "pr-2")
	scopeRes := stateResources(t, dir, "preview", "pr-2")["sponson_scope.this"]
	if scopeRes["name"] != "pr-2" || scopeRes["predecessor"] != "branch-feat-pr-2" || pr2.PullRequest != 2 || pr2.Branch != "feat/pr-2" {
		t.Errorf("pr-2 context: scope resource %v, receipt pr %d branch %q", scopeRes, pr2.PullRequest, pr2.Branch)
	}

	stateOf := func(scope string) []byte {
		return readFile(t, filepath.Join(scopeDir(dir, "preview", scope), "terraform.tfstate"))
	}
	receiptOf := func(scope string) []byte {
		return readFile(t, filepath.Join(scopeDir(dir, "preview", scope), "latest.json"))
	}
	mainState, pr2State := stateOf("main"), stateOf("pr-2")
	mainReceipt, pr2Receipt := receiptOf("main"), receiptOf("pr-2")

	h.mustRun(dir, "destroy", "--pr", "1", "--branch", "feat/pr-1")

	if got := stateResources(t, dir, "preview", "pr-1"); len(got) != 0 {
		t.Errorf("pr-1 still has resources after destroy: %v", got)
	}
	if rec := latestReceipt(t, dir, "preview", "pr-1"); rec.Status != receipt.StatusDestroyed || len(rec.Ledger) != 0 {
		t.Errorf("pr-1 receipt after destroy: status %q, %d entries", rec.Status, len(rec.Ledger))
	}
	for scope, before := range map[string][2][]byte{"main": {mainState, mainReceipt}, "pr-2": {pr2State, pr2Receipt}} {
		if !bytes.Equal(stateOf(scope), before[0]) {
			t.Errorf("destroying pr-1 changed the state of %s", scope)
		}
		if !bytes.Equal(receiptOf(scope), before[1]) {
			t.Errorf("destroying pr-1 changed the receipt of %s", scope)
		}
	}

	again := h.mustRun(dir, "apply", "--branch", "main", "--json")
	env := again.envelope(t)
	res := env["result"].(map[string]any)
	if res["status"] != receipt.StatusUnchanged {
		t.Errorf("second apply of main: status %v, want %q", res["status"], receipt.StatusUnchanged)
	}
	if diff := cmp.Diff(map[string]any{"add": 0.0, "change": 0.0, "destroy": 0.0}, res["summary"]); diff != "" {
		t.Errorf("second apply of main summary (-want +got):\n%s", diff)
	}
	if !bytes.Equal(stateOf("main"), mainState) {
		t.Error("a second apply without changes rewrote the state of main")
	}

	// The user's files are as they were: no override or errored state left.
	if got := readFile(t, filepath.Join(dir, "main.tf")); !bytes.Equal(got, mainTF) {
		t.Error("main.tf was modified")
	}
	for _, leftover := range []string{"sponson_backend_override.tf", "errored.tfstate", "terraform.tfstate"} {
		if _, err := os.Stat(filepath.Join(dir, leftover)); err == nil {
			t.Errorf("%s was left in the configuration directory", leftover)
		}
	}
}

// TestE2EVarsAndJSON checks the flags people paste from engine commands and
// the envelope of each kind of outcome.
func TestE2EVarsAndJSON(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir(example)
	varFile := filepath.Join(dir, "large.tfvars")
	if err := os.WriteFile(varFile, []byte("tier = \"large\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := h.mustRun(dir, "apply", "--scope", "pr-3", "-var-file", varFile, "--json")
	if env := r.envelope(t); env["ok"] != true || env["command"] != "apply" {
		t.Errorf("envelope: %v", env)
	}
	db := stateResources(t, dir, "preview", "pr-3")["terraform_data.database"]
	if tier := dynamic(db["output"]).(map[string]any)["tier"]; tier != "large" {
		t.Errorf("-var-file did not reach the engine: tier %v", tier)
	}
	h.mustRun(dir, "apply", "--scope", "pr-3", "-var", "tier=medium")
	db = stateResources(t, dir, "preview", "pr-3")["terraform_data.database"]
	if tier := dynamic(db["output"]).(map[string]any)["tier"]; tier != "medium" {
		t.Errorf("-var did not reach the engine: tier %v", tier)
	}

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		exit int
		code string
	}{
		{"unknown flag", nil, []string{"apply", "--nope", "--json"}, 2, "USAGE"},
		{"bad pr", nil, []string{"apply", "--pr", "abc", "--json"}, 2, "CTX_NULL"},
		{"no context", nil, []string{"apply", "--json"}, 2, "CTX_NULL"},
		{"bad scope", nil, []string{"apply", "--scope", "../x", "--json"}, 2, "USAGE"},
		{"production unapproved", nil, []string{"apply", "--scope", "main", "--env", "production", "--approved-by", "  ", "--json"}, 2, "ENV_NOT_APPROVED"},
		{"engine missing", nil, []string{"apply", "--scope", "pr-4", "--engine", "/nonexistent/tofu", "--json"}, 1, "ENGINE_NOT_FOUND"},
		{"json from env", []string{"SPONSON_JSON=1"}, []string{"plan", "--pr", "0"}, 2, "CTX_NULL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.run(dir, tc.env, tc.args...)
			if r.exit != tc.exit || r.code(t) != tc.code {
				t.Errorf("exit %d code %q, want %d %q\nstdout:\n%s", r.exit, r.code(t), tc.exit, tc.code, r.stdout)
			}
			if env := r.envelope(t); env["ok"] != false || env["error"].(map[string]any)["hint"] == "" {
				t.Errorf("envelope: %v", env)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".sponson", "@stacks", "production")); err == nil {
		t.Error("a refused production run left something in the store")
	}
}

// TestE2EOwnBackend: a configuration with its own backend keeps it; each
// scope gets its own workspace, the run says plainly that its state writes
// are not fenced, and leases and receipts still live in the Sponson store.
func TestE2EOwnBackend(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/own-backend")
	r1 := h.mustRun(dir, "apply", "--scope", "pr-1", "-var", "name=one")
	if !strings.Contains(r1.stderr, `declares its own "local" backend`) || !strings.Contains(r1.stderr, "NOT fenced") {
		t.Errorf("the run did not say its state writes are unfenced:\n%s", r1.stderr)
	}
	h.mustRun(dir, "apply", "--scope", "pr-2", "-var", "name=two")
	for scope, want := range map[string]string{"pr-1": "one", "pr-2": "two"} {
		st := readFile(t, filepath.Join(dir, "states", "preview--"+scope, "terraform.tfstate"))
		if !bytes.Contains(st, []byte(`"input": {`)) || !bytes.Contains(st, []byte(want)) {
			t.Errorf("workspace of %s does not hold its resource:\n%s", scope, st)
		}
		if rec := latestReceipt(t, dir, "preview", scope); rec.Status != receipt.StatusApplied || len(rec.Ledger) != 1 {
			t.Errorf("%s receipt: %q with %d entries", scope, rec.Status, len(rec.Ledger))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sponson_backend_override.tf")); err == nil {
		t.Error("an override replaced the configuration's own backend")
	}
	pr2 := readFile(t, filepath.Join(dir, "states", "preview--pr-2", "terraform.tfstate"))
	h.mustRun(dir, "destroy", "--scope", "pr-1")
	if rec := latestReceipt(t, dir, "preview", "pr-1"); rec.Status != receipt.StatusDestroyed || len(rec.Ledger) != 0 {
		t.Errorf("pr-1 after destroy: %q with %d entries", rec.Status, len(rec.Ledger))
	}
	if got := readFile(t, filepath.Join(dir, "states", "preview--pr-2", "terraform.tfstate")); !bytes.Equal(got, pr2) {
		t.Error("destroying pr-1 changed pr-2's workspace")
	}
}

// TestE2EDestroyNothing: destroying a scope that was never applied, or is
// destroyed already, is a clear no-op that writes nothing.
func TestE2EDestroyNothing(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir(example)
	r := h.mustRun(dir, "destroy", "--scope", "pr-404")
	if !strings.Contains(r.stdout, "nothing to destroy") {
		t.Errorf("destroy of an unknown scope:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(scopeDir(dir, "preview", "pr-404"))); err == nil {
		t.Error("destroying an unknown scope wrote to the store")
	}
	h.mustRun(dir, "apply", "--scope", "pr-5")
	h.mustRun(dir, "destroy", "--scope", "pr-5")
	before := readFile(t, filepath.Join(scopeDir(dir, "preview", "pr-5"), "latest.json"))
	r = h.mustRun(dir, "destroy", "--scope", "pr-5", "--json")
	if res := r.envelope(t)["result"].(map[string]any); res["status"] != "nothing" {
		t.Errorf("second destroy: status %v", res["status"])
	}
	if !bytes.Equal(before, readFile(t, filepath.Join(scopeDir(dir, "preview", "pr-5"), "latest.json"))) {
		t.Error("a second destroy wrote a receipt")
	}
}
