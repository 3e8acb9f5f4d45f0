package azblobstore

import (
	"context"
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/verify"
)

// Verify proves on a throwaway prefix under the store's that the service
// honours the ETag conditions fencing needs (package verify), with writers
// racing writers. Each request is one attempt, never retried: a retried
// conditional write whose first answer was lost would look refused. Blob
// leases are not checked: the store does not use them (docs/design.md
// §5.8).
func (s *Store) Verify(ctx context.Context, writers int) (verify.Report, error) {
	return verify.Run(ctx, verifyObjects{s.b}, s.b.prefix, writers)
}

// verifyObjects is the store's conditional operations on raw keys, with
// ETags as versions.
type verifyObjects struct{ s *bucket }

// Write is an upload with If-None-Match: * (ifMatch "") or If-Match.
func (v verifyObjects) Write(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, v.s.attemptTimeout)
	defer cancel()
	etag, err := v.s.upload(ctx, key, data, true, ifMatch)
	if errors.Is(err, objectstore.ErrPrecondition) {
		return "", verify.ErrConflict
	}
	if err != nil {
		return "", v.s.permanent("write "+key, err)
	}
	return etag, nil
}

// DeleteIf is a delete with If-Match.
func (v verifyObjects) DeleteIf(ctx context.Context, key, version string) error {
	ctx, cancel := context.WithTimeout(ctx, v.s.attemptTimeout)
	defer cancel()
	c, err := v.s.clientFor(ctx)
	if err != nil {
		return v.s.permanent("delete "+key, err)
	}
	_, err = c.NewBlobClient(key).Delete(ctx, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: quoted(version)},
	}})
	if status(err) == http.StatusPreconditionFailed || errorCode(err) == "ConditionNotMet" {
		return verify.ErrConflict
	}
	if err != nil {
		return v.s.permanent("delete "+key, err)
	}
	return nil
}

func (v verifyObjects) Remove(ctx context.Context, key string) error { return v.s.Delete(ctx, key) }

func (v verifyObjects) List(ctx context.Context, prefix string) ([]string, error) {
	return listedKeys(v.s.List(ctx, prefix))
}

func listedKeys(l []objectstore.Listed, err error) ([]string, error) {
	keys := make([]string, 0, len(l))
	for _, o := range l {
		keys = append(keys, o.Key)
	}
	return keys, err
}
