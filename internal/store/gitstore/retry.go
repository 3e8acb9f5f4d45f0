package gitstore

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Retries within the store's budget: races with other writers and
// transient failures of the remote.

// retrier paces the retries of one operation within the store's budget:
// delay = 12.5 ms + rand·min(2 s, 25 ms·2^attempt), as the original tool
// measured it to spread contenders without starving them.
type retrier struct {
	s        *Store
	ctx      context.Context
	op, ref  string
	start    time.Time
	attempts int
	// lock is the remote's ref lock file the last refused push named
	// (heldLock), "" when the push lost to another writer.
	lock string
}

func (s *Store) retrier(ctx context.Context, op, ref string) *retrier {
	return &retrier{s: s, ctx: ctx, op: op, ref: ref, start: s.budgetClock()}
}

// elapsed is how much of the budget the operation has used.
func (r *retrier) elapsed() time.Duration { return r.s.budgetClock().Sub(r.start) }

// race waits before the next attempt after someone else moved the branch;
// STORE_CONTENDED once the budget is spent.
func (r *retrier) race() error {
	if ok, err := r.wait(); !ok {
		if err != nil {
			return err
		}
		if r.lock != "" {
			return errcode.New(errcode.StoreContended, "gave up %s %s on %s after %d attempts in %s: the remote kept refusing to lock the ref%s (budget %s)",
				r.op, r.ref, r.s.display, r.attempts, r.elapsed().Round(time.Millisecond), r.lock, r.s.budget).
				WithHint("A push that crashed on the remote's side can leave its lock file behind; when no push to this remote is running, remove that file and run again.").
				With("branch", r.ref).With("remote", r.s.display).With("attempts", r.attempts)
		}
		return errcode.New(errcode.StoreContended, "gave up %s %s on %s after %d attempts in %s: other writers kept moving it (budget %s)",
			r.op, r.ref, r.s.display, r.attempts, r.elapsed().Round(time.Millisecond), r.s.budget).
			With("branch", r.ref).With("remote", r.s.display).With("attempts", r.attempts).
			With("elapsedMs", r.elapsed().Milliseconds()).With("budgetMs", r.s.budget.Milliseconds())
	}
	return nil
}

// fail decides on a failed git command: permission and permanent failures
// are returned at once, transient ones are retried within the budget.
func (r *retrier) fail(err error) error {
	var gf *gitFailure
	if !errors.As(err, &gf) {
		return err
	}
	if gf.f != failTransient {
		return r.s.remoteError(gf.op, r.ref, gf.stderr, gf.f, gf.err)
	}
	if ok, werr := r.wait(); !ok {
		if werr != nil {
			return werr
		}
		return r.s.remoteError(gf.op, r.ref, gf.stderr, gf.f, gf.err).With("attempts", r.attempts).With("budgetMs", r.s.budget.Milliseconds())
	}
	return nil
}

// wait sleeps the next backoff delay; ok is false when the budget would be
// exceeded (err nil) or ctx ended (err set).
func (r *retrier) wait() (ok bool, err error) {
	r.attempts++
	n := min(r.attempts, 16)
	d := 12500*time.Microsecond + mrand.N(min(2*time.Second, 25*time.Millisecond<<n))
	if r.elapsed()+d > r.s.budget {
		return false, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return false, ctxError(r.ctx, r.op+" "+r.ref)
	case <-t.C:
		return true, nil
	}
}
