package azblobstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sharedFiles are the S3 store's files this package carries as they are:
// everything above the object operations (objects.go, azblobstore.go) and the
// layout check. Until the two stores share one package, a change to one of
// these files in either store must be made in both: this test fails until
// it is.
var sharedFiles = []string{"bodies.go", "changelog.go", "garbage.go", "history.go", "index.go", "lease.go", "ownersindex.go"}

// fromS3 is an S3 store file as this package carries it: its package name,
// and "S3" and "s3://" in the messages that name the store.
func fromS3(src string) string {
	return strings.NewReplacer(
		"package s3store\n", "package azblobstore\n",
		"the S3 store", "the Azure store",
		"s3://%s/%s", "azblob://%s/%s",
	).Replace(src)
}

func TestSharedFilesFollowS3Store(t *testing.T) {
	t.Parallel()
	for _, name := range sharedFiles {
		s3, err := os.ReadFile(filepath.Join("..", "s3store", name))
		if err != nil {
			t.Fatal(err)
		}
		ours, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fromS3(string(s3)), string(ours)); diff != "" {
			t.Errorf("%s differs from internal/store/s3store/%s (-s3store +azblobstore); make the change in both:\n%s", name, name, diff)
		}
	}
}
