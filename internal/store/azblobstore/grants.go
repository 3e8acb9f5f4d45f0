package azblobstore

import (
	"fmt"
	"strings"
)

// A stack name is a namespace, not an access control (docs/design.md §5.5,
// §5.8): the Azure store's boundary is the prefix. PrefixAssignment writes
// the role assignment with an attribute-based condition (ABAC) that gives
// one principal the blobs under its prefix only: reads, writes and deletes
// of blobs whose path starts with the prefix, and listings whose prefix
// starts with it. A condition binds Microsoft Entra ID principals only:
// the account's shared key (AZURE_STORAGE_KEY) reaches every container, so
// a repository kept to its prefix must not be given the key.

const blobs = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs"

// PrefixAssignment returns the az command that assigns assignee (an object
// or application id, or a user principal name) the role Storage Blob Data
// Contributor on container with a condition confining it to prefix ("" or
// ending in "/", as Location.Prefix). SUBSCRIPTION and RESOURCE_GROUP, which
// a store URL does not name, are left for the administrator to fill in.
func PrefixAssignment(account, container, prefix, assignee string) (string, error) {
	if account == "" || container == "" || prefix == "" || !strings.HasSuffix(prefix, "/") {
		return "", fmt.Errorf("a prefix assignment needs a prefix: azblob://ACCOUNT/CONTAINER/PREFIX (an assignment on the whole container needs no condition)")
	}
	if assignee == "" || strings.ContainsAny(assignee, "'\"\\ \t\n{}()") {
		return "", fmt.Errorf("--for %q is not an Entra ID principal: use its object id or application (client) id", assignee)
	}
	cond := fmt.Sprintf(`((!(ActionMatches{'%[1]s/read'} AND NOT SubOperationMatches{'Blob.List'}) AND !(ActionMatches{'%[1]s/write'}) AND !(ActionMatches{'%[1]s/add/action'}) AND !(ActionMatches{'%[1]s/delete'})) OR (@Resource[%[1]s:path] StringStartsWith '%[2]s')) AND ((!(ActionMatches{'%[1]s/read'} AND SubOperationMatches{'Blob.List'})) OR (@Request[%[1]s:prefix] StringStartsWith '%[2]s'))`,
		blobs, prefix)
	scope := fmt.Sprintf("/subscriptions/SUBSCRIPTION/resourceGroups/RESOURCE_GROUP/providers/Microsoft.Storage/storageAccounts/%s/blobServices/default/containers/%s", account, container)
	return fmt.Sprintf("az role assignment create \\\n  --assignee '%s' \\\n  --role 'Storage Blob Data Contributor' \\\n  --scope '%s' \\\n  --condition-version 2.0 \\\n  --condition \"%s\"",
		assignee, scope, cond), nil
}
