package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// wholeAdopted are the creates of testdata/wholeadopt whose objects an
// import and the plan's values restore whole (settle.ImportPlanned), or
// the id and the plan's values are (settle.Write: null_resource and
// random_pet have no import).
var wholeAdopted = []string{"terraform_data.obj[0]", "terraform_data.obj[1]", "terraform_data.obj[2]",
	"null_resource.n", "random_string.s", "random_uuid.u", "random_integer.i", "random_pet.p", "random_id.d", "time_static.t"}

// wholeDropped are its state-only creates that nothing restores (a key
// only the state held): settled as not created.
var wholeDropped = []string{"tls_private_key.k"}

// wholeMade are the files the create-time provisioners make in out.
var wholeMade = []string{"made-0", "made-1", "made-2", "made-null"}

// TestE2EKilledCompletionsAreAdoptedWhole is issue 48's first finding:
// three terraform_data (input, triggers_replace = count.index, a create-
// and a destroy-time local-exec reading self.input), beside the other
// state-only and in-place types of the real providers, all complete; the
// whole job is SIGKILLed while a gate after them runs, before the engine
// wrote its state. The next apply adopts each completed object whole (its
// plan changes none of them: no replacement, no destroy-time provisioner
// reading a null input), settles what no import restores as not created,
// says that the gate's provisioners run again, and a destroy then removes
// everything, the provisioners' files included.
func TestE2EKilledCompletionsAreAdoptedWhole(t *testing.T) {
	e2e(t)
	for _, storeName := range []string{"file", "git"} {
		t.Run(storeName, func(t *testing.T) {
			h := e2e(t)
			var out string
			var c *chainWorld
			var v *victim
			for round := 1; ; round++ {
				c, v = victimAtGate(t, func() *chainWorld {
					mirror := realproviders.Install(t)
					c := newChainWorld(t, h, storeName)
					cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
					if err != nil {
						t.Fatal(err)
					}
					out = t.TempDir()
					c.dir = h.workdir("testdata/wholeadopt")
					c.env = append(c.env, "TF_CLI_CONFIG_FILE="+cfg, "TF_VAR_out="+out)
					return c
				}, "--lease-ttl", "2s")
				if err := syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				<-v.exited
				waitFor(t, "the killed run's provisioner to end", func() bool { return !processWithArg(c.marks + "/open") })
				// The engine writes its state every 20 s: on a loaded
				// machine it may have written it before the kill, and
				// then nothing is left to adopt. Such a round checks
				// nothing; the next starts again in a fresh world.
				state := h.run(c.dir, c.env, append([]string{"state", "list"}, c.where...)...)
				if !strings.Contains(state.stdout, "terraform_data.obj") {
					break
				}
				if round == leaseRounds {
					t.Fatalf("in %d rounds the engine wrote its state before the kill:\n%s", round, state.stdout)
				}
				t.Logf("round %d: the engine wrote its state before the kill; again in a fresh world", round)
			}
			killed := c.latest()
			t.Logf("the killed run's checkpoint: status %s, completed %+v", killed.Status, killed.Completed)
			c.open()
			summaryFile := filepath.Join(t.TempDir(), "summary.md")
			r := h.run(c.dir, c.env, c.args("apply", "--wait", "--json", "--summary", summaryFile)...)
			rec := c.latest()
			t.Logf("settled: %+v", rec.Settled)
			if r.exit != 0 {
				t.Fatalf("the apply after the kill: exit %d %s\n%s\n%s\nthe killed run:\n%s", r.exit, r.code(t), r.stdout, r.stderr, v.out.String())
			}
			got := outcomes(rec.Settled)
			for _, addr := range wholeAdopted {
				if s := got[addr]; s.Outcome != receipt.SettledAdopted {
					t.Errorf("%s settled %+v, want adopted", addr, s)
				}
			}
			for _, addr := range wholeDropped {
				if s := got[addr]; s.Outcome != receipt.SettledDropped || s.Reason != receipt.ReasonStateOnly {
					t.Errorf("%s settled %+v, want not created (state only)", addr, s)
				}
			}
			if s := got["local_file.f"]; s.Outcome != receipt.SettledRewritten || !strings.Contains(s.Rerun, "written again in place") {
				t.Errorf("local_file.f settled %+v, want rewritten in place, said so", s)
			}
			gate := got["terraform_data.gate"]
			if gate.Outcome != receipt.SettledDropped || !strings.Contains(gate.Rerun, "provisioners run again") {
				t.Errorf("the gate settled %+v, want not created, its provisioners run again", gate)
			}
			for _, say := range []string{"terraform_data.gate is created again and its provisioners run again", "local_file.f was written again in place"} {
				if !strings.Contains(r.stderr, say) {
					t.Errorf("the apply's output does not say %q:\n%s", say, r.stderr)
				}
			}
			// Said in every place a person looks: the summary, status.
			if md := string(readFile(t, summaryFile)); !strings.Contains(md, "gate is created again and its provisioners run again") {
				t.Errorf("the summary does not say the gate's provisioners run again:\n%s", md)
			}
			store := c.where[2:]
			st := h.run(c.dir, c.env, append([]string{"status", "--json"}, store...)...)
			if !strings.Contains(st.stdout, `"reran"`) || !strings.Contains(st.stdout, "terraform_data.gate is created again") {
				t.Errorf("status --json does not list what ran again:\n%s\n%s", st.stdout, st.stderr)
			}
			st = h.run(c.dir, c.env, append([]string{"status"}, store...)...)
			if !strings.Contains(st.stdout, "ran again after a killed run: local_file.f was written again in place") {
				t.Errorf("status does not say what ran again:\n%s\n%s", st.stdout, st.stderr)
			}
			// Created again: the gate and what nothing restores, and
			// local_file.f in place. Nothing adopted is replaced.
			sum, _ := r.envelope(t)["result"].(map[string]any)["summary"].(map[string]any)
			if want := float64(len(wholeDropped) + 2); sum["add"] != want || sum["change"] != float64(0) || sum["destroy"] != float64(0) {
				t.Errorf("the apply after the kill planned %v, want %v to add and nothing changed or destroyed", sum, want)
			}
			plan := h.run(c.dir, c.env, c.args("plan", "--json")...)
			if sum, _ := plan.envelope(t)["result"].(map[string]any)["summary"].(map[string]any); plan.exit != 0 || sum["add"] != float64(0) || sum["change"] != float64(0) || sum["destroy"] != float64(0) {
				t.Errorf("the plan after the recovery: exit %d, %v, want no change\n%s\n%s", plan.exit, sum, plan.stdout, plan.stderr)
			}
			for _, name := range append(wholeMade, "f.txt") {
				if _, err := os.Stat(filepath.Join(out, name)); err != nil {
					t.Errorf("after the recovery: %v", err)
				}
			}
			d := h.run(c.dir, c.env, c.args("destroy", "--json")...)
			if d.exit != 0 {
				t.Fatalf("the destroy: exit %d %s\n%s\n%s", d.exit, d.code(t), d.stdout, d.stderr)
			}
			if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) != 0 {
				t.Errorf("after the destroy, %v are left", left)
			}
		})
	}
}
