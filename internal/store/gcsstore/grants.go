package gcsstore

import (
	"fmt"
	"strings"
)

// A stack name is a namespace, not an access control (docs/design.md §5.5,
// §5.7): the GCS store's boundary is the prefix. PrefixBinding writes the
// IAM binding that gives one principal the objects under its prefix only.
//
// IAM Conditions name an object as projects/_/buckets/BUCKET/objects/KEY,
// so resource.name.startsWith of the prefix (ending at a "/") confines
// reads, writes and deletes. A listing is checked on the bucket, whose
// name carries no prefix: the condition lets the role's bucket-level
// permissions through (resource.type is the bucket), so the principal can
// list the names of every object of the bucket, never read or change one
// outside its prefix. That is the limit of IAM on GCS: give each repository
// its own bucket when the names of another's objects must stay hidden.

// principalKinds are the IAM member forms a binding takes.
var principalKinds = []string{"serviceAccount:", "principal://", "principalSet://", "user:", "group:", "domain:"}

// PrefixBinding returns the gcloud command that adds to bucket's IAM policy
// a binding of member (serviceAccount:..., principalSet://... for workload
// identity federation) to roles/storage.objectUser on the objects under
// prefix ("" or ending in "/", as Location.Prefix). The bucket must have
// uniform bucket-level access, which IAM Conditions need.
func PrefixBinding(bucket, prefix, member string) (string, error) {
	if bucket == "" || prefix == "" || !strings.HasSuffix(prefix, "/") {
		return "", fmt.Errorf("a prefix binding needs a bucket and a prefix: gs://BUCKET/PREFIX (a binding on the whole bucket needs no condition)")
	}
	known := false
	for _, k := range principalKinds {
		known = known || (strings.HasPrefix(member, k) && len(member) > len(k))
	}
	if !known || strings.ContainsAny(member, "'\"\\ \t\n,=") {
		return "", fmt.Errorf("--for %q is not an IAM member: use serviceAccount:NAME@PROJECT.iam.gserviceaccount.com or principalSet://iam.googleapis.com/... (workload identity federation)", member)
	}
	title := "sponson " + strings.TrimSuffix(prefix, "/")
	expr := fmt.Sprintf(`resource.name.startsWith("projects/_/buckets/%s/objects/%s") || resource.type == "storage.googleapis.com/Bucket"`, bucket, prefix)
	return fmt.Sprintf("gcloud storage buckets add-iam-policy-binding gs://%s \\\n  --member='%s' \\\n  --role='roles/storage.objectUser' \\\n  --condition='title=%s,expression=%s'",
		bucket, member, title, expr), nil
}
