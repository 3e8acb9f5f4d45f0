package gitstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

var _ store.Migrator = (*Store)(nil)

// Layout is the version of the branch layout this package writes and
// reads. 1 was the layout before stacks (sponson-receipts/<env>/<scope>).
const Layout = 2

// WithOldLayout opens a store whatever its layout, for Migrate alone.
func WithOldLayout() Option { return func(s *Store) { s.oldLayout = true } }

// ensureLayout checks, once per Store, that the remote is in this layout:
// one ls-remote of sponson-layout/*. A remote without a layout branch that
// has branches of the layout before stacks is STORE_LAYOUT_OLD (never read
// as empty); one with a newer layout branch is STORE_LAYOUT_NEWER. A new
// remote gets its layout branch with the first write.
func (s *Store) ensureLayout(ctx context.Context, write bool) error {
	if s.oldLayout || s.layoutOK.Load() {
		return nil
	}
	s.layoutMu.Lock()
	defer s.layoutMu.Unlock()
	if s.layoutOK.Load() {
		return nil
	}
	r := s.retrier(ctx, "reading", layoutRoot+"*")
	for {
		versions, err := s.layoutVersions(ctx)
		if err != nil {
			if err := r.fail(err); err != nil {
				return err
			}
			continue
		}
		if n := len(versions); n > 0 && versions[n-1] > Layout {
			return store.NewerLayoutError(s.display, versions[n-1], Layout)
		}
		if len(versions) > 0 {
			s.layoutOK.Store(true)
			return nil
		}
		legacy, err := s.lsRemote(ctx, legacyRoot+"*")
		if err != nil {
			if err := r.fail(err); err != nil {
				return err
			}
			continue
		}
		if len(legacy) > 0 {
			names := make([]string, 0, len(legacy))
			for ref := range legacy {
				names = append(names, strings.TrimPrefix(ref, "refs/heads/"))
			}
			sort.Strings(names)
			return store.OldLayoutError(s.display, fmt.Sprintf("%d branch(es), e.g. %s", len(names), names[0]))
		}
		if !write {
			return nil // nothing to read; the first write records the layout
		}
		if err := s.writeLayout(ctx); err != nil {
			return err
		}
		s.layoutOK.Store(true)
		return nil
	}
}

// layoutVersions returns the versions of the remote's layout branches,
// ascending.
func (s *Store) layoutVersions(ctx context.Context) ([]int, error) {
	refs, err := s.lsRemote(ctx, layoutRoot+"*")
	if err != nil {
		return nil, err
	}
	var out []int
	for ref := range refs {
		if v, err := strconv.Atoi(strings.TrimPrefix(ref, layoutRoot)); err == nil && v > 0 {
			out = append(out, v)
		}
	}
	sort.Ints(out)
	return out, nil
}

// writeLayout pushes sponson-layout/<Layout>, a branch holding a README.
// A push that finds the branch there already (another first writer) is
// as good as ours.
func (s *Store) writeLayout(ctx context.Context) error {
	ref := layoutRoot + strconv.Itoa(Layout)
	readme := fmt.Sprintf("# Sponson store layout %d\n\nThis branch records that the sponson-stacks/ branches of this repository are in\nlayout %d of the Sponson git store (one branch per environment, stack and scope).\nDo not delete it: without it, a store that also has branches of the layout before\nstacks (sponson-receipts/) is refused until `sponson migrate` runs.\n", Layout, Layout)
	commit, _, err := s.commit(store.Key{}, &snapshot{}, &change{files: map[string][]byte{readmeFile: []byte(readme)}, msg: fmt.Sprintf("layout %d", Layout)})
	if err != nil {
		return err
	}
	r := s.retrier(ctx, "writing", ref)
	for {
		outcome, reason, err := s.push(ctx, ref, "", commit)
		switch outcome {
		case pushed, raced:
			return nil
		case refused:
			return errcode.New(errcode.StoreRejected, "the remote %s refused the layout branch %s: %s", s.display, strings.TrimPrefix(ref, "refs/heads/"), reason).
				WithHint("Allow sponson to push sponson-layout/** and sponson-stacks/** branches (fast-forward only).")
		default:
			if err := r.fail(err); err != nil {
				return err
			}
		}
	}
}

// Migrate copies every branch of the layout before stacks,
// sponson-receipts/<env>/<scope>, to sponson-stacks/<env>/<S>/<scope> of
// stack (parent leases to the shared "_"): one commit on top of the old tip
// (its history stays reachable) that rewrites the ownership index with the
// stack, seals the state and quarantined states again under the new
// place (sealContext binds them to the stack), and replaces the README. The
// lease record and its token move unchanged. The old branches are left as
// they were, for the remote's own rules to keep or delete; the layout
// branch written last makes every later Open read the new ones. Nothing is
// written while an old scope's lease is live (LOCK_HELD). A branch already
// copied (a Migrate that stopped half-way) is not copied again.
func (s *Store) Migrate(ctx context.Context, stack string) ([]store.Key, error) {
	if err := store.CheckStack(stack); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	versions, err := s.layoutVersions(ctx)
	if err != nil {
		return nil, s.gitError(layoutRoot+"*", err)
	}
	if n := len(versions); n > 0 && versions[n-1] > Layout {
		return nil, store.NewerLayoutError(s.display, versions[n-1], Layout)
	}
	if len(versions) > 0 {
		return nil, nil // migrated already, or written in this layout
	}
	legacy, err := s.lsRemote(ctx, legacyRoot+"*")
	if err != nil {
		return nil, s.gitError(legacyRoot+"*", err)
	}
	current, err := s.lsRemote(ctx, branchRoot+"*")
	if err != nil {
		return nil, s.gitError(branchRoot+"*", err)
	}
	olds := legacyScopes(legacy, stack)
	if err := s.readLegacy(ctx, olds, legacy); err != nil {
		return nil, err
	}
	var moved []store.Key
	for _, o := range olds {
		if _, done := current[branchOf(o.nk)]; !done {
			if err := s.migrateBranch(ctx, o.old, o.nk, o.snap); err != nil {
				return moved, err
			}
		}
		moved = append(moved, o.nk)
	}
	if err := s.writeLayout(ctx); err != nil {
		return moved, err
	}
	s.layoutOK.Store(true)
	return moved, nil
}

// oldScope is a branch of the layout before stacks and the key it moves to.
type oldScope struct {
	ref  string
	old  store.Key
	nk   store.Key
	snap *snapshot
}

// legacyScopes are the old branches among refs (scope branches of the
// layout before stacks) and the keys of stack they move to, in ref order;
// parent leases move into the shared stack "".
func legacyScopes(refs map[string]string, stack string) []oldScope {
	var olds []oldScope
	for ref := range refs {
		envSeg, scopeSeg, ok := strings.Cut(strings.TrimPrefix(ref, legacyRoot), "/")
		if !ok || strings.Contains(scopeSeg, "/") {
			continue
		}
		env, ok1 := nameOf(envSeg)
		scope, ok2 := nameOf(scopeSeg)
		if !ok1 || !ok2 {
			continue
		}
		nk := store.Key{Stack: stack, Environment: env, Scope: scope}
		if strings.HasPrefix(scope, store.ParentScopePrefix) {
			nk.Stack = ""
		}
		olds = append(olds, oldScope{ref: ref, old: store.Key{Environment: env, Scope: scope}, nk: nk})
	}
	sort.Slice(olds, func(i, j int) bool { return olds[i].ref < olds[j].ref })
	return olds
}

// readLegacy fetches and reads the old branches, refusing while any holds
// a live lease (nothing is written then).
func (s *Store) readLegacy(ctx context.Context, olds []oldScope, tips map[string]string) error {
	if len(olds) == 0 {
		return nil
	}
	refs := make([]string, len(olds))
	for i, o := range olds {
		refs[i] = o.ref
	}
	if err := s.fetch(ctx, refs, nil); err != nil {
		return s.gitError(legacyRoot+"*", err)
	}
	now := s.clock()
	for i := range olds {
		snap, err := s.parse(olds[i].ref, tips[olds[i].ref])
		if err != nil {
			return err
		}
		if snap.lease.Live(now) {
			return &store.HeldError{Key: olds[i].old, Lease: snap.lease}
		}
		olds[i].snap = snap
	}
	return nil
}

// gitError turns a failed remote command of Migrate into a coded error.
func (s *Store) gitError(ref string, err error) error {
	var gf *gitFailure
	if errors.As(err, &gf) {
		return s.remoteError(gf.op, ref, gf.stderr, gf.f, gf.err)
	}
	return err
}

// migrateBranch writes the copy of one old branch.
func (s *Store) migrateBranch(ctx context.Context, old, nk store.Key, snap *snapshot) error {
	files := map[string][]byte{readmeFile: readme(nk)}
	owners, err := s.migratedOwners(snap, old, nk)
	if err != nil {
		return err
	}
	if owners != nil {
		files[ownersFile] = owners
	}
	if err := s.resealAll(snap, old, nk, files); err != nil {
		return err
	}
	commit, _, err := s.commit(nk, snap, &change{files: files, msg: fmt.Sprintf("migrate %s from %s", nk, strings.TrimPrefix(legacyBranchOf(old.Environment, old.Scope), "refs/heads/"))})
	if err != nil {
		return err
	}
	ref := branchOf(nk)
	outcome, reason, err := s.push(ctx, ref, "", commit)
	switch outcome {
	case pushed:
		return nil
	case raced:
		return errcode.New(errcode.StoreContended, "%s appeared while migrating %s; run `sponson migrate` again", strings.TrimPrefix(ref, "refs/heads/"), old)
	case refused:
		return errcode.New(errcode.StoreRejected, "the remote %s refused %s: %s", s.display, strings.TrimPrefix(ref, "refs/heads/"), reason).
			WithHint("Allow sponson to push sponson-layout/** and sponson-stacks/** branches (fast-forward only).")
	default:
		return s.gitError(ref, err)
	}
}

// migratedOwners is the old branch's ownership index with its entries
// moved to nk, or nil when it has none.
func (s *Store) migratedOwners(snap *snapshot, old, nk store.Key) ([]byte, error) {
	b, ok, err := s.readFile(snap, ownersFile)
	if err != nil || !ok {
		return nil, err
	}
	var doc ownersDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "the ownership index %s:%s does not parse", legacyBranchOf(old.Environment, old.Scope), ownersFile)
	}
	for i := range doc.Entries {
		doc.Entries[i].Stack, doc.Entries[i].Scope = nk.Stack, nk.Scope
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "encode the ownership index of %s", nk)
	}
	return append(out, '\n'), nil
}

// resealAll seals the state and the quarantined states of the old branch
// again for nk (the seal binds the key), into files.
func (s *Store) resealAll(snap *snapshot, old, nk store.Key, files map[string][]byte) error {
	if err := s.reseal(snap, old, nk, stateSealed, "state", files); err != nil {
		return err
	}
	dir, ok := snap.root[quarantineDir]
	if !ok || dir.mode != modeTree {
		return nil
	}
	entries, err := s.tree(dir.id)
	if err != nil {
		return err
	}
	for n := range entries {
		if runID, ok := strings.CutSuffix(n, ".tfstate.enc"); ok {
			if err := s.reseal(snap, old, nk, quarantineDir+"/"+n, quarantineDir+"/"+runID, files); err != nil {
				return err
			}
		}
	}
	return nil
}

// reseal opens the sealed file path of the old branch (sealed as doc of
// old) and puts it into files sealed as doc of nk.
func (s *Store) reseal(snap *snapshot, old, nk store.Key, path, doc string, files map[string][]byte) error {
	data, ok, err := s.readFile(snap, path)
	if err != nil || !ok {
		return err
	}
	if s.key == nil {
		return errcode.New(errcode.Usage, "%s:%s is sealed; migrating it needs the state key", legacyBranchOf(old.Environment, old.Scope), path).WithHint(keyHint)
	}
	plain, err := unseal(s.key, sealContext(old, doc), path+" of "+old.String(), data)
	if err != nil {
		return err
	}
	sealed, err := seal(s.key, sealContext(nk, doc), plain)
	if err != nil {
		return err
	}
	files[path] = sealed
	return nil
}
