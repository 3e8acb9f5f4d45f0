package wrapper

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/wrapper/storecmd"
)

func TestGrants(t *testing.T) {
	for _, c := range []struct {
		name, code string
		args       []string
		env        map[string]string
		want       []string
		scope      string
	}{
		{name: "s3", args: []string{"--store", "s3://state/repo-a", "--for", "arn:aws:iam::1:role/ci-a"},
			want: []string{`"arn:aws:s3:::state/repo-a/*"`, `"repo-a/*"`, `"arn:aws:iam::1:role/ci-a"`}},
		{name: "s3 from SPONSON_STORE", args: []string{"--for", "ci"}, env: map[string]string{"SPONSON_STORE": "s3://state/team/app"},
			want: []string{`"arn:aws:s3:::state/team/app/*"`}},
		{name: "s3 sibling-proof", args: []string{"--store", "s3://state/acme/infra", "--for", "ci"}, scope: "acme/infra",
			want: []string{`"arn:aws:s3:::state/acme/infra/*"`, `"acme/infra/*"`}},
		{name: "postgres", args: []string{"--store", "postgres://db/sponson", "--for", "sponson_ci_app", "--stack-prefix", "github.com/acme/app"},
			scope: "github.com/acme/app",
			want: []string{"GRANT USAGE ON SCHEMA sponson TO sponson_ci_app;",
				"INSERT INTO sponson.grants (role, prefix) VALUES ('sponson_ci_app', 'github.com/acme/app')",
				"USING (sponson.stack_granted(stack)) WITH CHECK (sponson.stack_granted(stack))",
				"DROP POLICY IF EXISTS sponson_ci_app_own ON sponson.states;"}},
		{name: "postgres trailing slash", args: []string{"--store", "postgres://db/sponson", "--for", "ci", "--stack-prefix", "github.com/acme/"},
			scope: "github.com/acme", want: []string{"VALUES ('ci', 'github.com/acme')"}},
		{name: "postgres wildcard prefix", code: "USAGE", args: []string{"--store", "postgres://db/sponson", "--for", "ci", "--stack-prefix", "github.com/acme/%"}},
		{name: "postgres quote in prefix", code: "USAGE", args: []string{"--store", "postgres://db/sponson", "--for", "ci", "--stack-prefix", "github.com/a'b"}},
		{name: "s3 without a prefix", code: "USAGE", args: []string{"--store", "s3://state", "--for", "ci"}},
		{name: "s3 with a stack prefix", code: "USAGE", args: []string{"--store", "s3://state/a", "--for", "ci", "--stack-prefix", "x"}},
		{name: "postgres without a prefix", code: "USAGE", args: []string{"--store", "postgres://db/sponson", "--for", "ci"}},
		{name: "postgres with a bad role", code: "USAGE", args: []string{"--store", "postgres://db/sponson", "--for", "CI; DROP", "--stack-prefix", "x"}},
		{name: "gcs", args: []string{"--store", "gs://state/acme/infra", "--for", "serviceAccount:ci@p.iam.gserviceaccount.com"}, scope: "acme/infra",
			want: []string{"gcloud storage buckets add-iam-policy-binding gs://state", "--member='serviceAccount:ci@p.iam.gserviceaccount.com'", "roles/storage.objectUser",
				`resource.name.startsWith("projects/_/buckets/state/objects/acme/infra/")`}},
		{name: "gcs without a prefix", code: "USAGE", args: []string{"--store", "gs://state", "--for", "serviceAccount:ci@p.iam.gserviceaccount.com"}},
		{name: "gcs with a bare principal", code: "USAGE", args: []string{"--store", "gs://state/a", "--for", "ci"}},
		{name: "gcs with a quote in the principal", code: "USAGE", args: []string{"--store", "gs://state/a", "--for", "serviceAccount:a'b"}},
		{name: "azure", args: []string{"--store", "azblob://acct/state/acme/infra", "--for", "0000-1"}, scope: "acme/infra",
			want: []string{"az role assignment create", "--assignee '0000-1'", "Storage Blob Data Contributor", "storageAccounts/acct/blobServices/default/containers/state",
				"@Resource[Microsoft.Storage/storageAccounts/blobServices/containers/blobs:path] StringStartsWith 'acme/infra/'",
				"@Request[Microsoft.Storage/storageAccounts/blobServices/containers/blobs:prefix] StringStartsWith 'acme/infra/'"}},
		{name: "azure without a prefix", code: "USAGE", args: []string{"--store", "azblob://acct/state", "--for", "0000-1"}},
		{name: "azure with a quote in the principal", code: "USAGE", args: []string{"--store", "azblob://acct/state/a", "--for", "x' OR 'y"}},
		{name: "git", code: "USAGE", args: []string{"--store", "git", "--for", "ci"}},
		{name: "no principal", code: "USAGE", args: []string{"--store", "s3://state/a"}},
		{name: "no store", code: "USAGE", args: []string{"--for", "ci"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, out, _ := testFactory(c.env)
			code := runWith(context.Background(), append([]string{"grants", "--json"}, c.args...), f, nil)
			env := decode(t, out)
			if c.code != "" {
				if code == 0 || env.Error == nil || string(env.Error.Code) != c.code {
					t.Fatalf("exit %d, error %+v; want %s", code, env.Error, c.code)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %+v", code, env.Error)
			}
			b, _ := json.Marshal(env.Result)
			var res storecmd.GrantsResult
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			if c.scope != "" && res.Scope != c.scope {
				t.Errorf("scope %q, want %q", res.Scope, c.scope)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Document, w) {
					t.Errorf("the document lacks %s:\n%s", w, res.Document)
				}
			}
		})
	}
}
