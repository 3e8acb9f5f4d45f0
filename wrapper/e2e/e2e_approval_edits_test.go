package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// approvalEditsConfig is a production configuration over HashiCorp's local
// and random providers; stuck, when var.stuck is set, is a create that
// never ends (a run killed in it leaves an intent).
const approvalEditsConfig = `
terraform {
  required_providers {
    local  = { source = "hashicorp/local", version = "2.9.0" }
    random = { source = "hashicorp/random", version = "3.9.0" }
  }
}

variable "out" {
  type = string
}

variable "stuck" {
  type    = bool
  default = false
}

resource "local_file" "a" {
  filename = "${var.out}/a.txt"
  content  = "a"
}

resource "local_file" "b" {
  filename = "${var.out}/b.txt"
  content  = "b"
}

resource "random_id" "r" {
  byte_length = 4
}

resource "terraform_data" "stuck" {
  count = var.stuck ? 1 : 0
  provisioner "local-exec" {
    command = "sleep 300"
  }
}
`

// legacyConfig is a configuration whose state the engine keeps in its own
// local backend, for adopt.
const legacyConfig = `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "2.9.0" }
  }
}

variable "out" {
  type = string
}

resource "local_file" "legacy" {
  filename = "${var.out}/legacy.txt"
  content  = "legacy"
}
`

// approvalWorld is a production scope and what the test reads of it.
type approvalWorld struct {
	t   *testing.T
	h   *harness
	env []string
}

// scopeSnapshot is what a refused command must leave as it was: the
// scope's state, its latest receipt and its lease (holder and token: a
// refusal takes no lease).
type scopeSnapshot struct {
	state  []byte
	runID  string
	holder string
	token  int64
}

func (w *approvalWorld) snapshot(dir, scope string) scopeSnapshot {
	w.t.Helper()
	st, key := w.open(dir, scope)
	ctx := w.t.Context()
	var s scopeSnapshot
	var err error
	if s.state, err = st.ReadState(ctx, key); err != nil {
		w.t.Fatal(err)
	}
	rec, err := store.Latest(ctx, st, key)
	if err != nil {
		w.t.Fatal(err)
	}
	if rec != nil {
		s.runID = rec.RunID
	}
	l, err := st.ReadLease(ctx, key)
	if err != nil {
		w.t.Fatal(err)
	}
	s.holder, s.token = l.Holder, l.Token
	return s
}

func (w *approvalWorld) open(dir, scope string) (*filestore.Store, store.Key) {
	w.t.Helper()
	st, err := filestore.Open(filepath.Join(dir, ".sponson"))
	if err != nil {
		w.t.Fatal(err)
	}
	return st, store.Key{Stack: e2eStack, Environment: "production", Scope: scope}
}

// refused runs a command in production without an approver and checks
// that it is refused with ENV_NOT_APPROVED (exit 2), a hint naming the
// flag, and nothing of the scope changed.
func (w *approvalWorld) refused(dir, scope string, args ...string) {
	w.t.Helper()
	before := w.snapshot(dir, scope)
	r := w.h.run(dir, w.env, append(args, "--env", "production", "--scope", scope, "--json")...)
	if r.exit != 2 || r.code(w.t) != "ENV_NOT_APPROVED" {
		w.t.Fatalf("%s without an approver: exit %d %q, want 2 ENV_NOT_APPROVED\n%s\n%s", args[0], r.exit, r.code(w.t), r.stdout, r.stderr)
	}
	e, _ := r.envelope(w.t)["error"].(map[string]any)
	if hint, _ := e["hint"].(string); !strings.Contains(hint, "--approved-by") {
		w.t.Errorf("%s: the refusal's hint %q does not say to pass --approved-by", args[0], hint)
	}
	after := w.snapshot(dir, scope)
	if !bytes.Equal(after.state, before.state) || after.runID != before.runID || after.holder != before.holder || after.token != before.token {
		w.t.Fatalf("the refused %s changed the scope: receipt %s -> %s, lease %s/%d -> %s/%d, state changed %v",
			strings.Join(args, " "), before.runID, after.runID, before.holder, before.token, after.holder, after.token, !bytes.Equal(after.state, before.state))
	}
}

// approved runs a command in production with --approved-by alice and
// returns the scope's receipt after it, which must be new and name alice.
func (w *approvalWorld) approved(dir, scope string, args ...string) *receipt.Receipt {
	w.t.Helper()
	before := w.snapshot(dir, scope)
	r := w.h.run(dir, w.env, append(args, "--env", "production", "--scope", scope, "--approved-by", "alice", "--json")...)
	if r.exit != 0 {
		w.t.Fatalf("%s --approved-by alice: exit %d %q\n%s\n%s", strings.Join(args, " "), r.exit, r.code(w.t), r.stdout, r.stderr)
	}
	rec := w.latest(dir, scope)
	if rec.RunID == before.runID || rec.ApprovedBy != "alice" {
		w.t.Fatalf("%s: receipt %s (before %s) approved by %q, want a new receipt approved by alice", strings.Join(args, " "), rec.RunID, before.runID, rec.ApprovedBy)
	}
	return rec
}

func (w *approvalWorld) latest(dir, scope string) *receipt.Receipt {
	w.t.Helper()
	st, key := w.open(dir, scope)
	rec, err := store.Latest(w.t.Context(), st, key)
	if err != nil || rec == nil {
		w.t.Fatalf("the receipt of %s: %v, %v", key, rec, err)
	}
	return rec
}

// TestE2EApprovalEdits (issue 46 item 3): every command that changes what
// production owns outside a plan (unlock, force-unlock, resolve, state rm,
// mv and push, import, adopt) is refused without an approver
// (ENV_NOT_APPROVED, exit 2) before it leases or writes anything, and with
// one it succeeds and its receipt records the approver. Reading the state
// (list, pull) needs none.
func TestE2EApprovalEdits(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	mirror := realproviders.Install(t)
	cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(approvalEditsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &approvalWorld{t: t, h: h, env: []string{"TF_CLI_CONFIG_FILE=" + cfg, "TF_VAR_out=" + out}}
	w.approved(dir, "main", "apply")

	// A production apply killed in a create: its lease stays live (10m),
	// its receipt holds the create's intent.
	victim := h.command(dir, append(w.env, "TF_VAR_stuck=true"), "apply", "--env", "production", "--scope", "main", "--approved-by", "alice", "--lease-ttl", "10m", "--json")
	var victimErr lockedBuffer
	victim.Stderr = &victimErr
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = victim.Wait(); close(exited) }()
	waitFor(t, "the stuck create", func() bool {
		return strings.Contains(victimErr.String(), "terraform_data.stuck[0]: Provisioning with 'local-exec'")
	})
	waitFor(t, "the stuck create's intent", func() bool {
		st, key := w.open(dir, "main")
		rec, err := store.Latest(t.Context(), st, key)
		return err == nil && rec != nil && rec.Status == receipt.StatusRunning && slices.ContainsFunc(rec.Ledger, func(e receipt.Entry) bool {
			return e.Address == "terraform_data.stuck[0]" && e.CreatedBy == receipt.CreatedByIntent
		})
	})
	if err := syscall.Kill(-victim.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	holder := w.snapshot(dir, "main").holder
	if holder == "" {
		t.Fatal("the killed run's lease is not held")
	}

	w.refused(dir, "main", "unlock", "--reason", "stuck")
	w.refused(dir, "main", "force-unlock", holder, "--reason", "stuck")
	rec := w.approved(dir, "main", "force-unlock", holder, "--reason", "stuck")
	if rec.Unlocked == nil || rec.Unlocked.Holder != holder {
		t.Errorf("force-unlock's receipt: %+v, want the killed run %s ended", rec.Unlocked, holder)
	}

	w.refused(dir, "main", "resolve", "terraform_data.stuck[0]", "--gone")
	rec = w.approved(dir, "main", "resolve", "terraform_data.stuck[0]", "--gone")
	if len(rec.Settled) != 1 || rec.Settled[0].Outcome != receipt.SettledGone {
		t.Errorf("resolve's receipt settled %+v, want the intent gone", rec.Settled)
	}

	// A run stuck elsewhere holds the lease: unlock ends it.
	st, key := w.open(dir, "main")
	if _, err := st.Acquire(t.Context(), key, "run-stuck-elsewhere", time.Hour); err != nil {
		t.Fatal(err)
	}
	w.refused(dir, "main", "unlock", "--reason", "stuck")
	rec = w.approved(dir, "main", "unlock", "--reason", "stuck")
	if rec.Unlocked == nil || rec.Unlocked.Holder != "run-stuck-elsewhere" {
		t.Errorf("unlock's receipt: %+v, want run-stuck-elsewhere ended", rec.Unlocked)
	}

	// Reading needs no approver, and writes nothing.
	before := w.snapshot(dir, "main")
	w.h.mustRunEnv(dir, w.env, "state", "list", "--env", "production", "--scope", "main")
	if after := w.snapshot(dir, "main"); after.runID != before.runID || after.token != before.token {
		t.Errorf("state list wrote or leased: %+v -> %+v", before, after)
	}
	id, _ := stateResources(t, dir, "production", "main")["random_id.r"]["b64_url"].(string)
	if id == "" {
		t.Fatal("random_id.r has no b64_url in the state")
	}

	w.refused(dir, "main", "state", "rm", "local_file.a", "random_id.r")
	rec = w.approved(dir, "main", "state", "rm", "local_file.a", "random_id.r")
	if len(rec.Released) < 2 || rec.Command != "state rm" {
		t.Errorf("state rm's receipt: %s, released %+v", rec.Command, rec.Released)
	}

	w.refused(dir, "main", "state", "mv", "local_file.b", "local_file.c")
	rec = w.approved(dir, "main", "state", "mv", "local_file.b", "local_file.c")
	if !slices.ContainsFunc(rec.Ledger, func(e receipt.Entry) bool { return e.Address == "local_file.c" }) {
		t.Errorf("state mv's ledger: %+v, want local_file.c", rec.Ledger)
	}

	pulled := filepath.Join(t.TempDir(), "pulled.tfstate")
	if err := os.WriteFile(pulled, []byte(w.h.mustRunEnv(dir, w.env, "state", "pull", "--env", "production", "--scope", "main").stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	w.refused(dir, "main", "state", "push", pulled)
	if rec = w.approved(dir, "main", "state", "push", pulled); rec.Command != "state push" {
		t.Errorf("state push's receipt is of %q", rec.Command)
	}

	w.refused(dir, "main", "import", "random_id.r", id)
	rec = w.approved(dir, "main", "import", "random_id.r", id)
	if !slices.ContainsFunc(rec.Ledger, func(e receipt.Entry) bool { return e.Address == "random_id.r" && e.ID == id }) {
		t.Errorf("import's ledger: %+v, want random_id.r %s", rec.Ledger, id)
	}

	// adopt: the state the engine keeps in its own local backend, into a
	// new production scope.
	legacy := t.TempDir()
	if err := os.WriteFile(filepath.Join(legacy, "main.tf"), []byte(legacyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	bareEngine(t, h, legacy, w.env, "init", "-input=false")
	bareEngine(t, h, legacy, w.env, "apply", "-auto-approve", "-input=false")
	w.refused(legacy, "legacy", "adopt")
	if rec = w.approved(legacy, "legacy", "adopt"); rec.AdoptedFrom == nil || len(rec.Ledger) != 1 {
		t.Errorf("adopt's receipt: adopted from %+v, ledger %+v", rec.AdoptedFrom, rec.Ledger)
	}
}
