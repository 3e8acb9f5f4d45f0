package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

func TestParseScopeID(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		id              string
		wantEnvironment string
		wantScope       string
		wantErr         bool
	}{
		"pull request":      {id: "preview/pr-42", wantEnvironment: "preview", wantScope: "pr-42"},
		"branch":            {id: "staging/branch-feat-Search", wantEnvironment: "staging", wantScope: "branch-feat-Search"},
		"no slash":          {id: "pr-42", wantErr: true},
		"empty environment": {id: "/pr-42", wantErr: true},
		"empty scope":       {id: "preview/", wantErr: true},
		"extra segment":     {id: "preview/pr-42/x", wantErr: true},
		"traversal":         {id: "preview/..", wantErr: true},
		"empty":             {id: "", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			environment, scope, err := parseScopeID(tt.id)

			if (err != nil) != tt.wantErr {
				t.Fatalf("parseScopeID(%q) error = %v, want error %v", tt.id, err, tt.wantErr)
			}
			got := [2]string{environment, scope}
			if diff := cmp.Diff([2]string{tt.wantEnvironment, tt.wantScope}, got); diff != "" {
				t.Errorf("parseScopeID(%q) (-want +got):\n%s", tt.id, diff)
			}
			if err == nil && scopeID(environment, scope) != tt.id {
				t.Errorf("scopeID does not give back %q", tt.id)
			}
		})
	}
}

// The tests below set variables with t.Setenv, so none is parallel.

func TestAccScopeResource_basic(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionCreate),
						// The wrapper reads the scope from the plan.
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("name"), knownvalue.StringExact("pr-42")),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("predecessor"), knownvalue.StringExact("branch-feat-search")),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("id"), knownvalue.StringExact("preview/pr-42")),
					},
				},
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				ResourceName:      "sponson_scope.this",
				ImportState:       true,
				ImportStateVerify: true,
			},
		},
	})
}

// after records the stacks a run of many orders before this one; changing
// it updates the scope in place, and a value that names no stack is refused.
func TestAccScopeResource_after(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	config := func(after string) string {
		return "resource \"sponson_scope\" \"this\" {\n  after = " + after + "\n}\n"
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config(`["../outside"]`),
				ExpectError: regexp.MustCompile(`is not a stack directory or name`),
			},
			{
				Config: config(`["stacks/network"]`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("after"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("stacks/network")})),
				},
			},
			{
				Config: config(`["stacks/network", "github.com/acme/infra//stacks/db"]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionUpdate)},
				},
			},
		},
	})
}

// urlOutput records the output that holds the scope's address, for the
// wrapper to read from the plan; changing it updates the scope in place, and
// a blank name is refused.
func TestAccScopeResource_urlOutput(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	config := func(name string) string {
		return fmt.Sprintf("resource \"sponson_scope\" \"this\" {\n  url_output = %q\n}\n", name)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config(" "),
				ExpectError: regexp.MustCompile(`Give the name of a root\s+module\s+output`),
			},
			{
				Config: config("url"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("url_output"), knownvalue.StringExact("url")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("url_output"), knownvalue.StringExact("url")),
				},
			},
			{
				Config: config("preview_url"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionUpdate)},
				},
			},
		},
	})
}

func TestAccScopeResource_otherScopeReplaces(t *testing.T) {
	isolateContext(t)
	onMain := runctx.Context{Stack: "acme/app", Environment: "preview", Scope: "main", Branch: "main", Source: runctx.SourceGit}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig:         func() { handOver(t, githubContext) },
				Config:            testAccScopeResourceConfig(),
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				// The same configuration applied on main is another scope.
				PreConfig: func() { handOver(t, onMain) },
				Config:    testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("name"), knownvalue.StringExact("main")),
					},
				},
				ConfigStateChecks: expectScope("preview", "main", knownvalue.Null()),
			},
		},
	})
}

func TestAccScopeResource_environment(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            testAccScopeResourceConfigEnvironment("staging"),
				ConfigStateChecks: expectScope("staging", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				Config: testAccScopeResourceConfigEnvironment("qa"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionDestroyBeforeCreate),
					},
				},
				ConfigStateChecks: expectScope("qa", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				// Unset, the environment follows the run.
				Config: testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("environment"), knownvalue.StringExact("preview")),
					},
				},
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
			{
				// The run moves to production: the default follows it.
				PreConfig: func() {
					production := githubContext
					production.Environment = "production"
					handOver(t, production)
				},
				Config: testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionDestroyBeforeCreate),
					},
				},
				ConfigStateChecks: expectScope("production", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
		},
	})
}

func TestAccScopeResource_invalidEnvironment(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      testAccScopeResourceConfigEnvironment("../prod"),
				ExpectError: regexp.MustCompile(`Invalid Name`),
			},
		},
	})
}

func TestAccScopeResource_importRefused(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccScopeResourceConfig(),
			},
			{
				ResourceName:  "sponson_scope.this",
				ImportState:   true,
				ImportStateId: "preview/pr-7",
				ExpectError:   regexp.MustCompile(`Import Of Another Scope Refused`),
			},
			{
				ResourceName:  "sponson_scope.this",
				ImportState:   true,
				ImportStateId: "pr-42",
				ExpectError:   regexp.MustCompile(`Invalid Import ID`),
			},
		},
	})
}

func TestAccScopeResource_noContext(t *testing.T) {
	isolateContext(t)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactories(t.TempDir()),
		Steps: []resource.TestStep{
			{
				Config:      testAccScopeResourceConfig(),
				ExpectError: regexp.MustCompile(`(?s)Run Context Not Decided.*CTX_NULL:`),
			},
			{
				PreConfig:         func() { handOver(t, githubContext) },
				Config:            testAccScopeResourceConfig(),
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
			},
		},
	})
}

// TestAccScopeResource_ownLease is plain `tofu apply`: every write takes the
// scope lease in the store the provider block names, and releases it.
func TestAccScopeResource_ownLease(t *testing.T) {
	isolateContext(t)
	t.Setenv(runctx.EnvBranch, "feat/x")
	t.Setenv(runctx.EnvPullRequest, "7")
	dir := t.TempDir()
	envDir := t.TempDir()
	useStore(t, envDir) // the store attribute wins over SPONSON_STORE
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-7"}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactories(t.TempDir()),
		Steps: []resource.TestStep{
			{
				Config:            testAccScopeResourceConfigStore("file://" + dir),
				ConfigStateChecks: expectScope("preview", "pr-7", knownvalue.StringExact("branch-feat-x")),
				Check: resource.ComposeAggregateTestCheckFunc(
					testAccCheckScopeRecord(dir, key, scopeRecord{Environment: "preview", Name: "pr-7", Predecessor: "branch-feat-x"}, ownHolderPat),
					// Released, and the grant advanced the token.
					testAccCheckLease(dir, key, "", 1),
					testAccCheckNoLease(envDir, key),
				),
			},
			{
				// Another head branch changes the predecessor: an update,
				// under a new lease.
				PreConfig: func() { t.Setenv(runctx.EnvBranch, "feat/y") },
				Config:    testAccScopeResourceConfigStore("file://" + dir),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionUpdate),
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					testAccCheckScopeRecord(dir, key, scopeRecord{Environment: "preview", Name: "pr-7", Predecessor: "branch-feat-y"}, ownHolderPat),
					testAccCheckLease(dir, key, "", 2),
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			testAccCheckNoScopeRecord(dir, key),
			testAccCheckLease(dir, key, "", 3),
		),
	})
}

// TestAccScopeResource_defaultStore writes to .sponson/ in the working
// directory when neither the provider block nor SPONSON_STORE names a store.
func TestAccScopeResource_defaultStore(t *testing.T) {
	isolateContext(t)
	unsetenv(t, storeurl.EnvVar)
	handOver(t, githubContext)
	work := t.TempDir()
	dir := filepath.Join(work, storeurl.DefaultDir)
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-42"}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviderFactoriesFor(&sponsonProvider{version: "test", resolver: processResolver{}, workDir: work}),
		Steps: []resource.TestStep{
			{
				Config: testAccScopeResourceConfig(),
				Check: resource.ComposeAggregateTestCheckFunc(
					testAccCheckScopeRecord(dir, key, scopeRecord{Environment: "preview", Name: "pr-42", Predecessor: "branch-feat-search"}, ownHolderPat),
					testAccCheckLease(dir, key, "", 1),
				),
			},
		},
		CheckDestroy: testAccCheckNoScopeRecord(dir, key),
	})
}

// TestAccScopeResource_leaseHeld is plain `tofu apply` while a run holds the
// scope: the provider does not write and says who holds the lease.
func TestAccScopeResource_leaseHeld(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	useStore(t, dir)
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-42"}
	other := testAccAcquire(t, dir, key, "run-other", 5*time.Minute)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      testAccScopeResourceConfig(),
				ExpectError: regexp.MustCompile(`(?s)Scope Leased By Another Run.*LOCK_HELD:.*run-other.*sponson apply\s+--wait`),
			},
		},
	})

	if err := resource.ComposeAggregateTestCheckFunc(
		testAccCheckNoScopeRecord(dir, key),
		testAccCheckLease(dir, key, "run-other", other.Token),
	)(nil); err != nil {
		t.Error(err)
	}
}

// TestAccScopeResource_runLease is the engine under the wrapper: the
// provider writes under the run's lease, handed over, and leaves it held.
func TestAccScopeResource_runLease(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	envDir := t.TempDir()
	useStore(t, envDir) // ignored: the run's store is handed over
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-42"}
	run := testAccAcquire(t, dir, key, "run-test", time.Minute)
	handOverLease(t, dir, run)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            testAccScopeResourceConfig(),
				ConfigStateChecks: expectScope("preview", "pr-42", knownvalue.StringExact("branch-feat-search")),
				Check: resource.ComposeAggregateTestCheckFunc(
					testAccCheckScopeRecord(dir, key, scopeRecord{Environment: "preview", Name: "pr-42", Predecessor: "branch-feat-search"}, regexp.MustCompile(`^run-test$`)),
					// The run's lease is the run's: the provider neither
					// released it nor took another.
					testAccCheckLease(dir, key, "run-test", run.Token),
					testAccCheckNoLease(envDir, key),
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			testAccCheckNoScopeRecord(dir, key),
			testAccCheckLease(dir, key, "run-test", run.Token),
		),
	})
}

// TestAccScopeResource_runLeaseLost is a run whose lease expired and was
// taken over before the engine created the scope: the provider's write is
// fenced out like any other write of the run.
func TestAccScopeResource_runLeaseLost(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-42"}
	var other store.Lease
	var written []byte

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					run := testAccAcquire(t, dir, key, "run-test", time.Second)
					handOverLease(t, dir, run)
					// The provider opens the store by its URL, with the
					// real clock: wait for the expiry instead of moving a
					// fake one.
					time.Sleep(time.Until(run.ExpiresAt) + 100*time.Millisecond)
					other = testAccAcquire(t, dir, key, "run-other", time.Minute)
					written = testAccWriteRecord(t, dir, other)
				},
				Config:      testAccScopeResourceConfig(),
				ExpectError: regexp.MustCompile(`(?s)Lease Lost.*LOCK_LOST:.*preview/pr-42`),
			},
		},
	})

	if err := resource.ComposeAggregateTestCheckFunc(
		testAccCheckRecordBytes(dir, key, written),
		testAccCheckLease(dir, key, "run-other", other.Token),
	)(nil); err != nil {
		t.Error(err)
	}
}

// TestAccScopeResource_runLeaseLostUpdate loses the lease between two
// applies of one run's state: the update is refused, and the run that took
// over can apply.
func TestAccScopeResource_runLeaseLostUpdate(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-42"}
	run := testAccAcquire(t, dir, key, "run-test", time.Minute)
	handOverLease(t, dir, run)
	otherHead := githubContext
	otherHead.Branch, otherHead.Predecessor = "feat/other", "branch-feat-other"
	var other store.Lease
	var written []byte

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccScopeResourceConfig(),
				Check:  testAccCheckScopeRecord(dir, key, scopeRecord{Environment: "preview", Name: "pr-42", Predecessor: "branch-feat-search"}, regexp.MustCompile(`^run-test$`)),
			},
			{
				// run-test's lease is taken over (released here, so that
				// the test need not wait for an expiry), and the next
				// plan updates the predecessor.
				PreConfig: func() {
					testAccRelease(t, dir, run)
					other = testAccAcquire(t, dir, key, "run-other", time.Minute)
					written = testAccWriteRecord(t, dir, other)
					handOver(t, otherHead)
				},
				Config:      testAccScopeResourceConfig(),
				ExpectError: regexp.MustCompile(`(?s)Lease Lost.*LOCK_LOST:.*preview/pr-42`),
			},
			{
				// The run that took over applies, and destroys at the end.
				PreConfig: func() {
					if err := testAccCheckRecordBytes(dir, key, written)(nil); err != nil {
						t.Fatal(err)
					}
					handOverLease(t, dir, other)
				},
				Config: testAccScopeResourceConfig(),
				Check: resource.ComposeAggregateTestCheckFunc(
					testAccCheckScopeRecord(dir, key, scopeRecord{Environment: "preview", Name: "pr-42", Predecessor: "branch-feat-other"}, regexp.MustCompile(`^run-other$`)),
					func(s *terraform.State) error {
						// other is granted in step 2's PreConfig.
						return testAccCheckLease(dir, key, "run-other", other.Token)(s)
					},
				),
			},
		},
		CheckDestroy: testAccCheckNoScopeRecord(dir, key),
	})
}

// TestAccScopeResource_handoverMalformed never falls back to a lease of the
// provider's own when the wrapper's hand-over is incomplete.
func TestAccScopeResource_handoverMalformed(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	useStore(t, dir)
	t.Setenv(lease.EnvStore, "file://"+t.TempDir())
	t.Setenv(lease.EnvHolder, "run-test")
	t.Setenv(lease.EnvToken, "not-a-token")
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-42"}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      testAccScopeResourceConfig(),
				ExpectError: regexp.MustCompile(`(?s)Invalid Lease Hand-Over.*SPONSON_RUN_TOKEN`),
			},
		},
	})

	if err := testAccCheckNoLease(dir, key)(nil); err != nil {
		t.Error(err)
	}
}

func testAccScopeResourceConfig() string {
	return `
resource "sponson_scope" "this" {}
`
}

func testAccScopeResourceConfigEnvironment(environment string) string {
	return fmt.Sprintf(`
resource "sponson_scope" "this" {
  environment = %[1]q
}
`, environment)
}

func testAccScopeResourceConfigStore(url string) string {
	return fmt.Sprintf(`
provider "sponson" {
  store = %[1]q
}

resource "sponson_scope" "this" {}
`, url)
}

// expectScope checks the state of sponson_scope.this.
func expectScope(environment, name string, predecessor knownvalue.Check) []statecheck.StateCheck {
	return expectContext("sponson_scope.this", map[string]knownvalue.Check{
		"id":          knownvalue.StringExact(environment + "/" + name),
		"environment": knownvalue.StringExact(environment),
		"name":        knownvalue.StringExact(name),
		"predecessor": predecessor,
	})
}

// handOverLease hands l and the file store at dir over the way the wrapper
// hands its lease to the engine and so to the provider.
func handOverLease(t *testing.T, dir string, l store.Lease) {
	t.Helper()
	for _, kv := range lease.HandoverEnv("file://"+dir, l) {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
}

// openTestStore opens the file store at dir, as the test's own view of what
// the provider wrote.
func openTestStore(dir string) (*filestore.Store, error) {
	return filestore.Open(dir)
}

// testAccAcquire takes the lease of key in the store at dir for holder.
func testAccAcquire(t *testing.T, dir string, key store.Key, holder string, ttl time.Duration) store.Lease {
	t.Helper()
	st, err := openTestStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.Acquire(context.Background(), key, holder, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return g.Lease
}

// testAccRelease releases l in the store at dir.
func testAccRelease(t *testing.T, dir string, l store.Lease) {
	t.Helper()
	st, err := openTestStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Release(context.Background(), l); err != nil {
		t.Fatal(err)
	}
}

// testAccWriteRecord writes a scope record as l's holder and returns its
// bytes.
func testAccWriteRecord(t *testing.T, dir string, l store.Lease) []byte {
	t.Helper()
	st, err := openTestStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte(fmt.Sprintf(`{"environment":%q,"name":%q,"writer":%q,"writtenAt":"2026-01-02T03:04:05Z"}`,
		l.Key.Environment, l.Key.Scope, l.Holder))
	if err := st.WriteRecord(context.Background(), l, scopeRecordName, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// testAccCheckScopeRecord checks the scope record of key in the store at
// dir: want's values, a writer matching writer, and a write time.
func testAccCheckScopeRecord(dir string, key store.Key, want scopeRecord, writer *regexp.Regexp) resource.TestCheckFunc {
	return func(*terraform.State) error {
		b, err := readTestRecord(dir, key)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("no scope record in %s for %s", dir, key)
		}
		var got scopeRecord
		if err := json.Unmarshal(b, &got); err != nil {
			return fmt.Errorf("scope record %s: %w", b, err)
		}
		if !writer.MatchString(got.Writer) {
			return fmt.Errorf("scope record of %s written by %q, want %s", key, got.Writer, writer)
		}
		if got.WrittenAt.IsZero() {
			return fmt.Errorf("scope record of %s has no write time: %s", key, b)
		}
		want.Writer, want.WrittenAt = got.Writer, got.WrittenAt
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("scope record of %s (-want +got):\n%s", key, diff)
		}
		return nil
	}
}

// testAccCheckRecordBytes checks that the scope record of key is want, byte
// for byte.
func testAccCheckRecordBytes(dir string, key store.Key, want []byte) resource.TestCheckFunc {
	return func(*terraform.State) error {
		b, err := readTestRecord(dir, key)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, want) {
			return fmt.Errorf("scope record of %s = %s, want unchanged %s", key, b, want)
		}
		return nil
	}
}

// testAccCheckNoScopeRecord checks that key has no scope record.
func testAccCheckNoScopeRecord(dir string, key store.Key) resource.TestCheckFunc {
	return testAccCheckRecordBytes(dir, key, nil)
}

// testAccCheckLease checks the lease record of key: its holder ("" when
// released) and its token.
func testAccCheckLease(dir string, key store.Key, holder string, token int64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		st, err := openTestStore(dir)
		if err != nil {
			return err
		}
		l, err := st.ReadLease(context.Background(), key)
		if err != nil {
			return err
		}
		if l.Holder != holder || l.Token != token {
			return fmt.Errorf("lease of %s = holder %q token %d, want holder %q token %d", key, l.Holder, l.Token, holder, token)
		}
		return nil
	}
}

// testAccCheckNoLease checks that key never had a lease in the store at dir.
func testAccCheckNoLease(dir string, key store.Key) resource.TestCheckFunc {
	return testAccCheckLease(dir, key, "", 0)
}

func readTestRecord(dir string, key store.Key) ([]byte, error) {
	st, err := openTestStore(dir)
	if err != nil {
		return nil, err
	}
	return st.ReadRecord(context.Background(), key, scopeRecordName)
}

// TestAccScopeResource_policy applies the production and parents policy,
// changes it in place, imports it, and checks that the wrapper's parser reads
// from the plan exactly what was configured.
func TestAccScopeResource_policy(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	strs := func(ss ...string) knownvalue.Check {
		checks := make([]knownvalue.Check, len(ss))
		for i, s := range ss {
			checks[i] = knownvalue.StringExact(s)
		}
		return knownvalue.ListExact(checks)
	}
	production := tfjsonpath.New("production")
	policy := map[string]knownvalue.Check{
		"production": knownvalue.ObjectExact(map[string]knownvalue.Check{
			"types":     strs("fixture_domain"),
			"addresses": strs("module.prod.*", "fixture_object.web[0]"),
			"attributes": knownvalue.MapExact(map[string]knownvalue.Check{
				"environment":      knownvalue.StringExact("production"),
				"tags.Environment": knownvalue.StringExact("prod"),
			}),
			"approvers": strs("alice", "release-bot"),
		}),
		"parents": knownvalue.MapExact(map[string]knownvalue.Check{
			"fixture_list_entry":                  strs("list"),
			"vercel_project_environment_variable": strs("project_id"),
		}),
	}
	wantRules := ownership.Rules{
		Production: ownership.ProductionRules{
			Types:      []string{"fixture_domain"},
			Addresses:  []string{"module.prod.*", "fixture_object.web[0]"},
			Attributes: map[string]string{"environment": "production", "tags.Environment": "prod"},
			Approvers:  []string{"alice", "release-bot"},
		},
		Parents: map[string][]string{"fixture_list_entry": {"list"}, "vercel_project_environment_variable": {"project_id"}},
	}

	var planChecks []plancheck.PlanCheck
	var stateChecks []statecheck.StateCheck
	for name, check := range policy {
		planChecks = append(planChecks, plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New(name), check))
		stateChecks = append(stateChecks, statecheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New(name), check))
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: testAccScopeResourceConfigPolicy(`["alice", "release-bot"]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: append(planChecks,
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionCreate),
						expectRules(wantRules)),
				},
				ConfigStateChecks: stateChecks,
			},
			{
				// A new allow-list is an update in place.
				Config: testAccScopeResourceConfigPolicy(`["carol"]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue("sponson_scope.this", production.AtMapKey("approvers"), strs("carol")),
						expectRules(func() ownership.Rules {
							r := wantRules
							r.Production.Approvers = []string{"carol"}
							return r
						}()),
					},
				},
			},
			{
				ResourceName:      "sponson_scope.this",
				ImportState:       true,
				ImportStateVerify: true,
				// The policy is configuration, not part of the scope in the
				// store: an import cannot know it, and the next plan sets it.
				ImportStateVerifyIgnore: []string{"identity", "production", "parents"},
			},
			{
				// Without a policy nothing is production and nothing shares
				// a parent.
				Config: testAccScopeResourceConfig(),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sponson_scope.this", plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue("sponson_scope.this", production, knownvalue.Null()),
						plancheck.ExpectKnownValue("sponson_scope.this", tfjsonpath.New("parents"), knownvalue.Null()),
						expectRules(ownership.Rules{Parents: map[string][]string{}}),
					},
				},
			},
		},
	})
}

func TestAccScopeResource_policyInvalid(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	tests := []struct {
		policy string
		want   string
	}{
		{`production = {}`, `Empty Policy`},
		{`production = { approvers = [] }`, `Too Few Values`},
		{`production = { approvers = [" "] }`, `(?s)Invalid Value.*counts as no approver`},
		{`production = { approvers = [" alice"] }`, `(?s)Invalid Value.*white space`},
		{`production = { types = ["bad type"] }`, `(?s)Invalid Value.*not a resource type`},
		{`production = { addresses = ["module. prod"] }`, `(?s)Invalid Value.*white space`},
		{`production = { attributes = { "tags..Environment" = "prod" } }`, `(?s)Invalid Key.*empty segment`},
		{`parents = { fixture_list_entry = [] }`, `Too Few Values`},
		{`parents = { fixture_list_entry = ["list", "list"] }`, `Duplicate Value`},
		{`parents = { "bad type" = ["list"] }`, `(?s)Invalid Key.*not a resource type`},
	}
	steps := make([]resource.TestStep, 0, len(tests))
	for _, tt := range tests {
		steps = append(steps, resource.TestStep{
			Config: fmt.Sprintf(`
resource "sponson_scope" "this" {
  %s
}
`, tt.policy),
			ExpectError: regexp.MustCompile(tt.want),
		})
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
	})
}

// TestAccScopeResource_policyUnknown refuses a policy the plan cannot show:
// the wrapper decides from the plan.
func TestAccScopeResource_policyUnknown(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `
resource "terraform_data" "approver" {
  input = "alice"
}

resource "sponson_scope" "this" {
  production = {
    approvers = [terraform_data.approver.output]
  }
}
`,
				ExpectError: regexp.MustCompile(`(?s)Policy Not Known At Plan Time.*production`),
			},
		},
	})
}

func testAccScopeResourceConfigPolicy(approvers string) string {
	return fmt.Sprintf(`
resource "sponson_scope" "this" {
  identity = {
    fixture_list_entry = ["list", "entry"]
  }

  production = {
    types     = ["fixture_domain"]
    addresses = ["module.prod.*", "fixture_object.web[0]"]
    attributes = {
      environment        = "production"
      "tags.Environment" = "prod"
    }
    approvers = %[1]s
  }

  parents = {
    fixture_list_entry                  = ["list"]
    vercel_project_environment_variable = ["project_id"]
  }
}
`, approvers)
}

// expectRules checks that ownership.RulesFromPlan, the wrapper's reader,
// reads want from the plan.
func expectRules(want ownership.Rules) plancheck.PlanCheck {
	return rulesCheck{want: want}
}

type rulesCheck struct{ want ownership.Rules }

func (c rulesCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	got := ownership.RulesFromPlan(req.Plan)
	sortRules(&got)
	want := c.want
	sortRules(&want)
	if diff := cmp.Diff(want, got); diff != "" {
		resp.Error = fmt.Errorf("rules read from the plan (-want +got):\n%s", diff)
	}
}

// sortRules sorts the lists whose order the engine's JSON does not keep
// stable across map iteration.
func sortRules(r *ownership.Rules) {
	for _, l := range r.Parents {
		sort.Strings(l)
	}
}
