package gcsstore

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/verify"
)

// Verify proves on a throwaway prefix under the store's that the server
// honours the preconditions fencing needs (package verify), with writers
// racing writers. Each request is one attempt, never retried: a retried
// conditional write whose first answer was lost would look refused.
func (s *Store) Verify(ctx context.Context, writers int) (verify.Report, error) {
	return verify.Run(ctx, verifyObjects{s.b}, s.b.prefix, writers)
}

// verifyObjects is the store's conditional operations on raw keys, with
// generations as versions.
type verifyObjects struct{ s *bucket }

// Write is an upload with ifGenerationMatch: 0 (ifMatch "") or the
// generation ifMatch names; one that names none is refused unsent.
func (v verifyObjects) Write(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	var gen int64 // only if absent
	if ifMatch != "" {
		var ok bool
		if gen, ok = generationOf(ifMatch); !ok {
			return "", verify.ErrConflict
		}
	}
	ctx, cancel := context.WithTimeout(ctx, v.s.attemptTimeout)
	defer cancel()
	g, err := v.s.upload(ctx, key, data, &gen)
	if errors.Is(err, objectstore.ErrPrecondition) {
		return "", verify.ErrConflict
	}
	if err != nil {
		return "", v.s.permanent("write "+key, err)
	}
	return generation(g), nil
}

// DeleteIf is a delete with ifGenerationMatch.
func (v verifyObjects) DeleteIf(ctx context.Context, key, version string) error {
	g, ok := generationOf(version)
	if !ok {
		return verify.ErrConflict
	}
	ctx, cancel := context.WithTimeout(ctx, v.s.attemptTimeout)
	defer cancel()
	c, err := v.s.clientFor(ctx)
	if err != nil {
		return v.s.permanent("delete "+key, err)
	}
	err = c.Objects.Delete(v.s.bucket, key).IfGenerationMatch(g).Context(ctx).Do()
	if status(err) == http.StatusPreconditionFailed {
		return verify.ErrConflict
	}
	if err != nil {
		return v.s.permanent("delete "+key, err)
	}
	return nil
}

// generationOf is the generation a version names: a positive number.
func generationOf(version string) (int64, bool) {
	g, err := strconv.ParseInt(version, 10, 64)
	return g, err == nil && g > 0
}

func (v verifyObjects) Remove(ctx context.Context, key string) error {
	return v.s.Delete(ctx, key)
}

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
