package e2e_test

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
)

// TestE2EMissingStateKeyRefusedFirst: a git store without its state key (a
// CI secret that was never created expands to "") refuses an apply before
// the engine runs: no resource is created whose state could not be kept,
// and nothing is left in the configuration directory.
func TestE2EMissingStateKeyRefusedFirst(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/envdump")
	_, flag, _ := gitRemote(t)
	marks := t.TempDir()
	r := h.run(dir, []string{"SPONSON_STATE_KEY="}, "apply", flag, "--scope", "pr-1", "--json", "-var", "dir="+marks)
	if r.exit != 2 || r.code(t) != "USAGE" {
		t.Fatalf("apply without a state key: exit %d %q, want 2 USAGE\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "Initializing") {
		t.Errorf("the engine ran:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(marks, "env")); err == nil {
		t.Error("the provisioner ran: a resource was created")
	}
	for _, left := range []string{"errored.tfstate", "sponson_backend_override.tf"} {
		if _, err := os.Stat(filepath.Join(dir, left)); err == nil {
			t.Errorf("%s was left in the configuration directory", left)
		}
	}
}

// TestE2EStateKeyPerEnvironment: production's state is sealed with
// SPONSON_STATE_KEY_PRODUCTION, which a job holding only the preview key
// cannot open; and no state key reaches the engine's environment.
func TestE2EStateKeyPerEnvironment(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/envdump")
	_, flag, _ := gitRemote(t)
	marks := t.TempDir()
	prodKey := hex.EncodeToString([]byte(strings.Repeat("p", 32)))
	previewKey := hex.EncodeToString([]byte(strings.Repeat("v", 32)))
	env := []string{"SPONSON_STATE_KEY=" + previewKey, "SPONSON_STATE_KEY_PRODUCTION=" + prodKey}
	if r := h.run(dir, env, "apply", flag, "--env", "production", "--approved-by", "alice", "--scope", "main", "-var", "dir="+marks); r.exit != 0 || !strings.Contains(r.stdout, "1 added") {
		t.Fatalf("production apply: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	t.Logf("marks %s", marks)
	dumped, err := os.ReadFile(filepath.Join(marks, "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{prodKey, previewKey, "SPONSON_STATE_KEY"} {
		if strings.Contains(string(dumped), secret) {
			t.Errorf("the engine's environment holds %q", secret)
		}
	}
	if r := h.run(dir, env, "output", flag, "--env", "production", "--scope", "main", "input"); r.exit != 0 || !strings.Contains(r.stdout, "dumped") {
		t.Errorf("output with production's key: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	previewOnly := []string{"SPONSON_STATE_KEY=" + previewKey}
	if r := h.run(dir, previewOnly, "output", flag, "--env", "production", "--scope", "main", "input"); r.exit == 0 {
		t.Errorf("a job with only the preview key read production's state:\n%s", r.stdout)
	}
}

// TestE2EWrongStateKeyRefusedFirst (issue 28 item 4): a state sealed with
// one key and a command given another is refused before the lease and the
// engine, naming the keys by their ids, on each store that seals states
// (git and S3) and for each command that reads or writes the state; the
// scope's lease stays free.
func TestE2EWrongStateKeyRefusedFirst(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	right, wrong := strings.Repeat("1", 64), strings.Repeat("2", 64)
	_, gitFlag, _ := gitRemote(t)
	gw := gwtest.Start(t)
	for _, st := range []struct {
		name  string
		store []string
		env   []string
	}{
		{"git", []string{gitFlag}, nil},
		{"s3", []string{"--store", gw.StoreURL("keys")}, gw.RootEnv()},
	} {
		t.Run(st.name, func(t *testing.T) {
			dir := h.workdir("testdata/envdump")
			marks := t.TempDir()
			withKey := func(key string) []string { return append(append([]string{}, st.env...), "SPONSON_STATE_KEY="+key) }
			h.mustRunEnv(dir, withKey(right), append(append([]string{"apply"}, st.store...), "--scope", "pr-1", "-var", "dir="+marks)...)
			if err := os.Remove(filepath.Join(marks, "env")); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range [][]string{{"plan"}, {"apply"}, {"destroy"}, {"output"}, {"state", "list"}, {"state", "rm", "terraform_data.dump"}} {
				args := append(append(append([]string{}, cmd...), st.store...), "--scope", "pr-1", "--json")
				if cmd[0] == "plan" || cmd[0] == "apply" || cmd[0] == "destroy" {
					args = append(args, "-var", "dir="+marks)
				}
				r := h.run(dir, withKey(wrong), args...)
				if r.exit != 2 || r.code(t) != "USAGE" || !strings.Contains(r.stdout, "encrypted with key") {
					t.Errorf("%s with another key: exit %d %q, want 2 USAGE naming the key\n%s\n%s", strings.Join(cmd, " "), r.exit, r.code(t), r.stdout, r.stderr)
				}
				if strings.Contains(r.stderr, "Initializing") {
					t.Errorf("%s: the engine ran:\n%s", strings.Join(cmd, " "), r.stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(marks, "env")); err == nil {
				t.Error("the provisioner ran again under the wrong key")
			}
			// The lease is free and the state whole: the right key's run goes
			// ahead at once and finds the object.
			r := h.mustRunEnv(dir, withKey(right), append(append([]string{"state", "list"}, st.store...), "--scope", "pr-1")...)
			if !strings.Contains(r.stdout, "terraform_data.dump") {
				t.Errorf("after the refusals the state lacks the object:\n%s", r.stdout)
			}
			h.mustRunEnv(dir, withKey(right), append(append([]string{"apply"}, st.store...), "--scope", "pr-1", "-var", "dir="+marks)...)
		})
	}
}
