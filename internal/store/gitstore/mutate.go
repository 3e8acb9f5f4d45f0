package gitstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Writing a scope's branch: decide on the tip read, build the new tree and
// commit, and push it as a compare-and-swap (--force-with-lease).

// change is what a mutation writes: files by path (nil deletes), the commit
// subject, the copy to keep if the remote refuses it, and what to do once the
// commit is on the remote.
type change struct {
	files map[string][]byte
	msg   string
	keep  *kept
	done  func()
}

// finish runs what ch does once its commit is on the remote.
func (c *change) finish() {
	if c.done != nil {
		c.done()
	}
}

// mutate is the one write path: decide on the tip, commit, push with
// compare-and-swap; on a refused push read the tip again and decide again.
// A decision made on the remembered tip that refuses (HeldError,
// ErrLeaseLost) or writes nothing is confirmed on a fresh read first.
func (s *Store) mutate(ctx context.Context, key store.Key, decide func(cur *snapshot, now time.Time) (*change, error)) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := s.ensureLayout(ctx, true); err != nil {
		return err
	}
	ks := s.keyState(key)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ref := branchOf(key)
	m := &mutation{s: s, ctx: ctx, key: key, ks: ks, ref: ref, r: s.retrier(ctx, "writing", ref), attempts: map[string]*change{}}
	snap, fresh := ks.snap, false
	for {
		if snap == nil {
			var landed bool
			var err error
			if snap, landed, err = m.reload(); err != nil || landed {
				return err
			}
			fresh = true
		}
		ch, err := decide(snap, s.clock())
		if (err != nil || ch == nil) && !fresh {
			snap = nil // confirm on the remote's current tip
			continue
		}
		if err != nil || ch == nil {
			return err
		}
		if over, err := m.write(snap, ch, fresh); over {
			return err
		}
		snap, fresh = nil, false
	}
}

// mutation is one mutate's state across its attempts: the key's cache
// (held locked), the retrier, the commits pushed without a clear answer
// and the refusals seen.
type mutation struct {
	s        *Store
	ctx      context.Context
	key      store.Key
	ks       *keyState
	ref      string
	r        *retrier
	attempts map[string]*change
	refusals int
}

// reload reads the branch's tip. landed says an earlier push whose outcome
// was unclear is that tip: the mutation is done.
func (m *mutation) reload() (snap *snapshot, landed bool, err error) {
	if snap, err = m.s.load(m.ctx, m.key, m.ks.snap, m.r); err != nil {
		m.ks.snap = nil
		return nil, false, err
	}
	m.ks.snap = snap
	if ch, ok := m.attempts[snap.tip]; ok {
		ch.finish()
		return snap, true, nil
	}
	return snap, false, nil
}

// write commits ch on snap and pushes it. over says the mutation ends here
// (pushed, or failed with err); otherwise it decides again on a fresh tip.
func (m *mutation) write(snap *snapshot, ch *change, fresh bool) (over bool, err error) {
	commit, next, err := m.s.commit(m.key, snap, ch)
	if err != nil {
		return true, err
	}
	outcome, reason, err := m.s.push(m.ctx, m.ref, snap.tip, commit)
	m.ks.snap = nil
	switch outcome {
	case pushed:
		m.ks.snap = next
		ch.finish()
		return true, nil
	case raced:
		m.r.lock = lockOf(reason)
		if fresh {
			if err := m.r.race(); err != nil {
				return true, err
			}
		}
	case refused:
		// A hook may refuse for a moment (a flaky policy service): try a
		// few times, then keep the document and say so.
		if m.refusals++; m.refusals >= maxRefusals {
			return true, m.s.refusedError(m.key, ch, reason)
		}
		if ok, err := m.r.wait(); !ok {
			if err == nil {
				err = m.s.refusedError(m.key, ch, reason)
			}
			return true, err
		}
	case failed:
		m.attempts[commit] = ch
		if err := m.r.fail(err); err != nil {
			return true, err
		}
	}
	return false, nil
}

// commit writes the objects of ch on top of snap and returns the commit and
// the snapshot it makes.
func (s *Store) commit(key store.Key, snap *snapshot, ch *change) (string, *snapshot, error) {
	root, err := s.applyFiles(snap.root, ch.files)
	if err != nil {
		return "", nil, err
	}
	tb, err := encodeTree(root)
	if err != nil {
		return "", nil, err
	}
	treeID, err := s.putObject("tree", tb)
	if err != nil {
		return "", nil, err
	}
	msg := "sponson: " + ch.msg + "\n"
	if !s.noNonce {
		var n [16]byte
		_, _ = rand.Read(n[:]) // crypto/rand.Read never fails; it crashes instead
		msg += "\nSponson-Nonce: " + hex.EncodeToString(n[:]) + "\n"
	}
	commitID, err := s.putObject("commit", encodeCommit(treeID, snap.tip, s.clock(), msg))
	if err != nil {
		return "", nil, err
	}
	next := &snapshot{tip: commitID, root: root, lease: snap.lease, hasLease: snap.hasLease}
	if b, ok := ch.files[leaseFile]; ok && b != nil {
		var li store.LeaseInfo
		if err := json.Unmarshal(b, &li); err != nil {
			return "", nil, errcode.Wrap(errcode.Internal, err, "re-read the lease record written for %s", key)
		}
		next.lease, next.hasLease = li, true
	}
	return commitID, next, nil
}

// applyFiles returns root with files written (nil content deletes), writing
// the new blobs and subtrees.
func (s *Store) applyFiles(root map[string]entry, files map[string][]byte) (map[string]entry, error) {
	out := make(map[string]entry, len(root)+len(files))
	for n, e := range root {
		out[n] = e
	}
	sub := map[string]map[string][]byte{}
	for p, data := range files {
		dir, name, nested := strings.Cut(p, "/")
		if nested {
			if sub[dir] == nil {
				sub[dir] = map[string][]byte{}
			}
			sub[dir][name] = data
			continue
		}
		if data == nil {
			delete(out, p)
			continue
		}
		id, err := s.putObject("blob", data)
		if err != nil {
			return nil, err
		}
		out[p] = entry{mode: modeBlob, id: id}
	}
	for dir, fs := range sub {
		entries := map[string]entry{}
		if e, ok := out[dir]; ok && e.mode == modeTree {
			var err error
			if entries, err = s.tree(e.id); err != nil {
				return nil, err
			}
		}
		for name, data := range fs {
			if data == nil {
				delete(entries, name)
				continue
			}
			id, err := s.putObject("blob", data)
			if err != nil {
				return nil, err
			}
			entries[name] = entry{mode: modeBlob, id: id}
		}
		if len(entries) == 0 {
			delete(out, dir)
			continue
		}
		tb, err := encodeTree(entries)
		if err != nil {
			return nil, err
		}
		id, err := s.putObject("tree", tb)
		if err != nil {
			return nil, err
		}
		out[dir] = entry{mode: modeTree, id: id}
	}
	return out, nil
}

// refusedError is STORE_REJECTED for a push the remote refused, after
// keeping the document locally.
func (s *Store) refusedError(key store.Key, ch *change, reason string) error {
	ref := branchOf(key)
	e := errcode.New(errcode.StoreRejected, "the remote %s refused the push to %s: %s", s.display, ref, s.scrub(reason)).
		WithHint("Allow pushes to sponson-receipts/* in the remote's hooks and branch rules (or give the job a token that may push there), then run again.").
		With("remote", s.display).With("branch", ref)
	if ch.keep == nil {
		return e
	}
	dir := filepath.Join(s.fallback, key.Environment, key.Scope)
	path := filepath.Join(dir, ch.keep.name)
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = os.WriteFile(path, ch.keep.data, 0o600)
	}
	if err != nil {
		e.Message += fmt.Sprintf("; keeping the %s locally failed too: %v", ch.keep.what, err)
		return e
	}
	e.Message += fmt.Sprintf("; the %s is kept at %s", ch.keep.what, path)
	return e.With("keptAt", path)
}

// readme is the README.md of a scope's branch.
func readme(k store.Key) []byte {
	stack := k.Stack
	if stack == "" {
		stack = "(none: a parent lease, shared by every stack)"
	}
	return []byte(fmt.Sprintf(`# Sponson store: %[1]s / %[2]s

This branch is written by Sponson, not by people. It is the git store of the
scope %[2]q of environment %[1]q of the stack %[3]s: its lease (lease.json), its receipts
(latest.json, receipts/), its part of the ownership index (owners.json),
small records (records/), quarantined states (quarantine/) and its
Terraform/OpenTofu state (terraform.tfstate.enc, AES-256-GCM with the key in
SPONSON_STATE_KEY; terraform.tfstate only where plaintext was explicitly
allowed). Every change is one commit whose push is the store's
compare-and-swap, so never edit, rebase or force-push it.

Deleting this branch is safe only when the scope owns nothing any more (the
latest receipt says "destroyed" or its ledger is empty) and no run holds the
lease (lease.json has no holder, or its expiresAt has passed). Before that, the
state and the ledger in it are the only record of what the scope created:
deleting the branch would leave those resources without an owner.
`, k.Environment, k.Scope, stack))
}
