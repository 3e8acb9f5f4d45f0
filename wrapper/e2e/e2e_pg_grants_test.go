package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/fixtureprovider"
	"github.com/sponson/terraform-provider-sponson/internal/realproviders"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// grantsConfig writes one file with HashiCorp's local provider.
const grantsConfig = `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "2.9.0" }
  }
}

variable "out" {
  type = string
}

resource "local_file" "f" {
  filename = "${var.out}/f.txt"
  content  = "kept"
}
`

// TestE2EPostgresGrantsSiblingPrefixes (issue 46 item 4): the SQL
// `sponson grants` prints for two repositories whose names share a bare
// prefix (github.com/acme/infra and github.com/acme/infra-secrets),
// applied for real as the schema's owner, with a real engine and
// hashicorp/local. Each role applies its own stack; each one's plan,
// apply and destroy in the other's stack fail with STORE_PERMISSION (no
// longer "nothing to destroy", nor, for infra, a destroy of infra-secrets'
// file), and the victim's file, state and receipt are left as they were.
func TestE2EPostgresGrantsSiblingPrefixes(t *testing.T) {
	h := e2e(t)
	p := newPgE2E(t)
	mirror := realproviders.Install(t)
	cfg, err := fixtureprovider.WriteCLIConfig(t.TempDir(), fixtureprovider.Build(t), mirror)
	if err != nil {
		t.Fatal(err)
	}
	type repo struct {
		role, prefix, stack, url, out, dir string
	}
	repos := []*repo{
		{role: "ci_infra", prefix: "github.com/acme/infra", stack: "github.com/acme/infra//app"},
		{role: "ci_secrets", prefix: "github.com/acme/infra-secrets", stack: "github.com/acme/infra-secrets//db"},
	}
	ctx := t.Context()
	for _, r := range repos {
		if err := p.srv.Exec(ctx, p.db, "CREATE ROLE "+r.role+" LOGIN"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, q := range []struct{ db, sql string }{{p.db, "DROP OWNED BY " + r.role}, {"postgres", "DROP ROLE IF EXISTS " + r.role}} {
				if err := p.srv.Exec(context.Background(), q.db, q.sql); err != nil {
					t.Logf("%s: %v", q.sql, err)
					return
				}
			}
		})
		sql := h.mustRunEnv(t.TempDir(), nil, "grants", "--store", p.url, "--for", r.role, "--stack-prefix", r.prefix).stdout
		if err := p.srv.Exec(ctx, p.db, sql); err != nil {
			t.Fatalf("the SQL of sponson grants for %s: %v\n%s", r.role, err, sql)
		}
		r.url = strings.Replace(p.url, "postgres://postgres@", "postgres://"+r.role+"@", 1)
		r.out, r.dir = t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(r.dir, "main.tf"), []byte(grantsConfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := func(r *repo) []string { return []string{"TF_CLI_CONFIG_FILE=" + cfg, "TF_VAR_out=" + r.out} }
	for _, r := range repos {
		h.mustRunEnv(r.dir, env(r), "apply", "--store", r.url, "--stack", r.stack, "--scope", "pr-1")
	}
	runIDs := map[string]string{}
	for _, r := range repos {
		rec, err := p.check.LatestReceipt(ctx, store.Key{Stack: r.stack, Environment: "preview", Scope: "pr-1"})
		if err != nil || rec == nil {
			t.Fatalf("%s's receipt: %v, %v", r.role, rec, err)
		}
		runIDs[r.stack] = rec.RunID
	}
	for i, r := range repos {
		victim := repos[1-i]
		for _, cmd := range []string{"plan", "apply", "destroy"} {
			res := h.run(r.dir, env(r), cmd, "--store", r.url, "--stack", victim.stack, "--scope", "pr-1", "--json")
			if res.exit == 0 || res.code(t) != "STORE_PERMISSION" {
				t.Errorf("%s's %s in %s: exit %d %q, want STORE_PERMISSION\n%s\n%s", r.role, cmd, victim.stack, res.exit, res.code(t), res.stdout, res.stderr)
			} else if !strings.Contains(res.stdout, "--for "+r.role+" --stack-prefix") {
				t.Errorf("%s's %s in %s: the refusal does not name the grant to ask for:\n%s", r.role, cmd, victim.stack, res.stdout)
			}
		}
	}
	for _, r := range repos {
		rec, err := p.check.LatestReceipt(ctx, store.Key{Stack: r.stack, Environment: "preview", Scope: "pr-1"})
		if err != nil || rec == nil || rec.RunID != runIDs[r.stack] {
			t.Errorf("%s's receipt after the other's attempts: %v, %v; want run %s", r.role, rec, err, runIDs[r.stack])
		}
		if b, err := os.ReadFile(filepath.Join(r.out, "f.txt")); err != nil || string(b) != "kept" {
			t.Errorf("%s's file after the other's attempts: %q, %v", r.role, b, err)
		}
	}
}
