package objectstore

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/statecrypt"
)

// Suffixes of state bodies: sealed under the key, or plaintext where that
// was explicitly allowed.
const (
	sealedSuffix = ".tfstate.sealed"
	plainSuffix  = ".tfstate"
)

// errUnchanged ends a fenced write that has nothing to change (deleting a
// record that is not there) after its fence check passed.
var errUnchanged = errors.New("unchanged")

// ownersDoc is a scope's part of the ownership index: the identities of its
// latest ledger with the time the store first recorded each.
type ownersDoc struct {
	RunID   string        `json:"runId"`
	Entries []store.Owner `json:"entries"`
}

// bodies tracks the bodies one fenced write created, to delete them if the
// write is refused.
type bodies struct {
	s    *Store
	dir  string
	made []string
}

func (b *bodies) put(ctx context.Context, name string, data []byte) error {
	if err := b.s.objects.Put(ctx, b.dir+name, data); err != nil {
		return err
	}
	b.made = append(b.made, name)
	return nil
}

// drop deletes every body made (a refused write), best effort: what stays
// is unreferenced garbage.
func (b *bodies) drop(ctx context.Context) {
	for _, n := range b.made {
		_ = b.s.objects.Delete(context.WithoutCancel(ctx), b.dir+n)
	}
}

// retire deletes the bodies the pointer named before and names no more,
// after it moved; best effort, as above.
func (s *Store) retire(ctx context.Context, k store.Key, names ...string) {
	for _, n := range names {
		if n != "" {
			_ = s.objects.Delete(context.WithoutCancel(ctx), s.scopeDir(k)+n)
		}
	}
}

// WriteReceipt stores r as the scope's latest receipt and its ledger as the
// scope's part of the ownership index, fenced by l: both bodies are written
// under fresh names, then the pointer moves to them in one conditional PUT.
// A part that already holds the ledger's entries (store.SameOwners) is kept:
// the pointer moves to the new receipt alone.
// An identity the previous part held keeps its Since; a new one gets the
// server's clock at the fence check.
func (s *Store) WriteReceipt(ctx context.Context, l store.Lease, r *receipt.Receipt) error {
	if err := s.objects.Ready(ctx, true); err != nil {
		return err
	}
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	data, parsed, err := store.EncodeReceipt(l.Key, r)
	if err != nil {
		return err
	}
	b := &bodies{s: s, dir: s.scopeDir(l.Key)}
	rname := "receipts/" + r.RunID + "." + nonce() + ".json"
	var oname, basedOn string
	prev, err := s.fenced(ctx, l, "write the receipt of "+l.Key.String(), func(next *pointer, cur current) error {
		if len(b.made) == 0 {
			if err := b.put(ctx, rname, data); err != nil {
				return err
			}
		}
		if oname == "" || basedOn != cur.p.Owners {
			name, err := b.ownersPart(ctx, l.Key, parsed, cur)
			if err != nil {
				return err
			}
			oname, basedOn = name, cur.p.Owners
		}
		next.Receipt, next.Owners = rname, oname
		return nil
	})
	if err != nil {
		b.drop(ctx)
		return err
	}
	// Receipts stay, one per run: the one this write replaced goes only
	// when it was this run's own earlier one.
	var old []string
	if prev.Owners != oname {
		old = append(old, prev.Owners)
	}
	for _, n := range b.made {
		if n != rname && n != oname {
			old = append(old, n) // owners parts of attempts that lost the race
		}
	}
	if strings.HasPrefix(prev.Receipt, "receipts/"+r.RunID+".") {
		old = append(old, prev.Receipt)
	}
	s.retire(ctx, l.Key, old...)
	return nil
}

// ownersPart returns the name of the scope's part of the ownership index
// for the ledger of r, the receipt being written on the pointer cur: the
// part cur names when it already holds the entries (store.SameOwners),
// else a new part, written under a fresh name. An identity the previous
// part held keeps its Since.
func (b *bodies) ownersPart(ctx context.Context, k store.Key, r *receipt.Receipt, cur current) (string, error) {
	var old ownersDoc
	read := false
	if cur.p.Owners != "" {
		o, err := b.s.objects.Get(ctx, b.dir+cur.p.Owners)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return "", err
		}
		// An unreadable part only loses its Since times.
		read = err == nil && json.Unmarshal(o.Data, &old) == nil
	}
	entries := store.OwnersOf(k, r, old.Entries, cur.now)
	if read && store.SameOwners(old.Entries, entries) {
		return cur.p.Owners, nil
	}
	doc, err := json.Marshal(ownersDoc{RunID: r.RunID, Entries: entries})
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, err, "encode the ownership index of %s", k)
	}
	name := "owners/" + nonce() + ".json"
	return name, b.put(ctx, name, doc)
}

// readBody reads the body the pointer names (pick), nil when it names none.
// A body that vanished between the two reads was replaced meanwhile: the
// pointer is read again.
func (s *Store) readBody(ctx context.Context, k store.Key, what string, pick func(pointer) string) ([]byte, string, error) {
	var lastMissing string
	for range 5 {
		cur, err := s.readPointer(ctx, k)
		if err != nil {
			return nil, "", err
		}
		name := pick(cur.p)
		if name == "" {
			return nil, "", nil
		}
		o, err := s.objects.Get(ctx, s.scopeDir(k)+name)
		if err == nil {
			return o.Data, name, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, "", err
		}
		if name == lastMissing {
			break
		}
		lastMissing = name
	}
	return nil, "", errcode.New(errcode.ReceiptCorrupt, "the %s of %s is missing: its pointer names %s, which is not in the bucket", what, k, s.scopeDir(k)+lastMissing).
		WithHint("Restore the object from the bucket's versions if it is versioned; nothing deletes a body the pointer still names.")
}

// LatestReceipt returns the scope's latest receipt, nil if it has none. A
// body that does not parse is an error, never an empty scope.
func (s *Store) LatestReceipt(ctx context.Context, key store.Key) (*receipt.Receipt, error) {
	if err := s.objects.Ready(ctx, false); err != nil {
		return nil, err
	}
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	data, name, err := s.readBody(ctx, key, "latest receipt", func(p pointer) string { return p.Receipt })
	if err != nil || data == nil {
		return nil, err
	}
	return parseReceipt(s.scopeDir(key)+name, data)
}

func parseReceipt(where string, data []byte) (*receipt.Receipt, error) {
	r, err := receipt.Parse(data)
	if err != nil {
		var e *errcode.Error
		if errors.As(err, &e) {
			return nil, (&errcode.Error{Code: e.Code, Message: where + ": " + e.Message, Hint: e.Hint, Err: e}).With("path", where)
		}
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "%s", where)
	}
	return r, nil
}

func sealContext(k store.Key, doc string) string { return k.String() + "/" + doc }

// CheckState reports whether a state write of k would be refused for want
// of a key (store.StateChecker).
func (s *Store) CheckState(k store.Key) error {
	_, _, err := s.sealState(k, "state", nil)
	return err
}

// sealState prepares a state document and its suffix.
func (s *Store) sealState(k store.Key, doc string, state []byte) ([]byte, string, error) {
	if s.key != nil {
		b, err := statecrypt.Seal(s.key, sealContext(k, doc), state)
		return b, sealedSuffix, err
	}
	if !s.plain {
		return nil, "", errcode.New(errcode.Usage, "the %s store does not write state unencrypted: anyone who can read the bucket could read it, secrets included (server-side encryption is the server's, not ours)", s.name).WithHint(s.hints.Key)
	}
	return state, plainSuffix, nil
}

func (s *Store) openState(k store.Key, doc, name, what string, data []byte) ([]byte, error) {
	if strings.HasSuffix(name, sealedSuffix) {
		return statecrypt.Unseal(s.key, sealContext(k, doc), what, data, s.hints)
	}
	return data, nil
}

// WriteState replaces the scope's Terraform state, fenced by l: the sealed
// state goes to a new body, then the pointer moves to it.
func (s *Store) WriteState(ctx context.Context, l store.Lease, state []byte) error {
	if err := s.objects.Ready(ctx, true); err != nil {
		return err
	}
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	sealed, suffix, err := s.sealState(l.Key, "state", state)
	if err != nil {
		return err
	}
	b := &bodies{s: s, dir: s.scopeDir(l.Key)}
	name := "state/" + nonce() + suffix
	prev, err := s.fenced(ctx, l, "write the state of "+l.Key.String(), func(next *pointer, _ current) error {
		if len(b.made) == 0 {
			if err := b.put(ctx, name, sealed); err != nil {
				return err
			}
		}
		next.State = name
		return nil
	})
	if err != nil {
		b.drop(ctx)
		return err
	}
	s.retire(ctx, l.Key, prev.State)
	return nil
}

// ReadState returns the scope's Terraform state, nil if it has none.
func (s *Store) ReadState(ctx context.Context, key store.Key) ([]byte, error) {
	if err := s.objects.Ready(ctx, false); err != nil {
		return nil, err
	}
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	data, name, err := s.readBody(ctx, key, "state", func(p pointer) string { return p.State })
	if err != nil || data == nil {
		return nil, err
	}
	return s.openState(key, "state", name, "the state of "+key.String(), data)
}

// WriteRecord stores a record of the scope, fenced by l.
func (s *Store) WriteRecord(ctx context.Context, l store.Lease, name string, data []byte) error {
	if err := s.objects.Ready(ctx, true); err != nil {
		return err
	}
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	if err := store.CheckName("record", name); err != nil {
		return err
	}
	b := &bodies{s: s, dir: s.scopeDir(l.Key)}
	body := "records/" + name + "." + nonce() + ".json"
	prev, err := s.fenced(ctx, l, "write the record "+name+" of "+l.Key.String(), func(next *pointer, _ current) error {
		if len(b.made) == 0 {
			if err := b.put(ctx, body, data); err != nil {
				return err
			}
		}
		if next.Records == nil {
			next.Records = map[string]string{}
		}
		next.Records[name] = body
		return nil
	})
	if err != nil {
		b.drop(ctx)
		return err
	}
	s.retire(ctx, l.Key, prev.Records[name])
	return nil
}

// ReadRecord returns a record, nil if there is none.
func (s *Store) ReadRecord(ctx context.Context, key store.Key, name string) ([]byte, error) {
	if err := s.objects.Ready(ctx, false); err != nil {
		return nil, err
	}
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	if err := store.CheckName("record", name); err != nil {
		return nil, err
	}
	data, _, err := s.readBody(ctx, key, "record "+name, func(p pointer) string { return p.Records[name] })
	return data, err
}

// DeleteRecord removes a record, fenced by l; a missing record is not an
// error (the fence is still checked).
func (s *Store) DeleteRecord(ctx context.Context, l store.Lease, name string) error {
	if err := s.objects.Ready(ctx, true); err != nil {
		return err
	}
	if err := store.CheckKey(l.Key); err != nil {
		return err
	}
	if err := store.CheckName("record", name); err != nil {
		return err
	}
	prev, err := s.fenced(ctx, l, "delete the record "+name+" of "+l.Key.String(), func(next *pointer, _ current) error {
		if next.Records[name] == "" {
			return errUnchanged
		}
		delete(next.Records, name)
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	if err != nil {
		return err
	}
	s.retire(ctx, l.Key, prev.Records[name])
	return nil
}

// Quarantine stores quarantine/<runId>.tfstate[.sealed] without a fence: the
// object is named by the run, so it replaces nothing but its own copy.
func (s *Store) Quarantine(ctx context.Context, key store.Key, runID string, state []byte) error {
	if err := s.objects.Ready(ctx, true); err != nil {
		return err
	}
	if err := store.CheckKey(key); err != nil {
		return err
	}
	if err := store.CheckName("run id", runID); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ContextError(ctx, "quarantine a state of "+key.String())
	}
	data, suffix, err := s.sealState(key, "quarantine/"+runID, state)
	if err != nil {
		return err
	}
	return s.objects.Put(ctx, s.scopeDir(key)+"quarantine/"+runID+suffix, data)
}

// ListQuarantine returns the quarantined states of key, oldest first (by the
// server's Last-Modified).
func (s *Store) ListQuarantine(ctx context.Context, key store.Key) ([]store.Quarantined, error) {
	if err := s.objects.Ready(ctx, false); err != nil {
		return nil, err
	}
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	dir := s.scopeDir(key) + "quarantine/"
	objs, err := s.objects.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []store.Quarantined
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, dir)
		runID, ok := strings.CutSuffix(name, sealedSuffix)
		if !ok {
			runID, ok = strings.CutSuffix(name, plainSuffix)
		}
		if !ok || store.CheckName("run id", runID) != nil {
			continue
		}
		got, err := s.objects.Get(ctx, o.Key)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		state, err := s.openState(key, "quarantine/"+runID, name, "the quarantined state of run "+runID+" in "+key.String(), got.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, store.Quarantined{RunID: runID, At: o.At.UTC(), State: state})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}
