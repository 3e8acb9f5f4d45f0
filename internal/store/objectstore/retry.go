package objectstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Backoff between attempts after a transient failure.
const (
	minDelay = 10 * time.Millisecond
	maxDelay = 2 * time.Second
)

// Retry is how a Bucket runs one object operation: every attempt with its
// own timeout, a failure that may pass tried again within the budget, the
// rest given their store error by the store that knows its server's
// answers.
type Retry struct {
	// Budget bounds the attempts, from the first; AttemptTimeout bounds
	// one, so a server that stopped answering costs one attempt, not the
	// whole budget.
	Budget, AttemptTimeout time.Duration
	// Transient reports whether a failure may go away by itself.
	Transient func(err error) bool
	// Permanent gives a failure retrying cannot change its store error
	// (the Store's own outcomes, ErrNotFound and the like, pass through).
	Permanent func(what string, err error) error
	// Exhausted is the error of an operation whose budget ran out on
	// attempts transient failures, the last err.
	Exhausted func(what string, attempts int, err error) error
}

// Do runs op until it succeeds, fails for a reason a retry cannot change,
// or the budget or ctx runs out. resolve, when set, is called before every
// attempt but the first and may end the loop with its own answer (nil or
// an error): the conditional writes use it to learn whether a lost answer
// had landed (Resolve).
func (r Retry) Do(ctx context.Context, what string, op func(ctx context.Context) error, resolve func(ctx context.Context) (done bool, err error)) error {
	start := time.Now()
	delay := minDelay
	for attempt := 0; ; attempt++ {
		if attempt > 0 && resolve != nil {
			actx, cancel := context.WithTimeout(ctx, r.AttemptTimeout)
			done, err := resolve(actx)
			cancel()
			if done {
				return err
			}
			if err != nil && !r.Transient(err) {
				return r.Permanent(what, err)
			}
		}
		actx, cancel := context.WithTimeout(ctx, r.AttemptTimeout)
		err := op(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ContextError(ctx, what)
		}
		if !r.Transient(err) {
			return r.Permanent(what, err)
		}
		wait := delay/2 + rand.N(delay)
		if time.Since(start)+wait > r.Budget {
			return r.Exhausted(what, attempt+1, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ContextError(ctx, what)
		case <-t.C:
		}
		delay = min(2*delay, maxDelay)
	}
}

// Resolve decides a conditional write of a document with a fresh nonce
// whose answer was lost (PutIf), from a read of its key made since (o,
// err): ours there (landed) means it succeeded, with o's version; the
// version it was conditional on still there, or nothing there when it was
// a create, means nothing happened and it is sent again (not done);
// anything else is someone else's write first (ErrPrecondition). A failed
// read is returned for Retry.Do to judge.
func Resolve(o Object, err error, ifMatch string, landed func([]byte) bool) (done bool, etag string, _ error) {
	switch {
	case errors.Is(err, ErrNotFound):
		if ifMatch == "" {
			return false, "", nil // not there yet: send it again
		}
		return true, "", ErrPrecondition
	case err != nil:
		return false, "", err
	case landed(o.Data):
		return true, o.ETag, nil
	case ifMatch != "" && o.ETag == ifMatch:
		return false, "", nil
	}
	return true, "", ErrPrecondition
}

// WithCause keeps err in e's chain (errors.Is, errors.As) without repeating
// the SDK's long rendering of it in the message, which says it already in
// a line of its own.
func WithCause(e *errcode.Error, err error) *errcode.Error {
	e.Err = err
	return e
}

// Decided reports a failure whose meaning is already settled: an outcome
// the Store handles itself (ErrNotFound, ErrPrecondition, ErrNotModified,
// store.ErrLeaseLost) or a store error (*errcode.Error). A Bucket neither
// retries it nor gives it another code.
func Decided(err error) bool {
	var ce *errcode.Error
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrPrecondition) || errors.Is(err, ErrNotModified) ||
		errors.Is(err, store.ErrLeaseLost) || errors.As(err, &ce)
}
