package s3store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store/gwtest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// TestPrefixPolicySiblingPrefixes (issue 46 item 4): two repositories
// whose prefixes share a bare prefix, acme/infra and acme/infra-secrets,
// under the bucket policy PrefixPolicy writes (what `sponson grants`
// prints), set on versitygw. versitygw enforces bucket policies for its
// user accounts (resource ARNs with "*" wildcards, the s3:prefix condition
// of ListBucket), so the policy is tested on the server, not against our
// reading of the matching rules. Each repository works in its own prefix;
// the other's credentials are refused (STORE_PERMISSION) on every read and
// write there, and directly: no GetObject of a key under the sibling's
// prefix, no listing of the bare prefix "acme/infra" that would show the
// sibling's keys.
func TestPrefixPolicySiblingPrefixes(t *testing.T) {
	t.Parallel()
	gw := gwtest.Start(t)
	users := map[string]string{"ci-infra": "secret-of-infra-01", "ci-secrets": "secret-of-secrets-1"}
	prefixOf := map[string]string{"ci-infra": "acme/infra", "ci-secrets": "acme/infra-secrets"}
	for u, secret := range users {
		if err := gw.AddUser(u, secret); err != nil {
			t.Fatal(err)
		}
	}
	policy, err := s3store.PrefixPolicy(gwtest.Bucket, prefixOf)
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.SetPolicy(policy); err != nil {
		t.Fatalf("set the policy: %v\n%s", err, policy)
	}
	ctx := t.Context()
	open := func(user, prefix string) (*s3store.Store, error) {
		return s3store.Open(ctx, gw.StoreURL(prefix), s3store.WithAWSConfig(gwtest.Config(user, users[user])),
			s3store.WithStateKey(testKey), s3store.WithBudget(5*time.Second))
	}
	k := store.Key{Stack: "github.com/acme/infra//db", Environment: "preview", Scope: "main"}
	for user, prefix := range prefixOf {
		s, err := open(user, prefix)
		if err != nil {
			t.Fatalf("%s opens its own prefix: %v", user, err)
		}
		g, err := s.Acquire(ctx, k, "run-"+user, time.Minute)
		if err != nil {
			t.Fatalf("%s acquires in its own prefix: %v", user, err)
		}
		for _, err := range []error{
			s.WriteState(ctx, g.Lease, []byte(`{"secret":"of `+user+`"}`)),
			s.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(k, "run-"+user, 1)),
			s.Release(ctx, g.Lease),
		} {
			if err != nil {
				t.Fatalf("%s in its own prefix: %v", user, err)
			}
		}
		if st, err := s.ReadState(ctx, k); err != nil || !strings.Contains(string(st), user) {
			t.Fatalf("%s reads its own state: %q, %v", user, st, err)
		}
	}

	for user, other := range map[string]string{"ci-infra": "ci-secrets", "ci-secrets": "ci-infra"} {
		refused := func(op string, err error) {
			t.Helper()
			if !errcode.Is(err, errcode.StorePermission) {
				t.Errorf("%s's %s in %s's prefix %s: %v, want STORE_PERMISSION", user, op, other, prefixOf[other], err)
			}
		}
		s, err := open(user, prefixOf[other])
		if err != nil {
			refused("Open", err)
		} else {
			_, err = s.ReadState(ctx, k)
			refused("ReadState", err)
			_, err = s.LatestReceipt(ctx, k)
			refused("LatestReceipt", err)
			_, err = s.Acquire(ctx, k, "run-"+user, time.Minute)
			refused("Acquire", err)
			_, err = s.List(ctx, "preview")
			refused("List", err)
		}
		client := s3.NewFromConfig(gwtest.Config(user, users[user]), func(o *s3.Options) {
			o.BaseEndpoint = aws.String(gw.URL)
			o.UsePathStyle = true
		})
		keys := rootKeys(ctx, t, gw, prefixOf[other]+"/")
		if len(keys) == 0 {
			t.Fatalf("no objects under %s/", prefixOf[other])
		}
		_, err = client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(gwtest.Bucket), Key: aws.String(keys[0])})
		denied(t, user+" GetObject "+keys[0], err)
		_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(gwtest.Bucket), Key: aws.String(prefixOf[other] + "/planted"), Body: strings.NewReader("x")})
		denied(t, user+" PutObject under "+prefixOf[other], err)
		for _, p := range []string{"acme/infra", "acme/", prefixOf[other] + "/"} {
			_, err = client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(gwtest.Bucket), Prefix: aws.String(p)})
			denied(t, user+" ListObjectsV2 "+p, err)
		}
	}
	for user, prefix := range prefixOf {
		root, err := s3store.Open(ctx, gw.StoreURL(prefix), s3store.WithAWSConfig(gw.RootConfig()), s3store.WithStateKey(testKey))
		if err != nil {
			t.Fatal(err)
		}
		r, err := root.LatestReceipt(ctx, k)
		st, serr := root.ReadState(ctx, k)
		if err != nil || r == nil || r.RunID != "run-"+user || serr != nil || !strings.Contains(string(st), user) {
			t.Errorf("%s's prefix after the other's attempts: receipt %v (%v), state %q (%v)", user, r, err, st, serr)
		}
	}
}

// rootKeys lists the keys under prefix with the root account.
func rootKeys(ctx context.Context, t *testing.T, gw *gwtest.Server, prefix string) []string {
	t.Helper()
	out, err := gw.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(gwtest.Bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// denied fails unless err is S3's AccessDenied.
func denied(t *testing.T, what string, err error) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" {
		t.Errorf("%s: %v, want AccessDenied", what, err)
	}
}
