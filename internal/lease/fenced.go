package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The fenced writes. Each goes to the store under the lease as it is now
// (a renewal may have replaced it), and a write the store refuses because
// the lease is gone makes the lease lost: the write then returns the
// lease's LOCK_LOST error, which wraps the store's refusal.
//
// Once the lease is lost, by the store's word or by the run's own deadline,
// nothing more is written, not even where the store would still accept it
// (its record may still name the run until the TTL runs out): a run that
// declared LOCK_LOST writes nothing else, the engine's last flush included
// (docs/design.md §2.8).

// WriteState replaces the scope's Terraform state.
func (h *Held) WriteState(ctx context.Context, state []byte) error {
	return h.fenced(func(l store.Lease) error { return h.st.WriteState(ctx, l, state) })
}

// WriteReceipt stores rec as the scope's latest receipt: against the
// scope's ledger base when its ledger is large (store.WriteCompact), so that
// a run's receipts grow with what changed, not with the scope.
func (h *Held) WriteReceipt(ctx context.Context, rec *receipt.Receipt) error {
	return h.fenced(func(l store.Lease) error {
		h.mu.Lock()
		known := h.base
		h.mu.Unlock()
		b, err := store.WriteCompact(ctx, h.st, l, rec, known, h.cfg.CompactFrom)
		if err == nil {
			h.mu.Lock()
			h.base = b
			h.mu.Unlock()
		}
		return err
	})
}

// WriteRecord stores the scope's record name.
func (h *Held) WriteRecord(ctx context.Context, name string, data []byte) error {
	return h.fenced(func(l store.Lease) error { return h.st.WriteRecord(ctx, l, name, data) })
}

// DeleteRecord removes the scope's record name.
func (h *Held) DeleteRecord(ctx context.Context, name string) error {
	return h.fenced(func(l store.Lease) error { return h.st.DeleteRecord(ctx, l, name) })
}

func (h *Held) fenced(write func(store.Lease) error) error {
	if lost := h.Err(); lost != nil {
		return lost
	}
	err := write(h.Lease())
	if errors.Is(err, store.ErrLeaseLost) {
		h.markLost(err)
		return h.Err()
	}
	return err
}

// Confirm reads the lease record once; when it names another holder or
// token, or has expired, the lease is lost. It returns Err. The engine may
// have failed because a write of its provider was refused before the
// renewal noticed: this tells such a failure from the engine's own.
func (h *Held) Confirm(ctx context.Context) error {
	if err := Confirm(ctx, h.st, h.Lease(), h.cfg.Now()); errors.Is(err, store.ErrLeaseLost) {
		h.markLost(err)
	}
	return h.Err()
}

// Confirm checks l against the store's lease record at now: an error
// wrapping store.ErrLeaseLost when the record names another holder or
// token or has expired, the store's error when it cannot be read.
func Confirm(ctx context.Context, st store.Leases, l store.Lease, now time.Time) error {
	info, err := st.ReadLease(ctx, l.Key)
	if err != nil {
		return err
	}
	if info.Holder != l.Holder || info.Token != l.Token || !now.Before(info.ExpiresAt) {
		return fmt.Errorf("%w: the lease record of %s now names %q with token %d, expiring %s",
			store.ErrLeaseLost, l.Key, info.Holder, info.Token, info.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}
