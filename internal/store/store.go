// Package store defines the contract every Sponson store backend fulfils:
// scope leases with fencing tokens, receipts (which carry the ledger) and the
// scope's Terraform state. Backends live in sub-packages (filestore, ...) and
// all pass the conformance suite in storetest.
//
// Fencing: every write takes the Lease it is made under, and the backend
// checks, in the same atomic step as the write, that the lease record still
// names that holder and token and has not expired. A run that lost its lease
// can therefore write nothing, whatever its own clock believes.
//
// A caller takes the part of the contract it uses (docs/design.md §5.1 "The
// contract"): the lease machinery Leases, a held lease lease.Store (the lease
// and the three kinds of document it fences), the ownership checks Index, an
// edit outside a run scopeedit.Store (lease.Store and Index), the readers
// LatestReader and Lister. The whole Store is held only by what opens a store
// and must close it: the openers (storeurl.Open, cmdutil.StoreFlags.Open, the
// provider's), a run (scoperun.Options.Store, which uses every part), the
// command helpers that open the store for one command and hand its parts on
// (statecmd's scopeState, statuscmd's scopeKey, gc's target), the overview's
// input (cmdutil.OverviewInput), and gc's collectGarbage, which asks the store
// whether it collects garbage (a CollectGarbage method: the S3, GCS and Azure
// stores).
//
// Ledger bases (docs/design.md §2.17 "Ledger base"): from CompactFrom (2,000)
// entries every fenced receipt write of a run goes through WriteCompact,
// which writes a compact receipt (version 2) whose ledger is segments of the
// scope's ledger base plus what changed since it (receipt.Delta). A base is
// a record named by the SHA-256 of its document, written fenced before the
// first receipt that names it; a new one is written when the entries written
// out would exceed a quarter of the ledger. Every backend still indexes the
// whole ledger (EncodeReceipt), and writes the scope's part of the ownership
// index only when it changed (SameOwners). Latest and ListScopes, the only
// readers outside the stores, expand a compact receipt; Latest also joins a
// checkpoint (status running) with its own run's journal (JournalRecord).
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// Key names one scope of one environment of one stack (one root module of
// one repository, see internal/stack): everything a store keeps is keyed by
// all three, so two root modules sharing a store never see each other's
// state, lease or ledger (docs/design.md, Stacks). Stack is empty only for
// the leases of shared parent objects (scopes named ParentScopePrefix...),
// which are per environment and shared by every stack.
type Key struct {
	Stack       string
	Environment string
	Scope       string
}

// String renders the key as environment/scope, followed by the stack in
// parentheses when it has one.
func (k Key) String() string {
	if k.Stack == "" {
		return k.Environment + "/" + k.Scope
	}
	return k.Environment + "/" + k.Scope + " (stack " + k.Stack + ")"
}

// ParentScopePrefix starts the scope name of a shared parent object's lease
// (ownership.ParentLeaseScope). Such keys have no stack: two stacks writing
// one parent object must serialise on one lease.
const ParentScopePrefix = "_parent-"

// LeaseInfo is a lease record as the store holds it. Holder is empty when the
// lease is free; Token survives release and only ever grows.
type LeaseInfo struct {
	Holder     string    `json:"holder"`
	Token      int64     `json:"token"`
	AcquiredAt time.Time `json:"acquiredAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	// About describes the holder for people; it is never compared.
	About HolderInfo `json:"about,omitzero"`
}

// HolderInfo is what a person needs to find the run holding a lease: its CI
// job, who started it, what it is applying, and where it runs. A store keeps
// it in the lease record as the holder gave it at Acquire (WithHolder), and
// returns it with every LeaseInfo (HeldError included); it is description
// only: leases are granted, renewed, released and fenced by Holder and Token
// alone.
type HolderInfo struct {
	JobURL      string `json:"jobUrl,omitempty"`
	Actor       string `json:"actor,omitempty"`
	Commit      string `json:"commit,omitempty"`
	PullRequest int    `json:"pullRequest,omitempty"`
	Host        string `json:"host,omitempty"`
}

// Live reports whether the lease is held and unexpired at now.
func (l LeaseInfo) Live(now time.Time) bool { return l.Holder != "" && now.Before(l.ExpiresAt) }

// Lease is a lease granted to this process: the proof a fenced write shows.
type Lease struct {
	Key    Key
	Holder string
	Token  int64
	// ExpiresAt is the store's expiry as of the last grant or renewal.
	ExpiresAt time.Time
}

// Grant is the result of a successful Acquire.
type Grant struct {
	Lease Lease
	// Preempted is the expired lease this grant took over, if any.
	Preempted *LeaseInfo
}

// ScopeSummary is one scope of an environment as List reports it.
type ScopeSummary struct {
	Key    Key
	Lease  LeaseInfo
	Latest *receipt.Receipt // nil when the scope has no receipt
}

// The contract of a backend comes in parts, one per kind of thing a store
// keeps (docs/design.md §5.1 "The contract"): a caller takes the part it
// uses, and Store composes them. Every backend
// implements Store whole and passes the conformance suite of each part
// (storetest).

// Leases are the scope leases with their fencing tokens.
type Leases interface {
	// Acquire grants the lease of key to holder for ttl, taking over an
	// expired lease. A live lease gives *HeldError, also when holder is the
	// one holding it: holder ids name one run, which never asks twice.
	Acquire(ctx context.Context, key Key, holder string, ttl time.Duration) (Grant, error)
	// Renew extends a lease this process holds; ErrLeaseLost if it does not.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release frees the lease if l still holds it; ErrLeaseLost otherwise
	// (nothing is changed then).
	Release(ctx context.Context, l Lease) error
	// ReadLease returns the lease record; the zero LeaseInfo if none.
	ReadLease(ctx context.Context, key Key) (LeaseInfo, error)
}

// Receipts are the scopes' receipts, whose latest carries the ledger.
type Receipts interface {
	// WriteReceipt stores r as the scope's latest receipt, fenced by l. It
	// keeps the scope's part of the ownership index (Index) in the same
	// fenced step.
	WriteReceipt(ctx context.Context, l Lease, r *receipt.Receipt) error
	// LatestReceipt returns the scope's latest receipt, nil if none.
	LatestReceipt(ctx context.Context, key Key) (*receipt.Receipt, error)
}

// States are the scopes' Terraform states.
type States interface {
	// WriteState replaces the scope's Terraform state, fenced by l.
	WriteState(ctx context.Context, l Lease, state []byte) error
	StateReader
}

// StateReader reads a scope's state: what the provider's sponson_outputs
// needs of the run's store, which the wrapper hands to the provider it
// serves (provider.EngineEnv), and the reading part of States.
type StateReader interface {
	// ReadState returns the scope's Terraform state, nil if none.
	ReadState(ctx context.Context, key Key) ([]byte, error)
}

// Records are small named documents of a scope: the sponson_scope resource
// keeps its record here, the intent lease's scope the environment's hash
// key.
type Records interface {
	// WriteRecord stores a record, fenced by l. name is a plain path
	// segment.
	WriteRecord(ctx context.Context, l Lease, name string, data []byte) error
	RecordReader
	// DeleteRecord removes a record, fenced by l; removing a record that
	// does not exist is not an error.
	DeleteRecord(ctx context.Context, l Lease, name string) error
}

// Quarantines keep the states a run could not write.
type Quarantines interface {
	// Quarantine keeps a state that a run could not write, for example the
	// errored.tfstate an engine leaves when its state write was refused
	// after the lease was lost. It is not fenced (the run that produced it
	// usually holds no lease any more) and never replaces the scope's state:
	// it is evidence for the next run and for humans.
	Quarantine(ctx context.Context, key Key, runID string, state []byte) error
	// ListQuarantine returns the quarantined states of a scope, oldest first.
	ListQuarantine(ctx context.Context, key Key) ([]Quarantined, error)
}

// Index is the ownership index of an environment, kept by WriteReceipt.
type Index interface {
	// Owners returns the ledger entries, intents included, of every scope of
	// every stack of env whose identity is one of identities (every entry when identities
	// is nil), in one store operation: the foreign check reads the whole
	// environment at once, never one scope after another. The index behind
	// it is kept by WriteReceipt in the same fenced step as the receipt, and
	// each scope keeps its own part, so unrelated scopes never contend.
	Owners(ctx context.Context, env string, identities []string) ([]Owner, error)
}

// Scopes lists what a store keeps of an environment.
type Scopes interface {
	// List returns every scope of every stack of env that has a lease
	// record or a receipt, sorted by stack and then scope. Parent leases
	// (no stack) come first. ListScopes leaves them out.
	List(ctx context.Context, env string) ([]ScopeSummary, error)
}

// Store is the contract of a backend: every part, and Close.
type Store interface {
	Leases
	Receipts
	States
	Records
	Quarantines
	Index
	Scopes
	// Close releases the store's connections; leases are not released.
	Close() error
}

// ListScopes returns the scopes of env (List without the leases of shared
// parent objects, which are no scope of the environment), of stack alone
// when stack is not empty. It is how a command that shows or walks an
// environment's scopes lists them: each latest receipt with its ledger
// whole, read against its base when it is compact (one more read for each
// scope of a large ledger, WriteCompact).
func ListScopes(ctx context.Context, sc Lister, env, stack string) ([]ScopeSummary, error) {
	all, err := sc.List(ctx, env)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, s := range all {
		if IsParentScope(s.Key.Scope) || (stack != "" && s.Key.Stack != stack) {
			continue
		}
		if s.Latest, err = expand(ctx, sc, s.Key, s.Latest); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Lister is what ListScopes needs of a store.
type Lister interface {
	Scopes
	RecordReader
}

// IsParentScope reports whether a store scope holds a parent object's lease
// (ParentScopePrefix) rather than being a scope of the environment.
func IsParentScope(scope string) bool { return strings.HasPrefix(scope, ParentScopePrefix) }

// Owner is one ledger entry of one scope, as the ownership index holds it.
type Owner struct {
	// Stack is the stack of the owning scope: the index of an environment
	// spans every stack, so the foreign check refuses one root module's
	// change to what another root module owns.
	Stack     string `json:"stack,omitempty"`
	Scope     string `json:"scope"`
	Identity  string `json:"identity"`
	Address   string `json:"address"`
	CreatedBy string `json:"createdBy"`
	// RunID is the run whose receipt recorded the entry as it is (its
	// address and origin): a later receipt that lists it unchanged keeps
	// it (OwnersOf).
	RunID string `json:"runId"`
	// Since is when the store first recorded this identity for this scope,
	// by the store's clock, for people: it is taken before the write is
	// visible, so it cannot order two scopes' intents (the intent lease of
	// package ownership does).
	Since time.Time `json:"since"`
}

// Quarantined is a state kept by Quarantine.
type Quarantined struct {
	RunID string
	At    time.Time
	State []byte
}

// ErrLeaseLost is returned by Renew, Release and fenced writes when the lease
// no longer names the caller's holder and token, or has expired.
var ErrLeaseLost = errors.New("lease lost")

// HeldError is returned by Acquire when another holder's lease is live.
type HeldError struct {
	Key   Key
	Lease LeaseInfo
}

// Error says who holds the lease and until when.
func (e *HeldError) Error() string {
	return fmt.Sprintf("lease of %s is held by %s until %s", e.Key, e.Lease.Holder, e.Lease.ExpiresAt.Format(time.RFC3339))
}

type holderKey struct{}

// WithHolder returns ctx carrying the description of the holder that an
// Acquire made with it records in the lease record. It travels in the
// context rather than as an argument of Acquire because nothing decides on
// it: it is recorded verbatim and shown to people, while Acquire's arguments
// stay the lease's own contract.
func WithHolder(ctx context.Context, about HolderInfo) context.Context {
	return context.WithValue(ctx, holderKey{}, about)
}

// HolderFrom returns the description WithHolder put in ctx; the zero
// HolderInfo when there is none.
func HolderFrom(ctx context.Context) HolderInfo {
	about, _ := ctx.Value(holderKey{}).(HolderInfo)
	return about
}

// Migrator is a store that can move the layout written before stacks
// (every record keyed by environment and scope only) into its current one.
// Stores open in the old layout only with their own option for it; every
// other Open refuses such a store with STORE_LAYOUT_OLD. The S3, GCS and
// Azure stores have no old layout to migrate (a store of an older sponson
// gets a new prefix); fixtures written by the sponson before stacks are in
// testdata/layout1.
type Migrator interface {
	// Migrate moves every scope of the old layout into stack (parent
	// leases, which have no stack, stay shared) and records the current
	// layout version. It refuses with LOCK_HELD, moving nothing, while an
	// old scope's lease is live. It returns the new keys, and none for a
	// store already in the current layout. Running it again after a crash
	// finishes the move.
	Migrate(ctx context.Context, stack string) ([]Key, error)
	// Close releases the store's connections.
	Close() error
}

// OldLayoutError is STORE_LAYOUT_OLD for a store that names what it found.
func OldLayoutError(store, found string) error {
	return errcode.New(errcode.StoreLayoutOld, "the store %s holds scopes written before stacks (%s); refusing to read it as empty", store, found).
		With("store", store)
}

// NewerLayoutError is STORE_LAYOUT_NEWER for a store whose layout version
// is newer than known.
func NewerLayoutError(store string, found, known int) error {
	return errcode.New(errcode.StoreLayoutNewer, "the store %s has layout %d, newer than this sponson knows (%d)", store, found, known).
		With("store", store)
}
