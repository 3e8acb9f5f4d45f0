package receipt

import (
	"slices"
	"time"
)

// Run names the run or edit a successor receipt records: who writes it,
// as what, with what outcome, and when.
type Run struct {
	RunID, Command, Status string
	// Actor is who started it (runctx.DetectJob), empty when unknown;
	// JobURL the CI job it ran in, empty outside CI.
	Actor, JobURL         string
	StartedAt, FinishedAt time.Time
}

// First is the receipt a scope starts from before it has any: its names
// and an empty ledger. Next(First(...), run) is a scope's first receipt.
func First(stack, env, scope string) *Receipt {
	return &Receipt{Version: Version, Stack: stack, Environment: env, Scope: scope, Changes: []Change{}, Ledger: []Entry{}}
}

// Next is the receipt that follows prev in its scope, written by run: the
// one way a run or an edit builds its receipt from the scope's latest
// (docs/design.md §2.2 "Receipt"). What carries over is what the scope
// is, not what one run did:
//
//   - the scope's names, branch, pull request and last commit (the commit a
//     later run is compared with, OLDER_COMMIT);
//   - the ledger, and what is still open about it: the completions a
//     stopped run recorded (Completed, HeldCompletions), which the next run
//     settles its intents against;
//   - the succession chain (InheritedFrom, Inheriting, SupersededBy,
//     Handover), a stack move (MovedTo, MovedFrom), the objects the
//     scope gave up (Released), and the
//     quarantined states already reconciled (Reconciled).
//
// Everything else describes one run and starts empty: status and times
// (run's), actor, approver, engine, changes, reads, settlement, preemption,
// older-commit allowance, adoption, policy verdict, error and unlock. The slices are
// copies: the caller may change them without touching prev.
func Next(prev *Receipt, run Run) *Receipt {
	return &Receipt{
		Version: Version, RunID: run.RunID, Command: run.Command, Status: run.Status,
		Actor: run.Actor, JobURL: run.JobURL, StartedAt: run.StartedAt, FinishedAt: run.FinishedAt,
		Stack: prev.Stack, Environment: prev.Environment, Scope: prev.Scope,
		Branch: prev.Branch, PullRequest: prev.PullRequest, Commit: prev.Commit,
		Changes:         []Change{},
		Ledger:          append([]Entry{}, prev.Ledger...),
		Completed:       slices.Clone(prev.Completed),
		HeldCompletions: prev.HeldCompletions,
		InheritedFrom:   prev.InheritedFrom, Inheriting: prev.Inheriting, SupersededBy: prev.SupersededBy,
		Handover: prev.Handover, MovedTo: prev.MovedTo, MovedFrom: prev.MovedFrom,
		Released:   slices.Clone(prev.Released),
		Reconciled: slices.Clone(prev.Reconciled),
	}
}
