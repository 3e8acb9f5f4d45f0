package gitstore

import (
	"context"
	"errors"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Reading a scope's branch: its tip, root tree and files, cached per key
// until the branch moves.

// snapshot is one tip of a scope's branch as the store has read it.
type snapshot struct {
	tip      string // "" when the branch does not exist
	root     map[string]entry
	lease    store.LeaseInfo
	hasLease bool
}

// kept is the document a mutation keeps locally if the remote refuses it.
type kept struct {
	what string
	name string
	data []byte
}

// errMissing says an object is not in the scratch repository (yet).
var errMissing = errors.New("object not in the scratch repository")

// read returns the current tip of key's branch from the remote.
func (s *Store) read(ctx context.Context, key store.Key) (*snapshot, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, "reading "+key.String())
	}
	if err := s.ensureLayout(ctx, false); err != nil {
		return nil, err
	}
	ks := s.keyState(key)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	snap, err := s.load(ctx, key, ks.snap, s.retrier(ctx, "reading", branchOf(key)))
	if err != nil {
		return nil, err
	}
	ks.snap = snap
	return snap, nil
}

// load reads the tip of key's branch: one ls-remote, and a fetch only when
// the tip is not in the scratch repository yet. cached is reused when the
// tip has not moved; r paces retries within the operation's budget.
func (s *Store) load(ctx context.Context, key store.Key, cached *snapshot, r *retrier) (*snapshot, error) {
	ref := branchOf(key)
	for {
		refs, err := s.lsRemote(ctx, ref)
		if err != nil {
			if err := r.fail(err); err != nil {
				return nil, err
			}
			continue
		}
		tip := refs[ref]
		if tip == "" {
			return &snapshot{}, nil
		}
		if cached != nil && cached.tip == tip {
			return cached, nil
		}
		snap, err := s.parse(ref, tip)
		if errors.Is(err, errMissing) {
			var haves []string
			if cached != nil && cached.tip != "" {
				haves = append(haves, cached.tip)
			}
			if err = s.fetch(ctx, []string{ref}, haves); err == nil {
				snap, err = s.parse(ref, tip)
			}
		}
		var gf *gitFailure
		switch {
		case err == nil:
			return snap, nil
		case errors.Is(err, errMissing) || errors.As(err, &gf) && gf.f == failGone:
			// The branch moved or vanished between ls-remote and fetch.
			if err := r.race(); err != nil {
				return nil, err
			}
		case errors.As(err, &gf):
			if err := r.fail(err); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
}

// parse reads the commit tip of ref and its lease record.
func (s *Store) parse(ref, tip string) (*snapshot, error) {
	kind, data, ok, err := s.cat.get(tip)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errMissing
	}
	if kind != "commit" {
		return nil, errcode.New(errcode.ReceiptCorrupt, "%s names a %s, not a commit", ref, kind)
	}
	treeID, err := commitTree(data)
	if err != nil {
		return nil, err
	}
	root, err := s.tree(treeID)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{tip: tip, root: root}
	b, ok, err := s.readFile(snap, leaseFile)
	if err != nil || !ok {
		return snap, err
	}
	if snap.lease, err = parseLease(ref, b); err != nil {
		return nil, err
	}
	snap.hasLease = true
	return snap, nil
}

// tree reads a tree object.
func (s *Store) tree(id string) (map[string]entry, error) {
	kind, data, ok, err := s.cat.get(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errMissing
	}
	if kind != "tree" {
		return nil, errcode.New(errcode.ReceiptCorrupt, "object %s is a %s, not a tree", id, kind)
	}
	return parseTree(data)
}

// readFile reads path ("name" or "dir/name") of a snapshot.
func (s *Store) readFile(snap *snapshot, path string) ([]byte, bool, error) {
	entries := snap.root
	dir, name, nested := strings.Cut(path, "/")
	if nested {
		e, ok := entries[dir]
		if !ok || e.mode != modeTree {
			return nil, false, nil
		}
		var err error
		if entries, err = s.tree(e.id); err != nil {
			return nil, false, err
		}
	} else {
		name = dir
	}
	e, ok := entries[name]
	if !ok {
		return nil, false, nil
	}
	kind, data, ok, err := s.cat.get(e.id)
	if err != nil {
		return nil, false, err
	}
	if !ok || kind != "blob" {
		return nil, false, errcode.New(errcode.ReceiptCorrupt, "%s of commit %s is missing or not a file", path, snap.tip)
	}
	return data, true, nil
}
