package s3store

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/verify"
)

// Verify proves on a throwaway prefix under the store's that the server
// honours the conditional writes fencing needs (package verify), with
// writers racing writers. Each request is one attempt, never retried: a
// retried conditional write whose first answer was lost would look refused.
func (s *Store) Verify(ctx context.Context, writers int) (verify.Report, error) {
	return verify.Run(ctx, verifyObjects{s.b}, s.b.prefix, writers)
}

// verifyObjects is the store's conditional operations on raw keys, with
// ETags as versions.
type verifyObjects struct{ s *bucket }

// refused reports an answer that says the condition did not hold: 412, or
// a 409 ConditionalRequestConflict (another conditional write of the key
// was in flight, and this one did not land).
func refused(err error) bool {
	return status(err) == http.StatusPreconditionFailed || apiCode(err) == "PreconditionFailed" || conflict(err)
}

// Write is a PutObject with If-None-Match: * (ifMatch "") or If-Match.
func (v verifyObjects) Write(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, v.s.attemptTimeout)
	defer cancel()
	in := &s3.PutObjectInput{Bucket: &v.s.bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}
	if ifMatch == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(`"` + ifMatch + `"`)
	}
	out, err := v.s.client.PutObject(ctx, in)
	if refused(err) {
		return "", verify.ErrConflict
	}
	if err != nil {
		return "", v.s.permanent("write "+key, err)
	}
	return normETag(out.ETag), nil
}

// DeleteIf is a DeleteObject with If-Match.
func (v verifyObjects) DeleteIf(ctx context.Context, key, version string) error {
	ctx, cancel := context.WithTimeout(ctx, v.s.attemptTimeout)
	defer cancel()
	_, err := v.s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &v.s.bucket, Key: &key, IfMatch: aws.String(`"` + version + `"`)})
	if refused(err) {
		return verify.ErrConflict
	}
	if err != nil && !errors.Is(err, objectstore.ErrNotFound) {
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
