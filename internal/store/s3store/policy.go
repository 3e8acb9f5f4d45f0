package s3store

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// A stack name is a namespace, not an access control: whoever holds
// credentials for a bucket reaches every prefix and stack in it. The S3
// store's boundary is the prefix (s3://BUCKET/PREFIX): give each
// repository its own prefix and its jobs' principal a bucket policy that
// allows only that prefix. PrefixPolicy writes that policy.
//
// The ownership index of a prefix covers only that prefix: runs of two
// repositories with their own prefixes do not see each other's objects in
// the foreign check (docs/design.md §5.5). That is the price of the
// boundary on S3, whose policies cannot tell an ownership part from a
// state by its key; PostgreSQL's row-level security keeps one index for
// every stack (pgstore.PerStackSQL).

// PrefixPolicy returns a bucket policy document that gives each principal
// (an IAM ARN or, on an S3-compatible server, an account name) its prefix
// of bucket only: the objects under it (read, write, delete: every store
// operation) and listings of keys under it. Prefixes must be store prefixes
// (what follows the bucket in an s3:// URL, without slashes around it) that
// do not contain one another, or the longer one is reached by the shorter
// one's principal.
func PrefixPolicy(bucket string, prefixOf map[string]string) (string, error) {
	if bucket == "" || len(prefixOf) == 0 {
		return "", fmt.Errorf("a prefix policy needs a bucket and at least one principal")
	}
	principals := make([]string, 0, len(prefixOf))
	for p := range prefixOf {
		principals = append(principals, p)
	}
	sort.Strings(principals)
	var statements []policyStatement
	for _, who := range principals {
		prefix, err := policyPrefix(prefixOf[who])
		if err != nil {
			return "", err
		}
		for other, o := range prefixOf {
			if op, _ := policyPrefix(o); other != who && strings.HasPrefix(op, prefix) {
				return "", fmt.Errorf("prefix %q of %s contains prefix %q of %s: give repositories prefixes that do not nest", prefixOf[who], who, o, other)
			}
		}
		principal := map[string][]string{"AWS": {who}}
		statements = append(statements,
			policyStatement{
				Effect: "Allow", Principal: principal,
				Action:   []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject"},
				Resource: []string{"arn:aws:s3:::" + bucket + "/" + prefix + "*"},
			},
			policyStatement{
				Effect: "Allow", Principal: principal,
				Action:    []string{"s3:ListBucket"},
				Resource:  []string{"arn:aws:s3:::" + bucket},
				Condition: map[string]map[string][]string{"StringLike": {"s3:prefix": {prefix + "*"}}},
			})
	}
	doc, err := json.MarshalIndent(policyDoc{Version: "2012-10-17", Statement: statements}, "", "  ")
	return string(doc), err
}

// policyPrefix checks a store prefix as ParseURL does and gives it with its
// trailing slash, the form of every key under it.
func policyPrefix(prefix string) (string, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return "", fmt.Errorf("a principal needs a prefix: an empty one would reach the whole bucket")
	}
	for _, seg := range strings.Split(prefix, "/") {
		if err := store.CheckName("store prefix segment", seg); err != nil {
			return "", err
		}
	}
	return prefix + "/", nil
}

type policyDoc struct {
	Version   string            `json:"Version"`
	Statement []policyStatement `json:"Statement"`
}

// policyStatement has no Sid (optional in a bucket policy), so that the
// statements of several PrefixPolicy documents merge into one policy.
type policyStatement struct {
	Effect    string                         `json:"Effect"`
	Principal map[string][]string            `json:"Principal"`
	Action    []string                       `json:"Action"`
	Resource  []string                       `json:"Resource"`
	Condition map[string]map[string][]string `json:"Condition,omitempty"`
}
