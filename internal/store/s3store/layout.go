package s3store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/verify"
)

// Layout is the version of the object layout this package writes and reads
// (docs/design.md §5.6). 1 was the layout before stacks, whose pointers were
// <env>/.leases/<scope>.json; a newer one is refused. 3 adds the ownership
// log (changelog.go), which every ownership write of a layout 3 prefix
// goes through, so that its readers need not list; a prefix of layout 2
// (which a sponson that does not log may still write) is read and written
// as before, its readers listing the environment.
const Layout = 3

// layoutStacks is the first layout with stacks, still read and written.
const layoutStacks = 2

// layoutObject is the layout marker under the prefix. "@" never occurs in
// an environment name, so no scope's objects can take its name.
const layoutObject = "@layout.json"

// oldLayoutHint says what to do with a prefix written before stacks: the
// S3 store has no `sponson migrate`.
const oldLayoutHint = "`sponson migrate` does not move S3 scopes. Finish or release the runs of this prefix with the sponson that wrote it, " +
	"then give this sponson a new prefix (s3://BUCKET/NEW-PREFIX) and adopt the scopes' resources there."

type layoutDoc struct {
	Layout int `json:"layout"`
}

// Ready checks the prefix's layout once per Store, before its first
// operation (Open makes no request): a marker of a newer layout is
// STORE_LAYOUT_NEWER, pointers of the layout before stacks are
// STORE_LAYOUT_OLD, never read as an empty prefix. A prefix without a
// marker and without old pointers is new: the first write records the
// marker (a read leaves it unwritten, so read-only credentials can look at
// a new prefix). A failed check is tried again by the next operation.
func (s *bucket) Ready(ctx context.Context, write bool) error {
	s.layoutMu.Lock()
	defer s.layoutMu.Unlock()
	if (s.layoutWritten && (s.conforming || !write)) || (s.layoutChecked && !write) {
		return nil
	}
	for {
		v, err := s.layoutVersion(ctx)
		if err != nil {
			return err
		}
		switch {
		case v > Layout:
			return store.NewerLayoutError(s.display, v, Layout)
		case v >= layoutStacks:
			s.layoutChecked, s.layoutWritten, s.layout = true, true, v
			return s.checkConditions(ctx, write)
		case v > 0:
			return errcode.As(store.OldLayoutError(s.display, fmt.Sprintf("its %s records layout %d", layoutObject, v))).WithHint(oldLayoutHint)
		}
		if !s.layoutChecked {
			old, err := s.oldPointers(ctx)
			if err != nil {
				return err
			}
			if len(old) > 0 {
				return errcode.As(store.OldLayoutError(s.display, fmt.Sprintf("%d scope pointer(s), e.g. %s", len(old), old[0]))).WithHint(oldLayoutHint)
			}
			s.layoutChecked = true
		}
		if !write {
			return nil
		}
		doc, _ := json.Marshal(layoutDoc{Layout: Layout}) // cannot fail
		_, err = s.PutIf(ctx, s.prefix+layoutObject, doc, "", func(cur []byte) bool { return bytes.Equal(cur, doc) })
		switch {
		case err == nil:
			s.layoutWritten, s.layout = true, Layout
			return s.checkConditions(ctx, write)
		case !errors.Is(err, objectstore.ErrPrecondition):
			return err
		}
		// Another run wrote the marker first: read what it wrote.
	}
}

// Logged reports whether ownership writes of this prefix go through the
// ownership log: prefixes of layout 3 on (objectstore.Layout).
func (s *bucket) Logged() bool {
	s.layoutMu.Lock()
	defer s.layoutMu.Unlock()
	return s.layout >= 3
}

// layoutVersion is the version the marker records, 0 without a marker.
func (s *bucket) layoutVersion(ctx context.Context) (int, error) {
	key := s.prefix + layoutObject
	o, err := s.Get(ctx, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var doc layoutDoc
	if err := json.Unmarshal(o.Data, &doc); err != nil || doc.Layout < 1 {
		return 0, errcode.New(errcode.StoreUnavailable, "the layout marker s3://%s/%s is unreadable; restore it (it reads {\"layout\": %d})", s.bucket, key, Layout).With("store", s.display)
	}
	return doc.Layout, nil
}

// oldPointers lists the pointers of the layout before stacks,
// <env>/.leases/<scope>.json directly under .leases (the stacks' pointers
// are one level deeper), as <env>/.leases/<scope>.json: one listing of the
// prefix's environments and one of each environment's .leases.
func (s *bucket) oldPointers(ctx context.Context) ([]string, error) {
	envs, _, err := s.listDir(ctx, s.prefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, envDir := range envs {
		env := strings.TrimSuffix(strings.TrimPrefix(envDir, s.prefix), "/")
		if store.CheckName("environment", env) != nil {
			continue
		}
		_, objs, err := s.listDir(ctx, objectstore.LeasesDir(s.prefix, env))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			name, ok := strings.CutSuffix(strings.TrimPrefix(o, objectstore.LeasesDir(s.prefix, env)), ".json")
			if ok && store.CheckName("scope", name) == nil {
				out = append(out, strings.TrimPrefix(o, s.prefix))
			}
		}
	}
	return out, nil
}

// listDir lists prefix one level deep: the "directories" (common prefixes,
// ending in "/") and the keys of the objects directly under it.
func (s *bucket) listDir(ctx context.Context, prefix string) (dirs, objs []string, err error) {
	var token *string
	for {
		var page *s3.ListObjectsV2Output
		err := s.do(ctx, "list "+prefix, func(ctx context.Context) error {
			var err error
			page, err = s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix, Delimiter: aws.String("/"), ContinuationToken: token})
			return err
		}, nil)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range page.CommonPrefixes {
			dirs = append(dirs, aws.ToString(p.Prefix))
		}
		for _, o := range page.Contents {
			objs = append(objs, aws.ToString(o.Key))
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			return dirs, objs, nil
		}
		token = page.NextContinuationToken
	}
}

// checkConditions refuses, once per Store and before its first write, a
// server that ignores create-if-absent (docs/design.md §5.5, "Servers that
// ignore conditions"): it sends a create-if-absent (If-None-Match: *) of the layout
// marker, which exists. A server that honours the condition refuses it; one
// that accepts it would let two runs both create a new scope's lease, and
// is STORE_NOT_CONFORMING. The marker is then rewritten with the layout it
// records, so nothing changed. It costs one request per process that
// writes; the other properties take more (`sponson store verify`).
func (s *bucket) checkConditions(ctx context.Context, write bool) error {
	if !write || s.conforming {
		return nil
	}
	key := s.prefix + layoutObject
	doc, _ := json.Marshal(layoutDoc{Layout: s.layout}) // cannot fail
	err := s.do(ctx, "check the server's conditional writes on "+key, func(ctx context.Context) error {
		in := &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc))), IfNoneMatch: aws.String("*")}
		_, err := s.client.PutObject(ctx, in)
		if status(err) == http.StatusPreconditionFailed || apiCode(err) == "PreconditionFailed" {
			return objectstore.ErrPrecondition
		}
		return err
	}, nil)
	switch {
	case errors.Is(err, objectstore.ErrPrecondition):
		s.conforming = true
		return nil
	case err != nil:
		return err
	}
	return verify.NotConforming("S3", s.display, "s3://"+s.bucket+"/"+key, "If-None-Match: *")
}
