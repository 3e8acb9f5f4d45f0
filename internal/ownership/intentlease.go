package ownership

import (
	"context"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The intent race rule (issue 12 item 6). Two scopes that plan to create the
// same object both pass the foreign check when neither has written its
// intent yet. Deciding afterwards by the time each store first recorded an
// intent let both through on PostgreSQL: the time was taken before the
// write became visible, so a run could see only its own intent although
// the other's was recorded "first". Instead, the check and the checkpoint
// that writes the intents happen under one lease of the environment, the
// intent lease: the store grants it to one run at a time, atomically, so
// the runs' checkpoints are ordered by the store itself, on every backend,
// and each run's check sees the intents of every run before it. The lease
// is a parent lease (docs/design.md §2.10 "Parent lease") on the environment's
// ownership index: status leaves it out, and a run takes it last, after its
// own parent leases, and waits for nothing while holding it.

// IntentLeaseScope is the store scope of an environment's intent lease.
var IntentLeaseScope = ParentLeaseScope("sponson|ownership-index")

// IntentLeaseTTL is the longest a run holds the intent lease unrenewed: a
// run that dies holding it blocks other runs' checkpoints for at most this
// long. The lease is renewed like any other while held.
const IntentLeaseTTL = time.Minute

// intentLeasePoll is how often a run waiting for the intent lease asks
// again: the lease is held for a check and one write.
const intentLeasePoll = 100 * time.Millisecond

// NeedsIntentLease reports whether a checkpoint of planned can race
// another scope's: it records an intent under an identity known at plan
// time.
func NeedsIntentLease(planned []Planned) bool {
	for _, p := range planned {
		if p.Creates() && len(p.AllKeys()) > 0 {
			return true
		}
	}
	return false
}

// UnderIntentLease takes the intent lease of env for holder (waiting for
// it), runs check and then write, and releases it. check must read the
// ownership index afresh: under the lease it sees every checkpoint written
// before. A lease lost before write returned is LOCK_LOST: the order is
// not proven, so the run must not go on.
func UnderIntentLease(ctx context.Context, st lease.Store, env, holder string, cfg lease.Config, check, write func(context.Context) error) (warning string, err error) {
	cfg.Wait = true
	cfg.OnWait = nil
	if cfg.TTL <= 0 || cfg.TTL > IntentLeaseTTL {
		cfg.TTL = IntentLeaseTTL
	}
	if cfg.PollInterval <= 0 || cfg.PollInterval > intentLeasePoll {
		cfg.PollInterval = intentLeasePoll
	}
	held, err := lease.Acquire(ctx, st, store.Key{Environment: env, Scope: IntentLeaseScope}, holder, cfg)
	if err != nil {
		return "", err
	}
	defer func() { warning = held.Release(context.WithoutCancel(ctx)) }()
	if err := check(ctx); err != nil {
		return "", err
	}
	if err := held.Check(); err != nil {
		return "", err
	}
	if err := write(ctx); err != nil {
		return "", err
	}
	return "", held.Check()
}
