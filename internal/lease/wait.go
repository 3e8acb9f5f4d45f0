package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Taken is what Take got: a grant, or a live lease it joined.
type Taken struct {
	Grant store.Grant
	// Sent is when the request that ended the wait was sent: a lease's own
	// deadline counts from it (Schedule.Deadline), never from the answer.
	Sent time.Time
	// Joined is the live lease cfg.Join accepted, nil after a grant.
	Joined *store.LeaseInfo
}

// Take is the one wait loop for a lease, the wrapper's (Acquire) and the
// provider's sponson_lease: it asks the store for the lease of key for
// holder and, while another holder's lease is live and cfg.Wait, asks again
// every cfg.PollInterval until cfg.WaitTimeout. It fails with LOCK_HELD
// (not waiting), WAIT_TIMEOUT, INTERRUPTED (ctx ended the wait, also while
// the store was busy) or the store's own error; the first two carry the
// holder and its expiry as details.
func Take(ctx context.Context, st store.Leases, key store.Key, holder string, cfg Config) (Taken, error) {
	cfg.defaults()
	waitUntil := cfg.Now().Add(cfg.WaitTimeout)
	for {
		sent := cfg.Now()
		g, err := st.Acquire(store.WithHolder(ctx, cfg.About), key, holder, cfg.TTL)
		if err == nil {
			return Taken{Grant: g, Sent: sent}, nil
		}
		var held *store.HeldError
		if !errors.As(err, &held) {
			if cfg.Wait && ctx.Err() != nil {
				// The wait ended while the store was busy: that is an
				// interrupted wait, not a store failure.
				return Taken{}, errcode.Wrap(errcode.Interrupted, err, "stopped waiting for the lease of %s", key)
			}
			return Taken{}, err
		}
		if cfg.Join != nil && cfg.Join(held.Lease) {
			return Taken{Joined: &held.Lease, Sent: sent}, nil
		}
		if !cfg.Wait {
			return Taken{}, heldError(key, held.Lease)
		}
		now := cfg.Now()
		if !now.Before(waitUntil) {
			return Taken{}, errcode.New(errcode.WaitTimeout, "waited %s for the lease of %s; it is still held by %s",
				cfg.WaitTimeout, key, Describe(held.Lease)).
				With("holder", held.Lease.Holder).With("expiresAt", held.Lease.ExpiresAt)
		}
		if cfg.OnWait != nil {
			cfg.OnWait(held.Lease)
		}
		select {
		case <-ctx.Done():
			return Taken{}, errcode.Wrap(errcode.Interrupted, ctx.Err(), "stopped waiting for the lease of %s", key).
				With("holder", held.Lease.Holder)
		case <-cfg.Clock.After(min(cfg.PollInterval, waitUntil.Sub(now))):
		}
	}
}

func heldError(key store.Key, l store.LeaseInfo) *errcode.Error {
	e := errcode.New(errcode.LockHeld, "scope %s is held by %s", key, Describe(l)).
		With("holder", l.Holder).With("expiresAt", l.ExpiresAt).With("acquiredAt", l.AcquiredAt)
	if l.About != (store.HolderInfo{}) {
		e = e.With("holderInfo", l.About)
	}
	return e
}

// Describe says who holds a lease in the words a person looks for: "run
// 3c1f2a9b (https://…/actions/runs/123, @alice, commit 1a2b3c4, pull request
// #42, host runner-7) since 10:02, lease until 10:17". The parenthesis lists
// what the lease record's HolderInfo knows, and is left out when it knows
// nothing.
func Describe(l store.LeaseInfo) string {
	var about []string
	a := l.About
	if a.JobURL != "" {
		about = append(about, a.JobURL)
	}
	if a.Actor != "" {
		about = append(about, "@"+strings.TrimPrefix(a.Actor, "@"))
	}
	if a.Commit != "" {
		c := a.Commit
		if len(c) > 7 {
			c = c[:7]
		}
		about = append(about, "commit "+c)
	}
	if a.PullRequest > 0 {
		about = append(about, fmt.Sprintf("pull request #%d", a.PullRequest))
	}
	if a.Host != "" {
		about = append(about, "host "+a.Host)
	}
	s := "run " + strings.TrimPrefix(l.Holder, "run-")
	if len(about) > 0 {
		s += " (" + strings.Join(about, ", ") + ")"
	}
	if !l.AcquiredAt.IsZero() {
		s += " since " + l.AcquiredAt.Local().Format("15:04")
	}
	return s + ", lease until " + l.ExpiresAt.Local().Format("15:04")
}
