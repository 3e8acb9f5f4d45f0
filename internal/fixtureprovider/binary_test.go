package fixtureprovider

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// testAccBinaryConfig uses the provider the way configurations of sponson's
// tests do: by source address, with the directory from FIXTURE_DIR.
const testAccBinaryConfig = `
terraform {
  required_providers {
    fixture = {
      source = "sponson/fixture"
    }
  }
}

resource "fixture_object" "app" {
  name   = "app"
  value  = "v1"
  parent = "vars"
}

resource "fixture_list_entry" "app" {
  list  = "vars"
  entry = fixture_object.app.id
}

data "fixture_object" "app" {
  name = fixture_object.app.name
}

output "id" {
  value = data.fixture_object.app.id
}
`

// TestAccBinaryUnderOpenTofu runs the built provider binary under the real
// engine through the CLI configuration of WriteCLIConfig, with no registry
// access: init, apply, a second init (the lock file must still match), and
// destroy. It runs with the acceptance tests (TF_ACC=1, the engine in
// TF_ACC_TERRAFORM_PATH).
func TestAccBinaryUnderOpenTofu(t *testing.T) {
	t.Parallel()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 and TF_ACC_TERRAFORM_PATH")
	}
	engine := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if engine == "" {
		t.Fatal("TF_ACC=1 needs TF_ACC_TERRAFORM_PATH, the path of the tofu binary")
	}

	binary := Build(t)
	cliConfig, err := WriteCLIConfig(t.TempDir(), binary)
	if err != nil {
		t.Fatalf("WriteCLIConfig: %v", err)
	}
	fixtures := t.TempDir()
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(testAccBinaryConfig), 0o644); err != nil {
		t.Fatal(err)
	}

	tf, err := tfexec.NewTerraform(work, engine)
	if err != nil {
		t.Fatal(err)
	}
	env := tfexec.CleanEnv(environ())
	env["TF_CLI_CONFIG_FILE"] = cliConfig
	env[EnvDir] = fixtures
	// Whatever the machine caches must not stand in for the mirror.
	delete(env, "TF_PLUGIN_CACHE_DIR")
	if err := tf.SetEnv(env); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	if err := tf.Init(ctx); err != nil {
		t.Fatalf("init: %v", err)
	}
	if err := tf.Apply(ctx); err != nil {
		t.Fatalf("apply: %v", err)
	}

	obj, err := ReadObject(fixtures, "app")
	if err != nil {
		t.Fatalf("the apply did not write the object: %v", err)
	}
	if obj.Value == nil || *obj.Value != "v1" || !uuidPattern.MatchString(obj.ID) {
		t.Errorf("objects/app.json = %+v, want value v1 and a UUID", obj)
	}
	entries, err := ReadList(fixtures, "vars")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(entries, []string{obj.ID}) {
		t.Errorf("lists/vars.json = %q, want the object's id %q", entries, obj.ID)
	}
	outputs, err := tf.Output(ctx)
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	var id string
	if err := json.Unmarshal(outputs["id"].Value, &id); err != nil || id != obj.ID {
		t.Errorf("output id = %s (%v), want %q", outputs["id"].Value, err, obj.ID)
	}

	// The lock file records the mirror's placeholder, not the binary, so a
	// later init (as every sponson run does) still finds it matching.
	lock, err := os.ReadFile(filepath.Join(work, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatalf("init wrote no lock file: %v", err)
	}
	if !strings.Contains(string(lock), `"`+MirrorVersion+`"`) {
		t.Errorf("the lock file does not record version %s:\n%s", MirrorVersion, lock)
	}
	if err := tf.Init(ctx); err != nil {
		t.Fatalf("second init: %v", err)
	}

	if err := tf.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if _, err := ReadObject(fixtures, "app"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("objects/app.json after destroy: %v, want it gone", err)
	}
	if entries, err := ReadList(fixtures, "vars"); err != nil || len(entries) != 0 {
		t.Errorf("lists/vars.json after destroy = %q (%v), want empty", entries, err)
	}
}

// environ is the test process's environment as a map, for tfexec.SetEnv,
// which replaces the whole environment.
func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
