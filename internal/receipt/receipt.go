// Package receipt defines the record of one run and the ledger it carries:
// what the run did and everything its scope owns. Receipts are JSON documents
// with a version; a reader refuses versions it does not know rather than
// guessing (RECEIPT_VERSION), and reports a damaged document as
// RECEIPT_CORRUPT instead of treating the scope as empty.
//
// A receipt records who ran what where (run id, command, environment, scope,
// branch, pull request, commit, approver, engine, times, the CI job), the
// planned changes, the other stacks' states the run read (reads), its
// lineage (lockPreempted after a takeover; inheritedFrom, inheriting,
// supersededBy and the handover promise of a succession), what
// --allow-older-commit let through (allowOlderCommit), the quarantined runs
// it reconciled (reconciledQuarantine) and the settlement of an earlier
// run's intents. Its status is running for a checkpoint, then applied,
// unchanged, destroyed, failed or cancelled, or settled for a settlement's
// own receipt (docs/design.md §2.2 "Receipt"). A ledger entry says how the
// object came to be owned: created, intent, inherited, adopted, or
// unresolved; an object a `removed` block with destroy = false took out of
// ownership is listed as released.
package receipt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Version is the format of a receipt that carries its whole ledger: what a
// run builds, and what a compact receipt reads as once expanded. The newest
// format read is CompactVersion.
const Version = 1

// Status of a run.
const (
	StatusRunning   = "running" // a checkpoint written before the engine writes
	StatusApplied   = "applied"
	StatusUnchanged = "unchanged"
	StatusFailed    = "failed"
	StatusDestroyed = "destroyed"
	// StatusCancelled is a run stopped by SIGINT or SIGTERM (a CI host's
	// cancel): the engine finished what it had in flight and wrote its
	// state, every completion is recorded, and Error says INTERRUPTED.
	// After a second signal the engine stops at once, and the creates it
	// gave up on stay intents for the next run to settle.
	StatusCancelled = "cancelled"
	// StatusSettled is the receipt a run writes once it has settled what an
	// earlier run left unfinished (claimed, adopted or unresolved entries),
	// before it plans; it stays the latest when the run goes no further.
	StatusSettled = "settled"
)

// How a ledger entry came to be owned by its scope.
const (
	CreatedBySponson   = "created"
	CreatedByIntent    = "intent"
	CreatedByInherited = "inherited"
	CreatedByAdopted   = "adopted"
	// CreatedByUnresolved is an intent whose outcome no run could learn: a
	// create that started before a crash, with no completion recorded and
	// nothing in the state. The scope keeps owning the identity (no other
	// scope may take it) until a person says what became of the object
	// (`sponson resolve`).
	CreatedByUnresolved = "unresolved"
)

// Receipt is the record of one run. The latest receipt of a scope carries the
// scope's ledger.
type Receipt struct {
	Version int    `json:"version"`
	RunID   string `json:"runId"`
	Command string `json:"command"`
	// Stack is the root module of the run (internal/stack); receipts
	// written before stacks existed have none.
	Stack       string    `json:"stack,omitempty"`
	Environment string    `json:"environment"`
	Scope       string    `json:"scope"`
	Status      string    `json:"status"`
	StartedAt   time.Time `json:"startedAt"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
	Branch      string    `json:"branch,omitempty"`
	PullRequest int       `json:"pullRequest,omitempty"`
	// Commit is the commit the run applied (or destroyed from): a later
	// run of an ancestor of it is refused (OLDER_COMMIT).
	Commit     string `json:"commit,omitempty"`
	ApprovedBy string `json:"approvedBy,omitempty"`
	// Actor is who started the run: the CI actor, the user, or an MCP
	// server's --actor (runctx.DetectJob).
	Actor string `json:"actor,omitempty"`
	// JobURL is the CI job the run ran in (runctx.DetectJob), for whoever
	// reads the receipt later: the overview links the run to it.
	JobURL string `json:"jobUrl,omitempty"`
	// AllowedOlderCommit is set when the run was given --allow-older-commit.
	AllowedOlderCommit *AllowedOlderCommit `json:"allowOlderCommit,omitempty"`
	Engine             Engine              `json:"engine,omitzero"`
	// Changes lists what the run's plan did to each resource address.
	Changes []Change `json:"changes"`
	// Reads lists the other stacks' states the run's sponson_outputs data
	// sources read (docs/design.md §6.4): a dependency on each.
	Reads []StackRead `json:"reads,omitempty"`
	// SavedPlan is the run id of the saved plan an apply applied (`apply
	// FILE`): a dependent's saved plan that read this plan's outputs
	// accepts the state it left (docs/design.md §4.2).
	SavedPlan string `json:"savedPlan,omitempty"`
	// Ledger lists every resource the scope owns after this run. A
	// compact receipt (CompactVersion) stores it as LedgerBase and
	// LedgerDelta, and reads back whole once expanded (Expand).
	Ledger []Entry `json:"ledger"`
	// LedgerBase names the base a compact receipt's ledger is written
	// against, and LedgerDelta is the ledger as segments of it; both are
	// empty on a receipt read whole or expanded.
	LedgerBase    string     `json:"ledgerBase,omitempty"`
	LedgerDelta   []Segment  `json:"ledgerDelta,omitempty"`
	LockPreempted *Preempted `json:"lockPreempted,omitempty"`
	InheritedFrom string     `json:"inheritedFrom,omitempty"`
	// Inheriting names the predecessor while a handover to this scope is
	// not finished; the next run of this scope resumes it.
	Inheriting   string `json:"inheriting,omitempty"`
	SupersededBy string `json:"supersededBy,omitempty"`
	// Handover is set on a predecessor's receipt while its resources are
	// promised to a successor scope (succession): from then on they are the
	// successor's, and the predecessor's destroy leaves them alone.
	Handover *Handover `json:"handover,omitempty"`
	// MovedTo is set on the receipts of a stack's scope once its state is
	// promised to the same scope of another stack, the stack its directory
	// was renamed to (internal/stackmove): from then on its resources are
	// that stack's, and a run of this one finishes the move, never
	// destroys them. MovedFrom names, on the new stack's scope, the stack
	// its state was moved from.
	MovedTo   string `json:"movedTo,omitempty"`
	MovedFrom string `json:"movedFrom,omitempty"`
	// Settled lists the intents of an interrupted earlier run that this
	// run settled against the state.
	Settled []Settlement `json:"settledIntents,omitempty"`
	// Completed lists the creates the engine reported complete during this
	// run's apply, recorded in the checkpoint as they happen: after a crash
	// the next run adopts those the state lacks by their id.
	Completed []Completion `json:"completedCreates,omitempty"`
	// HeldCompletions is set on a checkpoint whose run pauses its engine
	// for every completion a planned create waits for until it is
	// recorded: only then does a missing completion prove that the creates
	// waiting for it had not started.
	HeldCompletions bool `json:"heldCompletions,omitempty"`
	// Released lists objects this run stopped managing without destroying
	// them (a `removed` block with destroy = false): no scope owns them any
	// more, and no scope's destroy will delete them.
	Released []Entry `json:"released,omitempty"`
	// Reconciled lists the runs whose quarantined states this run (or an
	// earlier one) reconciled with the scope's state; they are not
	// reconciled again.
	Reconciled []string `json:"reconciledQuarantine,omitempty"`
	// AdoptedFrom is set by `sponson adopt`: the backend the scope's state
	// was taken from.
	AdoptedFrom *Adoption `json:"adoptedFrom,omitempty"`
	// Policies is the verdict of the environment's policies on the run's
	// plan (docs/design.md §2.19 Policies), nil when it declares none. It
	// describes one run: Next never carries it over.
	Policies *Policies `json:"policies,omitempty"`
	Error    *Failure  `json:"error,omitempty"`
	// Unlocked is set on the receipt `sponson unlock` writes when it ends a
	// live lease by hand (break-glass): who did it, why, and whose lease.
	Unlocked *Unlocked `json:"unlocked,omitempty"`

	// WriteAgainst, set by Against for a store's write, is the base
	// Marshal writes the ledger against. It is never stored or read back.
	WriteAgainst *Base `json:"-"`
}

// Policies are the verdicts of policies on a run's plan: the trusted
// policies' (the verdict that gates), and Proposed, the verdict of the
// checkout's own policies where they differ from the trusted ones, for the
// review alone: it never gates a run.
type Policies struct {
	PolicyVerdict
	Proposed *PolicyVerdict `json:"proposed,omitempty"`
}

// PolicyVerdict is what policies say of a plan: what they refuse (deny,
// violation) and what they warn of.
type PolicyVerdict struct {
	Deny []PolicyMessage `json:"deny,omitempty"`
	Warn []PolicyMessage `json:"warn,omitempty"`
}

// PolicyMessage is one message of a policy rule: the file that defines
// the rule, the rule's name and its message.
type PolicyMessage struct {
	Policy string `json:"policy"`
	Rule   string `json:"rule"`
	Msg    string `json:"msg"`
}

// StackRead is another stack's state a run read its outputs from.
type StackRead struct {
	// Address is the data source's address in the configuration.
	Address string `json:"address"`
	Stack   string `json:"stack"`
	Scope   string `json:"scope"`
	Serial  int64  `json:"serial"`
	// Planned is set when a plan of many stacks read the stack's planned
	// outputs; Provisional lists those known only after its apply (the
	// plan used their applied values).
	Planned     bool     `json:"planned,omitempty"`
	Provisional []string `json:"provisional,omitempty"`
	// PlanRun is the run id of the plan whose outputs a Planned read took.
	PlanRun string `json:"planRun,omitempty"`
	// Named is set when the data source named the scope to read, so
	// there was no fallback to main.
	Named bool `json:"namedScope,omitempty"`
}

// Completion is one change the engine reported complete: a create (with
// the new object's id), an update, a read of a data source or a delete.
type Completion struct {
	Address string `json:"address"`
	ID      string `json:"id,omitempty"`
	// Action is "create" (also when empty), "update", "read" or
	// "delete"; or "provision": the create's provisioners started (the
	// create had not completed then).
	Action string `json:"action,omitempty"`
}

// Unlocked records a lease ended by hand.
type Unlocked struct {
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	Holder string    `json:"holder"`
	Token  int64     `json:"token"`
	At     time.Time `json:"at"`
}

// Adoption records where `sponson adopt` took a scope's state from. The old
// backend is left as it was; this says which state it was, so that it can be
// compared and then retired.
type Adoption struct {
	// Backend is the type the configuration declared ("s3", "gcs", ...),
	// "local" for none.
	Backend   string `json:"backend"`
	Workspace string `json:"workspace"`
	Lineage   string `json:"lineage,omitempty"`
	Serial    int64  `json:"serial"`
	// SHA256 is of the state as the engine pulled it, hex.
	SHA256 string `json:"sha256"`
}

// AllowedOlderCommit records a run given --allow-older-commit, and the newer
// commit it rolled the scope back from when its own commit was older.
type AllowedOlderCommit struct {
	// Newer is the commit the scope had last applied, and NewerRun the run
	// that applied it, when this run's commit was its ancestor; empty when
	// the commit was not older, or git could not tell.
	Newer    string `json:"newer,omitempty"`
	NewerRun string `json:"newerRun,omitempty"`
}

// Engine names the binary that ran the plan.
type Engine struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Change is one planned action on one resource address.
type Change struct {
	Address string   `json:"address"`
	Type    string   `json:"type"`
	Actions []string `json:"actions"`
}

// Entry is one resource the scope owns, keyed by Identity (provider source,
// resource type and identifying attributes), so that renamed addresses keep
// their owner. It holds no attribute values beyond the identity, but for
// the planned values of an intent (Planned).
type Entry struct {
	Identity  string `json:"identity"`
	Address   string `json:"address"`
	Provider  string `json:"provider"`
	Type      string `json:"type"`
	ID        string `json:"id,omitempty"`
	CreatedBy string `json:"createdBy"`
	// Keys are further identities of the same object, under which the
	// ownership index lists it too: its identity by the provider's
	// identity or its id when Identity comes from the scope's policy, and
	// for an intent its identities under the other schemes in use in the
	// environment. Another scope's policy then cannot make it unmatchable
	// (issue 12 item 1).
	Keys []string `json:"keys,omitempty"`
	// Scheme lists the identifying attributes Identity was computed from,
	// when the scope's policy declares them for Type; empty when it is
	// the provider's identity or the id.
	Scheme []string `json:"scheme,omitempty"`
	// After, on an intent, lists the planned creates and updates the
	// engine completes before it starts this create (package applyorder):
	// while one of them has no recorded completion, the create cannot have
	// started.
	After []string `json:"after,omitempty"`
	// StateOnly is set on an intent whose type keeps nothing outside the
	// state, by the table or by the scope's policy (ownership.StateOnly):
	// a later run settles it without the policy of this one.
	StateOnly bool `json:"stateOnly,omitempty"`
	// Planned, on an intent and an unresolved entry, holds the planned
	// values a person can look the object up by: the known, non-sensitive
	// top-level attributes of the plan, rendered as text.
	Planned map[string]string `json:"planned,omitempty"`
	// Restore, on an intent of a type the settlement restores from the
	// plan (settle.ImportPlanned), holds the known, non-sensitive planned
	// values of the arguments an import cannot read back, as JSON: with
	// the completion's id they make the object the engine would have
	// written (docs/design.md §2.4).
	Restore map[string]json.RawMessage `json:"restore,omitempty"`
	// Provisioned, on an intent, says its resource block has
	// provisioners: a create the settlement leaves to the next apply runs
	// them again.
	Provisioned bool `json:"provisioned,omitempty"`
}

// Described is the entry's address with its planned values, for people:
// `aws_s3_bucket.b (bucket="acme-logs", region="eu-west-1")`.
func (e Entry) Described() string {
	if len(e.Planned) == 0 {
		return e.Address
	}
	keys := make([]string, 0, len(e.Planned))
	for k := range e.Planned {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, e.Planned[k])
	}
	return e.Address + " (" + strings.Join(parts, ", ") + ")"
}

// Handover is a promise of a predecessor's resources to its successor.
type Handover struct {
	To    string    `json:"to"`
	RunID string    `json:"runId"`
	At    time.Time `json:"at"`
}

// Outcomes of settling an intent.
const (
	SettledClaimed = "claimed" // the resource is in the state: the scope owns it
	// SettledDropped: the create left no object (it never started, or its
	// type keeps nothing outside the state); the next apply creates it.
	SettledDropped = "dropped"
	// SettledAdopted: the create completed (the engine reported its id) but
	// the state lacks it; the object was imported by that id.
	SettledAdopted = "adopted"
	// SettledUnresolved: the outcome cannot be known; the entry stays in the
	// ledger as unresolved.
	SettledUnresolved = "unresolved"
	// SettledGone and SettledGiven record a person's `sponson resolve`: the
	// object does not exist, or exists with the given id.
	SettledGone  = "gone"
	SettledGiven = "given"
	// SettledRewritten: its type writes its object where its arguments
	// say (ownership.InPlace: local_file's filename), and this run created
	// it again at the same place, which wrote the object the stopped run
	// may have made instead of a second one.
	SettledRewritten = "rewritten"
)

// Settlement records how one intent of an interrupted run was settled.
type Settlement struct {
	Address string `json:"address"`
	FromRun string `json:"fromRun"`
	Outcome string `json:"outcome"`
	ID      string `json:"id,omitempty"`
	// Note says why an intent stayed unresolved or was dropped.
	Note string `json:"note,omitempty"`
	// Reason says, for a dropped intent, which rule knew the create had
	// not happened (ReasonNotStarted, ReasonStateOnly, ReasonReplaceFirst);
	// for an unresolved one, ReasonInPlace when the next create at the
	// same place settles it.
	Reason string `json:"reason,omitempty"`
	// Rerun says, for people, what the next apply runs again of the
	// stopped run's create (its provisioners), or what a create wrote
	// again in place, whose first effects the engine does not track.
	Rerun string `json:"rerun,omitempty"`
}

// Why an intent was dropped (docs/design.md §2.4 "Intent").
const (
	// ReasonNotStarted: a create it waits for (Entry.After) had not
	// completed, so the engine had not started it.
	ReasonNotStarted = "not-started"
	// ReasonReplaceFirst: the delete that a replacement makes before its
	// create had not completed, so the create had not started.
	ReasonReplaceFirst = "replace-not-started"
	// ReasonStateOnly: its type keeps nothing outside the state
	// (ownership.StateOnly), so whatever its create did is gone with the
	// state that lacks it.
	ReasonStateOnly = "state-only"
	// ReasonInPlace: its create may have happened, and its type writes
	// its object where its arguments say (ownership.InPlace): it stays
	// unresolved until a create of it at the same place completes, which
	// settles it as SettledRewritten.
	ReasonInPlace = "in-place"
)

// Preempted records the expired lease a run took over.
type Preempted struct {
	Holder string    `json:"holder"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"expiredAt"`
}

// Failure is the error a failed run ended with.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Marshal renders r as the stored document: indented JSON and a final
// newline. A receipt given a base (Against) is stored compact, its ledger
// as the difference from the base.
func Marshal(r *Receipt) ([]byte, error) {
	if r.WriteAgainst != nil {
		r = r.compacted()
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Parse reads a stored receipt. A document that is not a receipt is
// RECEIPT_CORRUPT; one from a newer format is RECEIPT_VERSION. A receipt
// of this format is read in one decode: every store write parses the
// receipt it writes back (store.EncodeReceipt), and a checkpoint at 1,000
// resources is 600 KB; only a document that fails is read again, for its
// version, to say which of the two it is.
func Parse(data []byte) (*Receipt, error) {
	var r Receipt
	if err := json.Unmarshal(data, &r); err != nil || r.Version < 1 || r.Version > CompactVersion {
		return nil, parseFailure(data, err)
	}
	if r.RunID == "" || r.Environment == "" || r.Scope == "" {
		return nil, errcode.New(errcode.ReceiptCorrupt, "receipt lacks runId, environment or scope")
	}
	if compact := r.Version == CompactVersion; compact != (r.LedgerBase != "") || (compact && len(r.Ledger) > 0) {
		return nil, errcode.New(errcode.ReceiptCorrupt, "receipt version %d with ledger base %q and %d ledger entries: only a version %d receipt, with no ledger of its own, names a base", r.Version, r.LedgerBase, len(r.Ledger), CompactVersion)
	}
	return &r, nil
}

// parseFailure says why data is not a receipt of this format: its version
// first (a newer format may not decode as this one), then decodeErr.
func parseFailure(data []byte, decodeErr error) error {
	var probe struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return errcode.Wrap(errcode.ReceiptCorrupt, err, "receipt is not valid JSON")
	}
	switch {
	case probe.Version == nil:
		return errcode.New(errcode.ReceiptCorrupt, "receipt has no version field")
	case *probe.Version < 1:
		return errcode.New(errcode.ReceiptCorrupt, "receipt version %d is not a version", *probe.Version)
	case *probe.Version > CompactVersion:
		return errcode.New(errcode.ReceiptVersion, "receipt version %d is not supported (this sponson reads up to %d)", *probe.Version, CompactVersion)
	}
	return errcode.Wrap(errcode.ReceiptCorrupt, decodeErr, "receipt does not match the format")
}
