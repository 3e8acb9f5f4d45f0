package objectstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// pointer is a scope's pointer object: its lease record and the names
// (relative to the scope's directory) of its current bodies. Nonce differs
// in every version, so no two versions share an ETag.
type pointer struct {
	Nonce      string    `json:"nonce"`
	Holder     string    `json:"holder"`
	Token      int64     `json:"token"`
	AcquiredAt time.Time `json:"acquiredAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	// About describes the holder for people (store.WithHolder).
	About   store.HolderInfo  `json:"about,omitzero"`
	Receipt string            `json:"receipt,omitempty"`
	Owners  string            `json:"owners,omitempty"`
	State   string            `json:"state,omitempty"`
	Records map[string]string `json:"records,omitempty"`
}

func (p pointer) info() store.LeaseInfo {
	return store.LeaseInfo{Holder: p.Holder, Token: p.Token, AcquiredAt: p.AcquiredAt, ExpiresAt: p.ExpiresAt, About: p.About}
}

// clone copies p with its own Records map.
func (p pointer) clone() pointer {
	p.Records = maps.Clone(p.Records)
	return p
}

// current is a pointer as read, with its ETag (empty when absent) and the
// server's clock at the read.
type current struct {
	p    pointer
	etag string
	now  time.Time
}

func decodePointer(k store.Key, data []byte) (pointer, error) {
	var p pointer
	if err := json.Unmarshal(data, &p); err != nil {
		return pointer{}, errcode.Wrap(errcode.Internal, err, "the lease pointer of %s is unreadable; it keeps the scope's fencing token, so restore it rather than delete it", k)
	}
	if p.Token < 0 || (p.Holder != "" && p.Token == 0) {
		return pointer{}, errcode.New(errcode.Internal, "the lease pointer of %s has an invalid token %d", k, p.Token)
	}
	return p, nil
}

func (s *Store) readPointer(ctx context.Context, k store.Key) (current, error) {
	o, err := s.objects.Get(ctx, s.pointerKey(k))
	if errors.Is(err, ErrNotFound) {
		return current{now: o.Date}, nil
	}
	if err != nil {
		return current{}, err
	}
	p, err := decodePointer(k, o.Data)
	if err != nil {
		return current{}, err
	}
	return current{p: p, etag: o.ETag, now: o.Date}, nil
}

// writePointer replaces the pointer read as cur with next (a fresh nonce is
// drawn here), conditionally on cur's ETag. A write that changes the
// ownership part is bracketed by the ownership log (changelog.go): no such
// PUT is sent before its begin is recorded.
func (s *Store) writePointer(ctx context.Context, k store.Key, cur current, next pointer) (err error) {
	next.Nonce = nonce()
	data, err := json.Marshal(next)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode the lease pointer of %s", k)
	}
	if next.Owners != cur.p.Owners && s.objects.Logged() {
		token, err := s.logBegin(ctx, k, cur.etag)
		if err != nil {
			return err
		}
		defer func() {
			// Only a known outcome ends the mark: landed, or the pointer
			// moved off cur.etag (no request of ours can land now). After
			// another failure an attempt may still be on its way to the
			// server; the mark stays until a writer of the log finds the
			// pointer moved (dropOver).
			if err == nil || errors.Is(err, ErrPrecondition) {
				s.logEnd(ctx, k, token)
			}
		}()
	}
	_, err = s.objects.PutIf(ctx, s.pointerKey(k), data, cur.etag, func(b []byte) bool {
		var p pointer
		return json.Unmarshal(b, &p) == nil && p.Nonce == next.Nonce
	})
	return err
}

// Acquire grants the lease of key to holder for ttl, from the server's clock.
// A live lease gives *store.HeldError, also when it is holder's own. An
// expired one (by the server's Date, past ExpiresAt plus TakeoverMargin) is
// taken over and reported in Grant.Preempted. Losing the race for the
// pointer to another contender reads it again and reports who won.
func (s *Store) Acquire(ctx context.Context, key store.Key, holder string, ttl time.Duration) (store.Grant, error) {
	if err := s.objects.Ready(ctx, true); err != nil {
		return store.Grant{}, err
	}
	if err := store.CheckKey(key); err != nil {
		return store.Grant{}, err
	}
	if ctx.Err() != nil {
		return store.Grant{}, ContextError(ctx, "acquire the lease of "+key.String())
	}
	if holder == "" {
		return store.Grant{}, errcode.New(errcode.Usage, "a lease needs a holder")
	}
	if ttl <= 0 {
		return store.Grant{}, errcode.New(errcode.Usage, "lease TTL must be positive, got %s", ttl)
	}
	var g store.Grant
	err := s.again(ctx, "acquire the lease of "+key.String(), func() error {
		cur, err := s.readPointer(ctx, key)
		if err != nil {
			return err
		}
		if cur.p.Holder != "" && cur.now.Before(cur.p.ExpiresAt.Add(TakeoverMargin)) {
			return &store.HeldError{Key: key, Lease: cur.p.info()}
		}
		next := cur.p.clone()
		next.Holder, next.Token = holder, cur.p.Token+1
		next.AcquiredAt, next.ExpiresAt = cur.now, cur.now.Add(ttl)
		next.About = store.HolderFrom(ctx)
		if err := s.writePointer(ctx, key, cur, next); err != nil {
			return err
		}
		g = store.Grant{Lease: store.Lease{Key: key, Holder: holder, Token: next.Token, ExpiresAt: next.ExpiresAt}}
		if cur.p.Holder != "" {
			prev := cur.p.info()
			g.Preempted = &prev
		}
		return nil
	})
	return g, err
}

// again runs step until it does not end in ErrPrecondition (the pointer
// moved between our read and our write: read it again and decide again),
// within the budget.
func (s *Store) again(ctx context.Context, what string, step func() error) error {
	start := time.Now()
	for {
		err := step()
		if !errors.Is(err, ErrPrecondition) {
			return err
		}
		if ctx.Err() != nil {
			return ContextError(ctx, what)
		}
		if time.Since(start) > s.budget {
			return errcode.New(errcode.StoreContended, "the %s store %s could not %s within %s: the pointer kept moving", s.name, s.display, what, s.budget).With("store", s.display)
		}
	}
}

// check returns store.ErrLeaseLost unless cur still names l and has not
// expired by the server's clock.
func check(l store.Lease, cur current) error {
	switch {
	case cur.etag == "" || (cur.p.Holder == "" && cur.p.Token == 0):
		return store.Lost(l.Key, "the scope has no lease record")
	case cur.p.Holder == "":
		return store.Lost(l.Key, fmt.Sprintf("the lease was released (token %d)", cur.p.Token))
	case cur.p.Holder != l.Holder || cur.p.Token != l.Token:
		return store.Lost(l.Key, fmt.Sprintf("the lease is now %s's with token %d", cur.p.Holder, cur.p.Token))
	case !cur.now.Before(cur.p.ExpiresAt):
		return store.Lost(l.Key, "the lease expired at "+cur.p.ExpiresAt.Format(time.RFC3339Nano)+" by the server's clock")
	}
	return nil
}

// fenced moves the pointer of l's scope to what mutate makes of it, if l
// still holds the lease: read, check, conditional write, and again from
// the read when the pointer moved meanwhile (a renewal of our own, or a
// takeover, which the next check then refuses). It returns the pointer it
// replaced, whose bodies the caller may then delete.
func (s *Store) fenced(ctx context.Context, l store.Lease, what string, mutate func(next *pointer, cur current) error) (pointer, error) {
	if l.Holder == "" {
		return pointer{}, store.Lost(l.Key, "the lease has no holder")
	}
	var prev pointer
	err := s.again(ctx, what, func() error {
		cur, err := s.readPointer(ctx, l.Key)
		if err != nil {
			return err
		}
		if err := check(l, cur); err != nil {
			return err
		}
		next := cur.p.clone()
		if err := mutate(&next, cur); err != nil {
			return err
		}
		if err := s.writePointer(ctx, l.Key, cur, next); err != nil {
			return err
		}
		prev = cur.p
		return nil
	})
	return prev, err
}

// Renew extends l to ttl from the server's clock if l still holds the lease.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := s.objects.Ready(ctx, true); err != nil {
		return store.Lease{}, err
	}
	if err := store.CheckKey(l.Key); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, errcode.New(errcode.Usage, "lease TTL must be positive, got %s", ttl)
	}
	out := l
	_, err := s.fenced(ctx, l, "renew the lease of "+l.Key.String(), func(next *pointer, cur current) error {
		next.ExpiresAt = cur.now.Add(ttl)
		out.ExpiresAt = next.ExpiresAt
		return nil
	})
	if err != nil {
		return store.Lease{}, err
	}
	return out, nil
}

// Release frees the lease if l still holds it; the token stays in the
// pointer, so the next grant is token+1.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := s.objects.Ready(ctx, true); err != nil {
		return err
	}
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	// A cancelled ctx still releases (cleanup after an interrupt).
	ctx = context.WithoutCancel(ctx)
	_, err := s.fenced(ctx, l, "release the lease of "+l.Key.String(), func(next *pointer, cur current) error {
		next.Holder, next.About = "", store.HolderInfo{}
		next.ExpiresAt = cur.now
		return nil
	})
	return err
}

// ReadLease returns the lease record of key, the zero LeaseInfo if none.
func (s *Store) ReadLease(ctx context.Context, key store.Key) (store.LeaseInfo, error) {
	if err := s.objects.Ready(ctx, false); err != nil {
		return store.LeaseInfo{}, err
	}
	if err := store.CheckKey(key); err != nil {
		return store.LeaseInfo{}, err
	}
	cur, err := s.readPointer(ctx, key)
	if err != nil {
		return store.LeaseInfo{}, err
	}
	return cur.p.info(), nil
}
