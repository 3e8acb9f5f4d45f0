package scoperun

import (
	"context"
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/ancestry"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/succession"
)

// loaded is what load produced: the receipt the run carries forward, the
// run's part in a succession, what the receipt records of
// --allow-older-commit, and what a plan saw for its saved plan.
type loaded struct {
	prev *receipt.Receipt
	// handover is the run's part in a succession (package succession).
	handover *succession.Handover
	// olderCommit is what the receipt records of --allow-older-commit
	// (checkCommit).
	olderCommit *receipt.AllowedOlderCommit
	// seen is what a plan saw of the scope before the engine ran, for a
	// saved plan (previewSuccession).
	seen planSeen
}

// load is the third phase: it reads the scope's latest receipt, the one the
// run carries forward, and in a run that writes takes the succession
// (package succession) as far as it goes before the engine starts: a
// predecessor finishes a handover it promised, a successor takes over or
// resumes one. done is set when a destroy ends here, having only dropped a
// copy of a predecessor's state. A configuration with its own backend takes
// no part in a succession.
func (r *runner) load(ctx, bg context.Context, work workdir) (ld *loaded, done bool, err error) {
	ld = &loaded{}
	if ld.prev, err = store.Latest(ctx, r.o.Store, r.key); err != nil {
		return nil, false, err
	}
	if ld.olderCommit, err = r.checkCommit(ctx, ld.prev); err != nil {
		return nil, false, err
	}
	if err := refuseMoved(ld.prev); err != nil {
		return nil, false, err
	}
	h := succession.New(succession.Run{
		Store: r.o.Store, Key: r.key, RunID: r.o.RunID, Command: string(r.o.Command), Context: r.o.Context,
		Lease: r.o.Lease, About: r.holderInfo(), Held: r.held, Started: r.started, Warn: r.warn, Info: r.info,
	})
	ld.handover = h
	if r.o.Command == Plan {
		ld.seen, err = r.previewSuccession(ctx, ld.prev, h, work.ownBackend())
		return ld, false, err
	}
	// A saved plan is checked before anything is written, the handover's
	// first step included.
	if err := r.checkSaved(ctx, ld.prev, work.ownBackend()); err != nil {
		return nil, false, err
	}
	r.onRelease(func() {
		if w := h.Release(bg); w != "" {
			r.warn(w)
		}
	})
	if !work.ownBackend() {
		if ld.prev, err = h.FinishPending(bg, ld.prev); err != nil {
			return nil, false, err
		}
	}
	if r.o.Command == Destroy {
		copyOnly, err := h.UnpromisedCopy(ctx, ld.prev)
		if err != nil {
			return nil, false, err
		}
		if copyOnly {
			rec, err := h.DropCopy(bg, ld.prev)
			if rec != nil {
				r.res.Receipt, r.res.Status = rec, rec.Status
			}
			return nil, true, err
		}
	}
	if work.ownBackend() {
		return ld, false, nil
	}
	ld.prev, err = h.Begin(bg, ld.prev)
	return ld, false, err
}

// checkCommit refuses an apply whose commit is an ancestor of the commit the
// scope last applied (OLDER_COMMIT, exit 2; docs/design.md §2.15), before the
// engine starts: a
// re-run of an old workflow, or a late push event queued behind a newer run
// with --wait, would otherwise roll the scope back without a word. It runs
// under the lease, so the receipt it compares with is the newest. A plan
// only warns, a destroy is never refused, and --allow-older-commit lets the
// apply through and is recorded in its receipt. When git cannot decide
// (package ancestry), the run warns and proceeds. older is what the
// receipt records of --allow-older-commit.
func (r *runner) checkCommit(ctx context.Context, prev *receipt.Receipt) (older *receipt.AllowedOlderCommit, err error) {
	if r.o.AllowOlderCommit {
		older = &receipt.AllowedOlderCommit{}
	}
	if r.o.Command == Destroy || prev == nil || prev.Command == string(Destroy) || prev.Commit == "" {
		return older, nil
	}
	git := r.o.Ancestry
	if git == nil {
		git = ancestry.GitIn(r.o.Dir)
	}
	commit := r.o.Context.Commit
	v := ancestry.Compare(ctx, git, commit, prev.Commit)
	switch v.Verdict {
	case ancestry.Unknown:
		r.warn(fmt.Sprintf("cannot tell whether commit %s is older than %s, which run %s applied last: %s; proceeding", orUnknown(commit), short(prev.Commit), prev.RunID, v.Why))
		return older, nil
	case ancestry.NotOlder:
		return older, nil
	}
	what := fmt.Sprintf("commit %s is an ancestor of %s, which run %s applied to %s/%s", short(commit), short(prev.Commit), prev.RunID, r.key.Environment, r.key.Scope)
	if !prev.FinishedAt.IsZero() {
		what += " at " + prev.FinishedAt.Local().Format("2006-01-02 15:04")
	}
	switch {
	case r.o.Command == Plan:
		r.warn(what + ": an apply of it would be refused (OLDER_COMMIT) without --allow-older-commit")
		return older, nil
	case r.o.AllowOlderCommit:
		r.warn(what + ": rolling the scope back, as --allow-older-commit asks")
		return &receipt.AllowedOlderCommit{Newer: prev.Commit, NewerRun: prev.RunID}, nil
	}
	return older, errcode.New(errcode.OlderCommit, "%s: applying it would roll the scope back", what).
		With("commit", commit).With("newerCommit", prev.Commit).With("newerRun", prev.RunID)
}

func short(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

func orUnknown(c string) string {
	if c == "" {
		return "(unknown)"
	}
	return short(c)
}
