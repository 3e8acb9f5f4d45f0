package e2e_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore/azuritetest"
	"github.com/sponson/terraform-provider-sponson/internal/store/gcsstore/gcstest"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
)

// The `sponson store verify` tests run the built binary against each
// emulator the store tests start, and against a stand-in that ignores
// conditions: a reverse proxy in front of versitygw that strips If-Match and
// If-None-Match (and signs the request again, as the signature covers
// them). After every run the test lists the prefix itself: the check must
// leave nothing behind.

// verifyResult is the result of `store verify --json`.
type verifyResult struct {
	Store      string `json:"store"`
	Prefix     string `json:"prefix"`
	Properties []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"properties"`
	Leftover []string `json:"leftover"`
	OK       bool     `json:"ok"`
}

var verifyProperties = []string{"create-if-absent", "stale-version-refused", "one-winner", "conditional-delete"}

func runVerify(t *testing.T, h *harness, env []string, storeURL string) (result, verifyResult) {
	t.Helper()
	r := h.run(t.TempDir(), env, "store", "verify", "--store", storeURL, "--json")
	var res verifyResult
	raw, err := json.Marshal(r.envelope(t)["result"])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result: %v\n%s", err, r.stdout)
	}
	var names []string
	for _, p := range res.Properties {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, verifyProperties) {
		t.Fatalf("properties %v, want %v\n%s", names, verifyProperties, r.stdout)
	}
	if len(res.Leftover) != 0 || !strings.HasPrefix(res.Prefix, "team/.sponson-verify-") {
		t.Errorf("prefix %q, leftover %v", res.Prefix, res.Leftover)
	}
	return r, res
}

// failedOf is the properties that did not hold.
func failedOf(res verifyResult) []string {
	var out []string
	for _, p := range res.Properties {
		if !p.OK {
			out = append(out, p.Name)
		}
	}
	return out
}

func wantPass(t *testing.T, r result, res verifyResult) {
	t.Helper()
	if r.exit != 0 || !res.OK || len(failedOf(res)) != 0 {
		t.Fatalf("store verify: exit %d, ok %v, failed %v\n%s\n%s", r.exit, res.OK, failedOf(res), r.stdout, r.stderr)
	}
}

func s3Keys(t *testing.T, gw *gwtest.Server, prefix string) []string {
	t.Helper()
	out, err := gw.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(gwtest.Bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// TestE2EStoreVerifyS3: versitygw honours every condition; the prefix lists
// empty afterwards, and the human output has one line per property.
func TestE2EStoreVerifyS3(t *testing.T) {
	h := e2e(t)
	gw := gwtest.Start(t)
	r, res := runVerify(t, h, gw.RootEnv(), gw.StoreURL("team"))
	wantPass(t, r, res)
	if left := s3Keys(t, gw, "team/"); len(left) != 0 {
		t.Errorf("store verify left %v behind", left)
	}
	r = h.run(t.TempDir(), gw.RootEnv(), "store", "verify", "--store", gw.StoreURL("team"))
	if r.exit != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	for _, name := range append(slices.Clone(verifyProperties), "nothing-left-behind") {
		if !strings.Contains(r.stdout, "  pass  "+name+" ") {
			t.Errorf("no pass line for %s:\n%s", name, r.stdout)
		}
	}
}

// TestE2EStoreVerifyGCS: fake-gcs-server honours ifGenerationMatch on
// uploads and ignores it on deletes (docs/design.md §5.7), so verify fails
// on conditional-delete alone, with exit 1 and STORE_NOT_CONFORMING. When
// the emulator learns delete preconditions this test fails, and the design
// and README are to be updated.
func TestE2EStoreVerifyGCS(t *testing.T) {
	h := e2e(t)
	srv := gcstest.Start(t)
	r, res := runVerify(t, h, srv.Env(), srv.StoreURL("team"))
	if got := failedOf(res); r.exit != 1 || r.code(t) != "STORE_NOT_CONFORMING" || !slices.Equal(got, []string{"conditional-delete"}) {
		t.Fatalf("store verify on fake-gcs-server: exit %d %s, failed %v; want exit 1 STORE_NOT_CONFORMING on conditional-delete alone\n%s", r.exit, r.code(t), got, r.stdout)
	}
	resp, err := http.Get("http://" + srv.Host + "/storage/v1/b/" + gcstest.Bucket + "/o?prefix=team/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listing struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&listing); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("listing: %d %v", resp.StatusCode, err)
	}
	if len(listing.Items) != 0 {
		t.Errorf("store verify left %v behind", listing.Items)
	}
}

// TestE2EStoreVerifyAzure: Azurite honours every ETag condition.
func TestE2EStoreVerifyAzure(t *testing.T) {
	h := e2e(t)
	srv := azuritetest.Start(t)
	r, res := runVerify(t, h, srv.Env(), srv.StoreURL("team"))
	wantPass(t, r, res)
	cred, err := container.NewSharedKeyCredential(azuritetest.Account, azuritetest.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClientWithSharedKeyCredential(srv.Endpoint+"/"+azuritetest.Container, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: aws.String("team/")}).NextPage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Segment.BlobItems); n != 0 {
		t.Errorf("store verify left %d blob(s) behind", n)
	}
}

// conditionStripper is a stand-in for an S3-compatible server that ignores
// conditional writes: a reverse proxy on loopback in front of gw that drops
// If-Match and If-None-Match from every request and signs it again with
// gw's root credentials (the SDK signs those headers).
func conditionStripper(t *testing.T, gw *gwtest.Server) string {
	t.Helper()
	target, err := url.Parse(gw.URL)
	if err != nil {
		t.Fatal(err)
	}
	creds := aws.Credentials{AccessKeyID: gw.Access, SecretAccessKey: gw.Secret}
	// As the S3 client signs: the path as sent, escaped once.
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		out := pr.Out
		out.URL.Scheme, out.URL.Host, out.Host = target.Scheme, target.Host, target.Host
		out.Header.Del("If-Match")
		out.Header.Del("If-None-Match")
		out.Header.Del("Authorization")
		hash := out.Header.Get("X-Amz-Content-Sha256")
		if hash == "" {
			hash = "UNSIGNED-PAYLOAD"
		}
		if err := signer.SignHTTP(context.Background(), creds, out, hash, "s3", "us-east-1", time.Now()); err != nil {
			t.Errorf("sign again: %v", err)
		}
	}}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	return ps.URL
}

// TestE2EStoreVerifyIgnoredConditions: through the stand-in every property
// fails, store verify exits 1 with STORE_NOT_CONFORMING naming them, and
// an apply on the stand-in is refused before it writes anything but the
// layout marker: the store's opening check found a create of an existing
// object accepted.
func TestE2EStoreVerifyIgnoredConditions(t *testing.T) {
	h := e2e(t)
	gw := gwtest.Start(t)
	storeURL := "s3://" + gwtest.Bucket + "/team?endpoint=" + conditionStripper(t, gw)
	r, res := runVerify(t, h, gw.RootEnv(), storeURL)
	if got := failedOf(res); r.exit != 1 || r.code(t) != "STORE_NOT_CONFORMING" || !slices.Equal(got, verifyProperties) {
		t.Fatalf("store verify through the stand-in: exit %d %s, failed %v; want exit 1 STORE_NOT_CONFORMING on every property\n%s", r.exit, r.code(t), got, r.stdout)
	}
	msg, _ := r.envelope(t)["error"].(map[string]any)["message"].(string)
	for _, name := range verifyProperties {
		if !strings.Contains(msg, name) {
			t.Errorf("the error does not name %s: %s", name, msg)
		}
	}
	if left := s3Keys(t, gw, "team/"); len(left) != 0 {
		t.Errorf("store verify left %v behind", left)
	}

	dir := h.workdir("testdata/slow")
	env := append(gw.RootEnv(), "SPONSON_STATE_KEY="+hex.EncodeToString(s3StateKey))
	r = h.run(dir, env, "apply", "--store", storeURL, "--scope", "pr-1", "--json", "-var", "sleep=0")
	if r.exit != 1 || r.code(t) != "STORE_NOT_CONFORMING" {
		t.Fatalf("apply on the stand-in: exit %d %s, want 1 STORE_NOT_CONFORMING\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	if left := s3Keys(t, gw, "team/"); !slices.Equal(left, []string{"team/@layout.json"}) {
		t.Errorf("the refused apply wrote %v, want the layout marker alone", left)
	}
	// The same apply straight on versitygw is not refused.
	r = h.run(dir, env, "apply", "--store", gw.StoreURL("team"), "--scope", "pr-1", "--json", "-var", "sleep=0")
	if r.exit != 0 {
		t.Fatalf("apply on versitygw: exit %d %s\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
}

// TestE2ES3NoCredential: with no AWS credential anywhere in the chain (no
// variables, no ~/.aws, and an instance metadata service that answers 404,
// as a container's often does), an apply fails with STORE_PERMISSION
// naming the chain, before the retry budget (one attempt: the message
// counts none), and no SDK log line (the IMDS client's "falling back to
// IMDSv1") reaches sponson's output (issue 51 item 4).
func TestE2ES3NoCredential(t *testing.T) {
	h := e2e(t)
	gw := gwtest.Start(t)
	var imdsRequests atomic.Int32
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		imdsRequests.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(imds.Close)
	home := t.TempDir()
	env := []string{
		"HOME=" + home, "AWS_CONFIG_FILE=" + home + "/none", "AWS_SHARED_CREDENTIALS_FILE=" + home + "/none",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds.URL,
		"SPONSON_STATE_KEY=" + hex.EncodeToString(s3StateKey),
	}
	dir := h.workdir("testdata/slow")
	r := h.run(dir, env, "apply", "--store", gw.StoreURL("team"), "--scope", "pr-1", "--json", "-var", "sleep=0")
	if r.exit != 1 || r.code(t) != "STORE_PERMISSION" {
		t.Fatalf("apply without a credential: exit %d %q, want STORE_PERMISSION\n%s\n%s", r.exit, r.code(t), r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	for _, want := range []string{"has no AWS credential", "AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(out, "attempts") || strings.Contains(out, "reachable") || strings.Contains(out, "STORE_UNAVAILABLE") {
		t.Errorf("a missing credential was reported as a network failure:\n%s\n%s", r.stdout, r.stderr)
	}
	if m := sdkLine.FindString(r.stderr); m != "" || strings.Contains(out, "IMDSv1") {
		t.Errorf("an SDK log line (%q) reached sponson's output:\n%s", m, r.stderr)
	}
	if imdsRequests.Load() == 0 {
		t.Error("the chain never asked the instance metadata stand-in: the test did not reach the case it is about")
	}
	if left := s3Keys(t, gw, "team/"); len(left) != 0 {
		t.Errorf("a run without a credential wrote %v", left)
	}
}
