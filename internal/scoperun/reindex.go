package scoperun

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/ancestry"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// reindex is the migration of a change of the environment's declared
// identity schemes (sponson.hcl), in a run that writes, before its foreign
// check: when the declaration differs from the one the ownership index was
// built under (ownership.SchemesRecord), every scope of the environment, of
// every stack, that owns objects of a changed type is indexed again under
// the new scheme, each with a receipt written under its own lease, and the
// record is advanced. It runs under the environment's intent lease, so two
// runs never migrate at once. A scope whose lease another run holds cannot
// be re-indexed now: the run says so, leaves the record as it was, and a
// later run finishes the migration (docs/design.md §2.3).
//
// It returns prev, the scope's own latest receipt, re-indexed when it had
// objects of a changed type.
func (r *runner) reindex(ctx context.Context, eng *engineRun, prev *receipt.Receipt) (*receipt.Receipt, error) {
	if r.o.Command == Plan {
		return prev, nil
	}
	ik := store.Key{Environment: r.key.Environment, Scope: ownership.IntentLeaseScope}
	was, err := r.recordedSchemes(ctx, ik)
	if err != nil {
		return nil, err
	}
	declared := r.o.Declared.Record()
	r.schemesSeen = was
	changed := ownership.ChangedSchemes(was, declared)
	if len(changed) == 0 {
		return prev, nil
	}
	cfg := r.o.Lease
	cfg.About, cfg.Wait, cfg.OnWait = r.holderInfo(), true, nil
	if cfg.TTL <= 0 || cfg.TTL > ownership.IntentLeaseTTL {
		cfg.TTL = ownership.IntentLeaseTTL
	}
	held, err := lease.Acquire(ctx, r.o.Store, ik, "schemes-"+strings.TrimPrefix(r.o.RunID, "run-"), cfg)
	if err != nil {
		return nil, err
	}
	defer held.Release(context.WithoutCancel(ctx))
	// Again under the lease: another run may have migrated meanwhile.
	if was, err = r.recordedSchemes(ctx, ik); err != nil {
		return nil, err
	}
	r.schemesSeen = was
	if changed = ownership.ChangedSchemes(was, declared); len(changed) == 0 {
		return prev, nil
	}
	if err := r.mayChangeSchemes(ctx, ik); err != nil {
		return nil, err
	}
	busy, err := r.reindexScopes(ctx, changed)
	if err != nil {
		return nil, err
	}
	if prev, err = r.reindexOwn(ctx, eng, prev, changed); err != nil {
		return nil, err
	}
	if len(busy) > 0 {
		r.warn(fmt.Sprintf("the identity scheme of %s changed in sponson.hcl; %s could not be re-indexed now (a run holds their lease): a later run finishes the migration",
			strings.Join(changed, ", "), strings.Join(busy, ", ")))
		return prev, nil
	}
	// The origin first: a crash between the two writes leaves the old
	// schemes recorded as set by the new rules, which those rules (and
	// only newer ones) migrate again.
	if err := held.WriteRecord(ctx, ownership.SchemesFromRecord, ownership.EncodeOrigin(r.o.Declared.From)); err != nil {
		return nil, err
	}
	if err := held.WriteRecord(ctx, ownership.SchemesRecord, ownership.EncodeSchemes(declared)); err != nil {
		return nil, err
	}
	r.schemesSeen = declared
	r.info(fmt.Sprintf("the identity scheme of %s changed in sponson.hcl: the objects of every scope of %s are indexed under it", strings.Join(changed, ", "), r.key.Environment))
	return prev, held.Check()
}

// reindexOwn re-indexes the run's own scope under the lease it holds, from
// its current state (which may live in the configuration's own backend),
// and returns its receipt as written.
func (r *runner) reindexOwn(ctx context.Context, eng *engineRun, prev *receipt.Receipt, types []string) (*receipt.Receipt, error) {
	if prev == nil || !ownership.OwnsTypes(prev.Ledger, types) {
		return prev, nil
	}
	objects, err := r.currentState(ctx, eng)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "reading the state of %s to re-index it", r.key)
	}
	rec, err := r.reidentified(ctx, prev, objects, types)
	if err != nil || rec == nil {
		return prev, err
	}
	if err := r.held.WriteReceipt(ctx, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// mayChangeSchemes refuses a migration by rules older than, or not as
// trusted as, the rules that set the recorded schemes: a pull request that
// read the default branch before a scheme change merged must not move the
// environment back (docs/design.md §2.18 "Trusted rules").
func (r *runner) mayChangeSchemes(ctx context.Context, ik store.Key) error {
	data, err := r.o.Store.ReadRecord(ctx, ik, ownership.SchemesFromRecord)
	if err != nil {
		return err
	}
	was, err := ownership.ParseOrigin(data)
	if err != nil {
		return errcode.Wrap(errcode.ReceiptCorrupt, err, "the record of where %s's identity schemes came from does not read", r.key.Environment)
	}
	git := r.o.Ancestry
	if git == nil {
		git = ancestry.GitIn(r.o.Dir)
	}
	return ownership.MayChangeSchemes(r.key.Environment, was, r.o.Declared.From, func(a, b string) (bool, error) {
		v := ancestry.Compare(ctx, git, a, b)
		if v.Verdict == ancestry.Unknown {
			return false, errors.New(v.Why)
		}
		return v.Verdict == ancestry.Older, nil
	})
}

// schemesUnchanged refuses, under the intent lease, a run whose view of the
// environment's schemes went stale while it planned: another run migrated
// them (reindex) after this one read them, so this run's identities may be
// of the old scheme, and an object could be claimed under both
// (docs/design.md §2.18 "Trusted rules"). The intent lease orders it with
// every other check and migration.
func (r *runner) schemesUnchanged(ctx context.Context) error {
	if r.schemesSeen == nil {
		return nil
	}
	ik := store.Key{Environment: r.key.Environment, Scope: ownership.IntentLeaseScope}
	now, err := r.recordedSchemes(ctx, ik)
	if err != nil {
		return err
	}
	if changed := ownership.ChangedSchemes(r.schemesSeen, now); len(changed) > 0 {
		return errcode.New(errcode.RulesStale, "the identity scheme of %s in %s changed while this run planned (another run migrated it); nothing was written", strings.Join(changed, ", "), r.key.Environment).
			WithHint("Run again: the next run plans under the new scheme.")
	}
	return nil
}

func (r *runner) recordedSchemes(ctx context.Context, ik store.Key) (map[string][]string, error) {
	data, err := r.o.Store.ReadRecord(ctx, ik, ownership.SchemesRecord)
	if err != nil {
		return nil, err
	}
	was, err := ownership.ParseSchemes(data)
	if err != nil {
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "the record of %s's identity schemes does not read", r.key.Environment)
	}
	return was, nil
}

// reindexScopes re-indexes the scopes of the environment that own objects
// of types and returns the ones whose lease another run holds.
func (r *runner) reindexScopes(ctx context.Context, types []string) (busy []string, err error) {
	scopes, err := store.ListScopes(ctx, r.o.Store, r.key.Environment, "")
	if err != nil {
		return nil, err
	}
	for _, s := range scopes {
		if s.Latest == nil || !ownership.OwnsTypes(s.Latest.Ledger, types) {
			continue
		}
		if s.Key == r.key {
			continue // reindexOwn, under the run's lease
		}
		cfg := r.o.Lease
		cfg.About, cfg.Wait, cfg.OnWait = r.holderInfo(), false, nil
		h, err := lease.Acquire(ctx, r.o.Store, s.Key, "reindex-"+strings.TrimPrefix(r.o.RunID, "run-"), cfg)
		var held *store.HeldError
		if errors.As(err, &held) || errcode.Is(err, errcode.LockHeld) {
			busy = append(busy, s.Key.String())
			continue
		}
		if err != nil {
			return nil, err
		}
		err = r.reindexScope(ctx, h, s.Key, types)
		if w := h.Release(context.WithoutCancel(ctx)); w != "" {
			r.warn(w)
		}
		if err != nil {
			return nil, err
		}
	}
	return busy, nil
}

// reindexScope writes, under h, the latest receipt of key again with its
// entries of types identified under the declared schemes, from its state.
func (r *runner) reindexScope(ctx context.Context, h *lease.Held, key store.Key, types []string) error {
	prev, err := store.Latest(ctx, r.o.Store, key)
	if err != nil || prev == nil {
		return err
	}
	data, err := r.o.Store.ReadState(ctx, key)
	if err != nil {
		return err
	}
	objects, err := readState(data)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "reading the state of %s to re-index it", key)
	}
	rec, err := r.reidentified(ctx, prev, objects, types)
	if err != nil || rec == nil {
		return err
	}
	return h.WriteReceipt(ctx, rec)
}

// reidentified is prev with its entries of types identified again from
// objects under the declared schemes and the scope's own policy (from its
// state), or nil when none changed. The receipt keeps its run and outcome:
// only how its objects are indexed changes.
func (r *runner) reidentified(ctx context.Context, prev *receipt.Receipt, objects []stateResource, types []string) (*receipt.Receipt, error) {
	hashKey, err := ownership.LoadHashKey(ctx, r.o.Store, r.key.Environment, "", r.o.Lease, false, false)
	if err != nil {
		return nil, err
	}
	pol := r.o.Declared.Policy()
	pol.Identity, pol.HashKey = ownership.ScopePolicy(objects), hashKey
	ledger, n := ownership.Reidentified(prev.Ledger, objects, pol, types)
	if n == 0 {
		return nil, nil
	}
	r.info(fmt.Sprintf("re-indexed %d objects of %s/%s under the declared identity scheme", n, prev.Environment, prev.Scope))
	rec := *prev
	rec.Ledger = ledger
	return &rec, nil
}
