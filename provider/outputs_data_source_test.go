package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sponson/terraform-provider-sponson/internal/stackoutputs"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// networkStack is the stack of stacks/network in the test's repository,
// whose origin is github.com/acme/infra.
const networkStack = "github.com/acme/infra//stacks/network"

// outputsRepo makes a git repository with a stack in stacks/network and
// returns the directory of stacks/app, where the provider runs.
func outputsRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet", "-b", "main", root}, {"-C", root, "remote", "add", "origin", "git@github.com:acme/infra.git"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, d := range []string{"stacks/network", "stacks/app"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "stacks/network/main.tf"), []byte(`resource "sponson_scope" "this" {}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "stacks/app")
}

// writeState stores state as the state of key, under a lease of its own.
func writeState(t *testing.T, dir string, key store.Key, state string) {
	t.Helper()
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	g, err := st.Acquire(ctx, key, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteState(ctx, g.Lease, []byte(state)); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, g.Lease); err != nil {
		t.Fatal(err)
	}
}

func networkState(serial int, vpc string) string {
	return fmt.Sprintf(`{"version": 4, "serial": %d, "lineage": "l", "outputs": {
  "vpc_id": {"value": %q, "type": "string"},
  "cidrs": {"value": ["10.0.0.0/16", "10.1.0.0/16"], "type": ["list", "string"]},
  "token": {"value": "s3cr3t", "type": "string", "sensitive": true}
}, "resources": []}`, serial, vpc)
}

func testAccOutputsConfig(extra string) string {
	return `data "sponson_outputs" "net" {
  stack = "stacks/network"
}
` + extra
}

// sponson_outputs reads another stack's outputs in the run's scope, falls
// back to main where the stack has no state in it, reads the scope it is
// told to, keeps sensitive outputs sensitive, and fails clearly on a stack
// without state and on an output the stack does not have.
func TestAccOutputsDataSource(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext) // scope pr-42
	storeDir := t.TempDir()
	useStore(t, storeDir)
	app := outputsRepo(t)
	writeState(t, storeDir, store.Key{Stack: networkStack, Environment: "preview", Scope: "main"}, networkState(3, "vpc-main"))

	check := func(scope, vpc string, serial int64) []statecheck.StateCheck {
		at := func(p ...string) tfjsonpath.Path {
			out := tfjsonpath.New(p[0])
			for _, s := range p[1:] {
				out = out.AtMapKey(s)
			}
			return out
		}
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.sponson_outputs.net", at("stack_name"), knownvalue.StringExact(networkStack)),
			statecheck.ExpectKnownValue("data.sponson_outputs.net", at("read_scope"), knownvalue.StringExact(scope)),
			statecheck.ExpectKnownValue("data.sponson_outputs.net", at("serial"), knownvalue.Int64Exact(serial)),
			statecheck.ExpectKnownValue("data.sponson_outputs.net", at("values", "vpc_id"), knownvalue.StringExact(vpc)),
			statecheck.ExpectKnownValue("data.sponson_outputs.net", at("values", "cidrs"),
				knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.0.0.0/16"), knownvalue.StringExact("10.1.0.0/16")})),
			statecheck.ExpectKnownValue("data.sponson_outputs.net", at("sensitive_values", "token"), knownvalue.StringExact("s3cr3t")),
			statecheck.ExpectKnownValue("data.sponson_outputs.net", at("planned"), knownvalue.Bool(false)),
			statecheck.ExpectKnownValue("data.sponson_outputs.net", at("provisional"), knownvalue.ListExact([]knownvalue.Check{})),
			statecheck.ExpectKnownOutputValue("vpc", knownvalue.StringExact(vpc)),
		}
	}
	uses := `output "vpc" {
  value = data.sponson_outputs.net.values.vpc_id
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactoriesFor(&sponsonProvider{version: "test", resolver: processResolver{dir: app}, workDir: app}),
		Steps: []resource.TestStep{
			{
				// pr-42 has no state of the network stack: main's is read.
				Config:            testAccOutputsConfig(uses),
				ConfigStateChecks: check("main", "vpc-main", 3),
			},
			{
				PreConfig: func() {
					writeState(t, storeDir, store.Key{Stack: networkStack, Environment: "preview", Scope: "pr-42"}, networkState(1, "vpc-pr"))
				},
				Config:            testAccOutputsConfig(uses),
				ConfigStateChecks: check("pr-42", "vpc-pr", 1),
			},
			{
				Config: `data "sponson_outputs" "net" {
  stack = "` + networkStack + `"
  scope = "main"
}
` + uses,
				ConfigStateChecks: check("main", "vpc-main", 3),
			},
			{
				// A sensitive output stays sensitive: the engine refuses to
				// show it in an output that is not marked sensitive.
				Config:      testAccOutputsConfig("output \"token\" {\n  value = data.sponson_outputs.net.sensitive_values.token\n}\n"),
				ExpectError: regexp.MustCompile(`(?i)sensitive`),
			},
			{
				Config:      testAccOutputsConfig("output \"nope\" {\n  value = data.sponson_outputs.net.values.subnet_id\n}\n"),
				ExpectError: regexp.MustCompile(`subnet_id`),
			},
			{
				Config: `data "sponson_outputs" "net" {
  stack = "stacks/network"
  scope = "pr-7"
}
`,
				ExpectError: regexp.MustCompile(`(?s)Stack Has No State.*` + regexp.QuoteMeta(networkStack) + `.*scope pr-7`),
			},
			{
				Config: `data "sponson_outputs" "db" {
  stack = "stacks/db"
}
`,
				ExpectError: regexp.MustCompile(`(?s)Stack Has No State.*stacks/db.*scope pr-42 nor in\s+main`),
			},
		},
	})
}

// In a plan of many stacks, sponson_outputs gives the planned outputs the
// run handed over for its own scope: the known ones as planned, those known
// only after the upstream's apply with their applied values, listed as
// provisional. A read of another scope takes the store's.
func TestAccOutputsDataSource_planned(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext) // scope pr-42
	storeDir, planned := t.TempDir(), t.TempDir()
	useStore(t, storeDir)
	t.Setenv(stackoutputs.EnvVar, planned)
	app := outputsRepo(t)
	writeState(t, storeDir, store.Key{Stack: networkStack, Environment: "preview", Scope: "main"}, networkState(3, "vpc-main"))
	if err := stackoutputs.Write(planned, stackoutputs.Planned{Stack: networkStack, Environment: "preview", Scope: "pr-42",
		Outputs: map[string]stackoutputs.Output{
			"cidrs": {Value: json.RawMessage(`["10.9.0.0/16"]`), Type: json.RawMessage(`["list","string"]`)},
			"token": {Value: json.RawMessage(`"n3w"`), Type: json.RawMessage(`"string"`), Sensitive: true},
		},
		Unknown: []string{"subnet", "vpc_id"},
	}); err != nil {
		t.Fatal(err)
	}
	at := func(p ...string) tfjsonpath.Path {
		out := tfjsonpath.New(p[0])
		for _, s := range p[1:] {
			out = out.AtMapKey(s)
		}
		return out
	}
	const addr = "data.sponson_outputs.net"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactoriesFor(&sponsonProvider{version: "test", resolver: processResolver{dir: app}, workDir: app}),
		Steps: []resource.TestStep{
			{
				Config: testAccOutputsConfig(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, at("planned"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, at("read_scope"), knownvalue.StringExact("pr-42")),
					statecheck.ExpectKnownValue(addr, at("serial"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(addr, at("provisional"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("subnet"), knownvalue.StringExact("vpc_id")})),
					statecheck.ExpectKnownValue(addr, at("values", "cidrs"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.9.0.0/16")})),
					// Known only after network's apply: main's applied value.
					statecheck.ExpectKnownValue(addr, at("values", "vpc_id"), knownvalue.StringExact("vpc-main")),
					statecheck.ExpectKnownValue(addr, at("values", "subnet"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, at("sensitive_values", "token"), knownvalue.StringExact("n3w")),
				},
			},
			{
				Config: `data "sponson_outputs" "net" {
  stack = "stacks/network"
  scope = "main"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, at("planned"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, at("values", "vpc_id"), knownvalue.StringExact("vpc-main")),
				},
			},
		},
	})
}

// The in-process provider reads through the run's own store, whatever the
// environment names.
func TestOutputsThroughRunStore(t *testing.T) {
	t.Parallel()
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := &providerData{states: st, records: newScopeStore(func(string) string { return "" }, nil, nil, t.TempDir())}
	got, release, diags := d.stateReader(context.Background())
	if diags.HasError() {
		t.Fatal(diags)
	}
	release()
	if got != StateReader(st) {
		t.Errorf("stateReader = %v, want the run's store", got)
	}
}
