// Package errcode holds Sponson's one table of error codes: every failure the
// wrapper or the provider reports carries a code from this table, the exit
// code the CLI returns for it, what it means and what to do about it. The
// error reference in docs/ is generated from Table, so the table is the only
// place a code is defined.
package errcode

import (
	"errors"
	"fmt"
	"sort"
)

// Code names one kind of failure, e.g. LOCK_HELD. Codes are part of the
// public contract: scripts match on them in the --json envelope.
type Code string

// ExitCode is what the sponson process returns. Changing the exit code of a
// code is a breaking change.
type ExitCode int

// Exit codes of the CLI contract (docs/design.md §4).
const (
	ExitOK      ExitCode = 0 // the command did what was asked
	ExitFailed  ExitCode = 1 // it ran and failed
	ExitRefused ExitCode = 2 // refused before running: usage, approval, bad context
	ExitLock    ExitCode = 3 // the scope lease is held by another run, or was lost
)

// The codes. Keep them in the order of Table.
const (
	Usage              Code = "USAGE"
	CtxNull            Code = "CTX_NULL"
	EnvNotApproved     Code = "ENV_NOT_APPROVED"
	EnvUndeclared      Code = "ENV_UNDECLARED"
	RulesUntrusted     Code = "RULES_UNTRUSTED"
	RulesStale         Code = "RULES_STALE"
	OlderCommit        Code = "OLDER_COMMIT"
	CheckoutNotHead    Code = "CHECKOUT_NOT_HEAD"
	LockHeld           Code = "LOCK_HELD"
	LockLost           Code = "LOCK_LOST"
	OwnedByOtherScope  Code = "OWNED_BY_OTHER_SCOPE"
	PolicyDenied       Code = "POLICY_DENIED"
	IdentityPolicy     Code = "IDENTITY_POLICY"
	HandoverTaken      Code = "HANDOVER_TAKEN"
	ScopeHasState      Code = "SCOPE_HAS_STATE"
	StoreContended     Code = "STORE_CONTENDED"
	StoreRejected      Code = "STORE_REJECTED"
	StorePermission    Code = "STORE_PERMISSION"
	StoreUnavailable   Code = "STORE_UNAVAILABLE"
	StoreNotConforming Code = "STORE_NOT_CONFORMING"
	ReceiptCorrupt     Code = "RECEIPT_CORRUPT"
	ReceiptVersion     Code = "RECEIPT_VERSION"
	StoreLayoutOld     Code = "STORE_LAYOUT_OLD"
	StoreLayoutNewer   Code = "STORE_LAYOUT_NEWER"
	WaitTimeout        Code = "WAIT_TIMEOUT"
	EngineFailed       Code = "ENGINE_FAILED"
	EngineNotFound     Code = "ENGINE_NOT_FOUND"
	IntentUnresolved   Code = "INTENT_UNRESOLVED"
	PlanStale          Code = "PLAN_STALE"
	PlanCorrupt        Code = "PLAN_CORRUPT"
	DriftDetected      Code = "DRIFT_DETECTED"
	DriftCheckFailed   Code = "DRIFT_CHECK_FAILED"
	Interrupted        Code = "INTERRUPTED"
	FmtUnformatted     Code = "FMT_UNFORMATTED"
	MirrorFailed       Code = "MIRROR_FAILED"
	StackCycle         Code = "STACK_CYCLE"
	StackHasDependents Code = "STACK_HAS_DEPENDENTS"
	Internal           Code = "INTERNAL"
)

// Spec is one row of the table.
type Spec struct {
	Code    Code
	Exit    ExitCode
	Meaning string
	Hint    string
}

var table = []Spec{
	{Usage, ExitRefused, "The command line or a flag value is invalid.", "Run the command with --help to see its flags."},
	{CtxNull, ExitRefused, "The run context (environment, scope, branch, pull request) could not be decided, or a value is invalid.", "Pass --scope, --branch or --pr, or set SPONSON_CTX_BRANCH / SPONSON_CTX_PR."},
	{EnvNotApproved, ExitRefused, "The run can write a protected environment (production, or one sponson.hcl protects) or a resource the scope policy marks as production, and no allowed approver was named.", "Pass --approved-by NAME or set SPONSON_APPROVED_BY."},
	{EnvUndeclared, ExitRefused, "The environment is not one the repository declares (sponson.hcl; without it, preview and production).", "Use a declared environment, or declare it in sponson.hcl at the repository root."},
	{RulesUntrusted, ExitRefused, "The run's rules (sponson.hcl and the policies it names) could not be read from the trusted revision, the default branch as the remote has it; a CI run never falls back to the change's own copy.", "Fetch the default branch before sponson runs (actions/checkout with fetch-depth: 0, or `git fetch --depth=1 origin main:refs/remotes/origin/main`), or name the trusted revision with SPONSON_RULES_REF."},
	{RulesStale, ExitRefused, "The environment's identity schemes were last set by rules newer than the ones this run read, or changed while it planned: running on would index objects under a scheme the environment has left.", "Fetch the default branch again and re-run; a scheme changes only through a run whose trusted rules are the newest."},
	{OlderCommit, ExitRefused, "The run's commit is an ancestor of the commit its scope last applied: applying it would roll the scope back.", "Run the newest commit instead; to roll back on purpose, pass --allow-older-commit (recorded in the receipt)."},
	{CheckoutNotHead, ExitRefused, "With --strict-checkout: the commit checked out is not what the event runs: a comment-triggered run (issue_comment) whose HEAD is not the pull request's head, or a pull_request_target run that checked out a fork's head.", "Check out the pull request's head in a comment-triggered job (refs/pull/N/head), and never a fork's head with pull_request_target; or drop --strict-checkout to be warned only."},
	{LockHeld, ExitLock, "Another run holds the lease of this scope.", "Wait for it to finish, or pass --wait to queue behind it."},
	{LockLost, ExitLock, "This run lost its lease (it expired or was taken over) and stopped writing.", "Run again; the run that took over is authoritative."},
	{OwnedByOtherScope, ExitFailed, "The plan changes a resource that another scope of the same environment owns.", "Apply that change from the owning scope, or read the resource with a data source."},
	{PolicyDenied, ExitFailed, "A policy of the environment (sponson.hcl `policies`, Rego in conftest's conventions: deny, violation) refuses the plan, or could not be evaluated; an apply or destroy wrote nothing, a plan shows its plan and fails like a policy check.", "Change the plan so that the policies the message names allow it, or change the policy on the default branch (a pull request's own copy of a policy is shown for information and never gates its run). `sponson policy test --policy DIR PLAN.json` evaluates them locally."},
	{IdentityPolicy, ExitRefused, "The sponson_scope identity policy names attributes that objects the scope owns do not have: their ownership could no longer be matched.", "Name attributes these objects set in the identity policy of sponson_scope, or remove the type from it to identify its objects by id."},
	{HandoverTaken, ExitRefused, "Another pull request scope holds the handover of this scope's predecessor (two pull requests on one head branch); this scope has only an unpromised copy of its resources.", "Continue in the scope that holds the handover, or run `sponson destroy` in this scope to drop its copy (it deletes nothing) and apply again."},
	{ScopeHasState, ExitRefused, "`sponson adopt` was asked to adopt a state into a scope that already has one, or owns resources: adopting would replace it.", "Adopt into a new scope (--scope NAME), or destroy this scope first; the old backend is unchanged."},
	{StoreContended, ExitFailed, "The store stayed contended for longer than the retry budget.", "Run again; if it persists, reduce concurrent runs on one store."},
	{StoreRejected, ExitFailed, "The store rejected a write.", "Check the store's hooks or policies; a copy of the write is kept locally."},
	{StorePermission, ExitFailed, "The store refused access.", "Check the credentials and permissions of the store."},
	{StoreUnavailable, ExitFailed, "The store could not be reached within the retry budget.", "Check that the store is up and reachable, then run again."},
	{StoreNotConforming, ExitFailed, "The object store's server does not honour the conditional writes fencing needs (`sponson store verify` found a property that does not hold, or a store opened to write found a create of an existing object accepted): on it two runs could both hold a lease, or a run that lost its lease could still write.", "Run `sponson store verify --store URL` to see which property fails; use a server that honours If-None-Match: * and If-Match on writes (AWS S3, GCS, Azure, versitygw) or another store."},
	{ReceiptCorrupt, ExitFailed, "A receipt in the store could not be parsed, or the ledger base it names (a record ledger-<sha256> of the scope) is missing or does not match its hash.", "Inspect the receipt with `sponson receipt`; restore it, or the ledger base the message names, from the store's history."},
	{ReceiptVersion, ExitFailed, "A receipt was written by a newer Sponson.", "Upgrade sponson to the version that wrote it."},
	{StoreLayoutOld, ExitRefused, "The store holds scopes written before stacks (keyed by environment and scope only); they are not read as empty.", "Run `sponson migrate` once from the root module these scopes belong to (or with --stack NAME); it moves every old scope into that stack."},
	{StoreLayoutNewer, ExitFailed, "The store was written in a layout newer than this Sponson knows.", "Upgrade sponson to the version the other runs of this store use."},
	{WaitTimeout, ExitFailed, "The lease was still held when --wait-timeout ran out.", "Raise --wait-timeout or find the run that holds the lease."},
	{EngineFailed, ExitFailed, "OpenTofu or Terraform failed; its own output says why.", "Read the engine's output above the summary."},
	{EngineNotFound, ExitFailed, "No OpenTofu or Terraform binary was found.", "Install OpenTofu or Terraform on PATH, or name the binary with --engine PATH or SPONSON_ENGINE (in a checkout of Sponson itself, `make tools` builds OpenTofu)."},
	{IntentUnresolved, ExitFailed, "A create recorded as an intent could not be settled against the state.", "Inspect the scope with `sponson receipt` and the engine's state."},
	{PlanStale, ExitRefused, "The saved plan no longer describes what its apply would do: the scope's state, the ownership of something it touches, its succession, or its commit, stack, environment or scope changed since it was made. Nothing was written.", "Plan again (`sponson plan -out FILE`, or `sponson plan --all|--changed -out DIR` for the plans of many stacks), review the new plan, and apply that one."},
	{PlanCorrupt, ExitRefused, "The saved plan file is truncated, altered, not a sponson plan, or sealed with another key (SPONSON_PLAN_KEY). Nothing was written.", "Plan again with `sponson plan -out FILE` (`plan --all|--changed -out DIR` for many stacks); keep what the plan job wrote as it is (an artifact, mode 0600)."},
	{DriftDetected, ExitFailed, "`sponson drift` found a scope whose real objects changed outside the engine (the result lists each scope and what drifted). Nothing was changed.", "Apply the scope to bring the objects back to its configuration, or change the configuration to match, then run drift again."},
	{DriftCheckFailed, ExitFailed, "`sponson drift` could not check a scope (the result names the scope and its error); no scope drifted among those checked.", "Read the scope's error; run `sponson plan` in that scope to see the engine's own output."},
	{Interrupted, ExitFailed, "The run was interrupted by a signal.", "Run again; the lease expires if it could not be released."},
	{FmtUnformatted, ExitFailed, "`sponson fmt -check` found files the engine's fmt would change (the message lists them).", "Run `sponson fmt` to format them, and commit the result."},
	{MirrorFailed, ExitFailed, "`sponson provider mirror` could not write the provider mirror.", "Check that the directory is writable and has space; the message says which step failed."},
	{StackCycle, ExitRefused, "The stacks of the repository depend on each other in a cycle (through the `after` of sponson_scope or the `stack` of sponson_outputs); the message names it. Nothing ran.", "Remove one dependency of the cycle: a stack cannot run before and after another."},
	{StackHasDependents, ExitRefused, "`destroy --all` would destroy a stack that a stack outside the run depends on, and that stack still holds state in the scope; or `gc --all --yes` would collect scopes of stacks that stacks outside the run depend on. The message names them. Nothing ran.", "Destroy the dependent stacks first, or run destroy --all or gc --all from a directory that holds them too (the repository root)."},
	{Internal, ExitFailed, "An unexpected error; this is a bug in Sponson.", "Report it with the command line and the output."},
}

// Table returns every code of the table, sorted by code.
func Table() []Spec {
	out := append([]Spec(nil), table...)
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// Lookup returns the row of a code; unknown codes read as INTERNAL.
func Lookup(c Code) Spec {
	for _, s := range table {
		if s.Code == c {
			return s
		}
	}
	return Lookup(Internal)
}

// Error is a failure with a code. Details are machine-readable facts that go
// into the --json envelope (holder of a lease, the owning scope, ...).
type Error struct {
	Code    Code
	Message string
	Hint    string
	Details map[string]any
	Err     error
}

// New returns an Error with the table's hint.
func New(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...), Hint: Lookup(c).Hint}
}

// Wrap returns an Error that keeps err as its cause; the message ends with
// err's text, so the original error is never lost.
func Wrap(c Code, err error, format string, args ...any) *Error {
	e := New(c, format, args...)
	e.Err = err
	if err != nil {
		e.Message += ": " + err.Error()
	}
	return e
}

// WithHint replaces the hint.
func (e *Error) WithHint(h string) *Error { e.Hint = h; return e }

// With adds a detail.
func (e *Error) With(key string, v any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = v
	return e
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Exit returns the exit code of the error's code.
func (e *Error) Exit() ExitCode { return Lookup(e.Code).Exit }

// As returns err as an *Error; an error without a code becomes INTERNAL.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Wrap(Internal, err, "unexpected error")
}

// Is reports whether err carries the code c.
func Is(err error, c Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}

// ExitFor maps an error to the process exit code: nil is ExitOK.
func ExitFor(err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	return As(err).Exit()
}
