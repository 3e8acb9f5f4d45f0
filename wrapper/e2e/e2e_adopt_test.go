package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
)

// bareEngine runs the engine itself, without sponson, in dir: how the state
// to adopt came to be.
func bareEngine(t *testing.T, h *harness, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Getenv("SPONSON_TEST_ENGINE"), args...)
	cmd.Dir = dir
	cmd.Env = append(append(append([]string{}, h.env...), "TF_IN_AUTOMATION=1"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// adoptAndRetire adopts the state of dir's own backend into scope main of
// storeURL, checks the receipt, retires the old backend (removes
// backend.tf) and checks that a plan then changes nothing. It returns the
// adoption's result.
func adoptAndRetire(t *testing.T, h *harness, dir string, env []string, storeURL, backend string) map[string]any {
	t.Helper()
	r := h.run(dir, env, "adopt", "--store", storeURL, "--scope", "main", "--json")
	if r.exit != 0 {
		t.Fatalf("adopt: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	res := r.envelope(t)["result"].(map[string]any)
	from, _ := res["adoptedFrom"].(map[string]any)
	if from["backend"] != backend || from["workspace"] != "default" || res["owns"] != float64(2) {
		t.Errorf("adopt result %v, want 2 resources adopted from the %s backend's default workspace", res, backend)
	}
	rec, _ := res["receipt"].(map[string]any)
	for _, e := range rec["ledger"].([]any) {
		if by := e.(map[string]any)["createdBy"]; by != receipt.CreatedByAdopted {
			t.Errorf("ledger entry %v is %v, want adopted", e, by)
		}
	}
	// Adopting again is refused: the scope has state now.
	again := h.run(dir, env, "adopt", "--store", storeURL, "--scope", "main", "--json")
	if again.exit != 2 || again.code(t) != "SCOPE_HAS_STATE" {
		t.Errorf("second adopt: exit %d %q, want 2 SCOPE_HAS_STATE\n%s", again.exit, again.code(t), again.stderr)
	}

	if err := os.Remove(filepath.Join(dir, "backend.tf")); err != nil {
		t.Fatal(err)
	}
	plan := h.run(dir, env, "plan", "--store", storeURL, "--scope", "main", "--json")
	if plan.exit != 0 {
		t.Fatalf("plan after adoption: exit %d\n%s\n%s", plan.exit, plan.stdout, plan.stderr)
	}
	if sum := plan.envelope(t)["result"].(map[string]any)["summary"].(map[string]any); sum["add"] != float64(0) || sum["change"] != float64(0) || sum["destroy"] != float64(0) {
		t.Errorf("plan after adoption changes something: %v\n%s", sum, plan.stderr)
	}
	return res
}

// TestE2EAdoptFromLocal: a configuration applied with a local backend is
// adopted into a scope of the file store; the old state file is untouched,
// and once its backend block is gone sponson plans no change.
func TestE2EAdoptFromLocal(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/adopt")
	if err := os.WriteFile(filepath.Join(dir, "backend.tf"), []byte(`terraform {
  backend "local" {
    path = "old.tfstate"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bareEngine(t, h, dir, nil, "init", "-input=false")
	bareEngine(t, h, dir, nil, "apply", "-auto-approve", "-input=false")
	old := readFile(t, filepath.Join(dir, "old.tfstate"))

	adoptAndRetire(t, h, dir, nil, "file://"+filepath.Join(dir, ".sponson"), "local")
	if got := readFile(t, filepath.Join(dir, "old.tfstate")); !bytes.Equal(got, old) {
		t.Error("adopt changed the old backend's state")
	}
	res := stateResources(t, dir, "preview", "main")
	if dynamic(res["terraform_data.one"]["output"]) != "kept" {
		t.Errorf("the adopted state holds %v, want the old backend's resources", res)
	}
}

// TestE2EAdoptFromS3: a configuration applied with the engine's own s3 backend
// on the test's S3 server is adopted into a scope of the S3 store on the
// same server; the old state object is untouched, and once the backend block
// is gone sponson plans no change.
func TestE2EAdoptFromS3(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	needsEngineBackend(t, "s3")
	p := newS3E2E(t, "sponson")
	dir := h.workdir("testdata/adopt")
	if err := os.WriteFile(filepath.Join(dir, "backend.tf"), []byte(fmt.Sprintf(`terraform {
  backend "s3" {
    bucket                      = %q
    key                         = "legacy/terraform.tfstate"
    region                      = "us-east-1"
    endpoints                   = { s3 = %q }
    use_path_style              = true
    skip_credentials_validation = true
    skip_region_validation      = true
    skip_requesting_account_id  = true
    skip_metadata_api_check     = true
    skip_s3_checksum            = true
  }
}
`, gwtest.Bucket, p.gw.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	bareEngine(t, h, dir, p.gw.RootEnv(), "init", "-input=false")
	bareEngine(t, h, dir, p.gw.RootEnv(), "apply", "-auto-approve", "-input=false")
	legacy := func() []byte {
		out, err := p.gw.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(gwtest.Bucket), Key: aws.String("legacy/terraform.tfstate")})
		if err != nil {
			t.Fatalf("the old backend's state object: %v", err)
		}
		defer out.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(out.Body)
		return b.Bytes()
	}
	old := legacy()

	adoptAndRetire(t, h, dir, p.env, p.url, "s3")
	if got := legacy(); !bytes.Equal(got, old) {
		t.Error("adopt changed the old backend's state object")
	}
	rec, err := p.check.LatestReceipt(t.Context(), storeKey("main"))
	if err != nil || rec == nil || rec.Command != "adopt" || rec.AdoptedFrom == nil || rec.AdoptedFrom.Backend != "s3" {
		t.Fatalf("the scope's receipt: %+v, %v", rec, err)
	}
	st, err := p.check.ReadState(t.Context(), storeKey("main"))
	if err != nil || !strings.Contains(string(st), `"kept-two"`) {
		t.Errorf("the adopted state: %v\n%s", err, st)
	}
}

func storeKey(scope string) store.Key {
	return store.Key{Stack: e2eStack, Environment: "preview", Scope: scope}
}
