package azblobstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/verify"
)

// Layout is the version of the object layout this package writes and reads
// (docs/design.md §5.6): the S3 store's layout 3 (stacks and the ownership
// log), which is the only one an azblob:// prefix ever had. A newer one is
// refused.
const Layout = 3

// layoutObject is the layout marker under the prefix. "@" never occurs in
// an environment name, so no scope's objects can take its name.
const layoutObject = "@layout.json"

type layoutDoc struct {
	Layout int `json:"layout"`
}

// Ready checks the prefix's layout once per Store, before its first
// operation (Open makes no request): a marker of a newer layout is
// STORE_LAYOUT_NEWER, never read as an empty prefix. A prefix without a
// marker is new: the first write records the
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
		case v == Layout:
			s.layoutChecked, s.layoutWritten, s.layout = true, true, v
			return s.checkConditions(ctx, write)
		case v > 0:
			// No sponson wrote an older layout on Azure.
			return errcode.New(errcode.StoreUnavailable, "the layout marker azblob://%s/%s%s records layout %d, which no Azure store writes; restore it (it reads {\"layout\": %d})", s.bucket, s.prefix, layoutObject, v, Layout).With("store", s.display)
		}
		s.layoutChecked = true
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
// ownership log: prefixes of layout 3 on (objectstore.Layout), which is
// every prefix whose marker was found or written.
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
		return 0, errcode.New(errcode.StoreUnavailable, "the layout marker azblob://%s/%s is unreadable; restore it (it reads {\"layout\": %d})", s.bucket, key, Layout).With("store", s.display)
	}
	return doc.Layout, nil
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
		_, err := s.upload(ctx, key, doc, true, "")
		return err
	}, nil)
	switch {
	case errors.Is(err, objectstore.ErrPrecondition):
		s.conforming = true
		return nil
	case err != nil:
		return err
	}
	return verify.NotConforming("Azure", s.display, "azblob://"+s.bucket+"/"+key, "If-None-Match: *")
}
