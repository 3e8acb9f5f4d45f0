package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The lease operations: each is one compare-and-swap of the scope's
// branch (mutate), the lease record in the same tree as the documents it
// fences.

// Acquire grants the lease of key to holder for ttl. A live lease gives
// *store.HeldError, also when it is holder's own; an expired lease is taken
// over and reported in Grant.Preempted. A done ctx is refused up front: a
// lease granted to a run that is being interrupted would block the scope
// for a whole TTL.
func (s *Store) Acquire(ctx context.Context, key store.Key, holder string, ttl time.Duration) (store.Grant, error) {
	if err := checkKey(key); err != nil {
		return store.Grant{}, err
	}
	if ctx.Err() != nil {
		return store.Grant{}, ctxError(ctx, "acquiring the lease of "+key.String())
	}
	if holder == "" {
		return store.Grant{}, errcode.New(errcode.Usage, "a lease needs a holder")
	}
	if ttl <= 0 {
		return store.Grant{}, errcode.New(errcode.Usage, "lease TTL must be positive, got %s", ttl)
	}
	var g store.Grant
	err := s.mutate(ctx, key, func(cur *snapshot, now time.Time) (*change, error) {
		if cur.lease.Live(now) {
			return nil, &store.HeldError{Key: key, Lease: cur.lease}
		}
		next := store.LeaseInfo{Holder: holder, Token: cur.lease.Token + 1, AcquiredAt: now, ExpiresAt: now.Add(ttl), About: store.HolderFrom(ctx)}
		grant := store.Grant{Lease: store.Lease{Key: key, Holder: holder, Token: next.Token, ExpiresAt: next.ExpiresAt}}
		if cur.lease.Holder != "" {
			p := cur.lease
			grant.Preempted = &p
		}
		files := map[string][]byte{leaseFile: encodeLease(next)}
		if _, ok := cur.root[readmeFile]; !ok {
			files[readmeFile] = readme(key)
		}
		return &change{files: files, msg: fmt.Sprintf("acquire %s for %s, token %d", key, holder, next.Token), done: func() { g = grant }}, nil
	})
	if err != nil {
		return store.Grant{}, err
	}
	return g, nil
}

// Renew extends l to ttl from now if l still holds the lease;
// store.ErrLeaseLost otherwise.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := checkKey(l.Key); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, errcode.New(errcode.Usage, "lease TTL must be positive, got %s", ttl)
	}
	var out store.Lease
	err := s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		next := cur.lease
		next.ExpiresAt = now.Add(ttl)
		renewed := l
		renewed.ExpiresAt = next.ExpiresAt
		return &change{files: map[string][]byte{leaseFile: encodeLease(next)}, msg: fmt.Sprintf("renew %s for %s, token %d", l.Key, l.Holder, l.Token), done: func() { out = renewed }}, nil
	})
	if err != nil {
		return store.Lease{}, err
	}
	return out, nil
}

// Release frees the lease if l still holds it. The record stays with an empty
// holder and the same token; its ExpiresAt becomes the time of release.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		next := cur.lease
		next.Holder, next.About = "", store.HolderInfo{}
		next.ExpiresAt = now
		return &change{files: map[string][]byte{leaseFile: encodeLease(next)}, msg: fmt.Sprintf("release %s by %s, token %d", l.Key, l.Holder, l.Token)}, nil
	})
}

// ReadLease returns the lease record of key, the zero LeaseInfo if the scope
// never had one.
func (s *Store) ReadLease(ctx context.Context, key store.Key) (store.LeaseInfo, error) {
	if err := checkKey(key); err != nil {
		return store.LeaseInfo{}, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return store.LeaseInfo{}, err
	}
	return snap.lease, nil
}

// parseLease reads a lease record. One that does not parse is INTERNAL,
// never the zero record: that would restart the token at 1.
func parseLease(ref string, b []byte) (store.LeaseInfo, error) {
	var l store.LeaseInfo
	if err := json.Unmarshal(b, &l); err != nil {
		return l, errcode.Wrap(errcode.Internal, err, "lease record %s:%s is unreadable; it keeps the scope's fencing token, so restore it from the branch's history rather than delete it", ref, leaseFile).With("branch", ref)
	}
	if l.Token < 0 || (l.Holder != "" && l.Token == 0) {
		return l, errcode.New(errcode.Internal, "lease record %s:%s has an invalid token %d", ref, leaseFile, l.Token).With("branch", ref)
	}
	return l, nil
}

// fence checks, on the tip a write is decided on, that l still holds the
// lease: the record names l's holder and token and has not expired by the
// store's clock. The push's compare-and-swap then makes the check and the
// write one atomic step.
func fence(l store.Lease, cur *snapshot, now time.Time) error {
	if l.Holder == "" {
		return store.Lost(l.Key, "the lease has no holder")
	}
	c := cur.lease
	switch {
	case !cur.hasLease || c.Holder == "" && c.Token == 0:
		return store.Lost(l.Key, "the scope has no lease record")
	case c.Holder == "":
		return store.Lost(l.Key, fmt.Sprintf("the lease was released (token %d)", c.Token))
	case c.Holder != l.Holder || c.Token != l.Token:
		return store.Lost(l.Key, fmt.Sprintf("the lease is now %s's with token %d", c.Holder, c.Token))
	case !now.Before(c.ExpiresAt):
		return store.Lost(l.Key, "the lease expired at "+c.ExpiresAt.Format(time.RFC3339Nano))
	}
	return nil
}

func encodeLease(l store.LeaseInfo) []byte {
	b, _ := json.MarshalIndent(l, "", "  ") // a struct of strings, ints and times always encodes
	return append(b, '\n')
}
