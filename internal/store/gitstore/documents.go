package gitstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The fenced documents of a scope, receipts, state and records, and their
// reads: a write lands in one commit with the lease that fences it.

// WriteReceipt stores r as receipts/<runId>.json and latest.json, and the
// scope's part of the ownership index, in one commit fenced by l. r must name
// l's environment and scope and read back with receipt.Parse.
func (s *Store) WriteReceipt(ctx context.Context, l store.Lease, r *receipt.Receipt) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	data, _, err := store.EncodeReceipt(l.Key, r)
	if err != nil {
		return err
	}
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		// The index is built on the tip the push swaps: an identity keeps
		// the time the store first recorded it for this scope.
		prev, _, err := s.readFile(cur, ownersFile)
		if err != nil {
			return nil, err
		}
		idx, err := encodeOwners(prev, l.Key, r, now)
		if err != nil {
			return nil, err
		}
		files := map[string][]byte{receiptsDir + "/" + r.RunID + ".json": data, latestFile: data}
		if idx != nil {
			files[ownersFile] = idx
		}
		return &change{
			files: files,
			msg:   fmt.Sprintf("receipt %s of run %s (%s), token %d", l.Key, r.RunID, r.Status, l.Token),
			keep:  &kept{what: "receipt", name: r.RunID + ".json", data: data},
		}, nil
	})
}

// LatestReceipt returns the scope's latest receipt, nil if it has none. A
// latest.json that does not parse is an error, never an empty scope.
func (s *Store) LatestReceipt(ctx context.Context, key store.Key) (*receipt.Receipt, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	return s.latest(key, snap)
}

// WriteState replaces the scope's Terraform state, sealed, fenced by l.
func (s *Store) WriteState(ctx context.Context, l store.Lease, state []byte) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	payload, name, other, err := s.sealState(l.Key, "state", state)
	if err != nil {
		return err
	}
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		files := map[string][]byte{name: payload}
		if _, ok := cur.root[other]; ok {
			files[other] = nil
		}
		return &change{
			files: files,
			msg:   fmt.Sprintf("state %s by %s, token %d", l.Key, l.Holder, l.Token),
			keep:  &kept{what: "state", name: fmt.Sprintf("%s-token%d.%s", l.Holder, l.Token, name), data: payload},
		}, nil
	})
}

// ReadState returns the scope's Terraform state, nil if it has none.
func (s *Store) ReadState(ctx context.Context, key store.Key) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	if data, ok, err := s.readFile(snap, stateSealed); err != nil || ok {
		if err != nil {
			return nil, err
		}
		return unseal(s.key, sealContext(key, "state"), "the state of "+key.String(), data)
	}
	data, _, err := s.readFile(snap, statePlain)
	return data, err
}

// WriteRecord stores records/<name>.json, fenced by l.
func (s *Store) WriteRecord(ctx context.Context, l store.Lease, name string, data []byte) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	if err := checkName("record", name); err != nil {
		return err
	}
	data = append([]byte(nil), data...)
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		return &change{
			files: map[string][]byte{recordsDir + "/" + name + ".json": data},
			msg:   fmt.Sprintf("record %s of %s by %s, token %d", name, l.Key, l.Holder, l.Token),
			keep:  &kept{what: "record", name: fmt.Sprintf("record-%s-%s.json", name, l.Holder), data: data},
		}, nil
	})
}

// ReadRecord returns records/<name>.json, nil if it does not exist.
func (s *Store) ReadRecord(ctx context.Context, key store.Key, name string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := checkName("record", name); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	data, _, err := s.readFile(snap, recordsDir+"/"+name+".json")
	return data, err
}

// DeleteRecord removes records/<name>.json, fenced by l. Removing a record
// that does not exist changes nothing, but still needs the lease as read
// from the remote.
func (s *Store) DeleteRecord(ctx context.Context, l store.Lease, name string) error {
	if err := checkKey(l.Key); err != nil {
		return err
	}
	if err := checkName("record", name); err != nil {
		return err
	}
	path := recordsDir + "/" + name + ".json"
	return s.mutate(ctx, l.Key, func(cur *snapshot, now time.Time) (*change, error) {
		if err := fence(l, cur, now); err != nil {
			return nil, err
		}
		if _, ok, err := s.readFile(cur, path); err != nil || !ok {
			return nil, err
		}
		return &change{files: map[string][]byte{path: nil}, msg: fmt.Sprintf("delete record %s of %s by %s, token %d", name, l.Key, l.Holder, l.Token)}, nil
	})
}

func (s *Store) latest(key store.Key, snap *snapshot) (*receipt.Receipt, error) {
	b, ok, err := s.readFile(snap, latestFile)
	if err != nil || !ok {
		return nil, err
	}
	return parseLatest(key, b)
}

// parseLatest reads a latest receipt. One that does not parse is an error
// naming the branch (RECEIPT_CORRUPT or RECEIPT_VERSION), never an empty
// scope: an empty scope would forget every resource of its ledger.
func parseLatest(key store.Key, b []byte) (*receipt.Receipt, error) {
	r, err := receipt.Parse(b)
	if err != nil {
		where := branchOf(key) + ":" + latestFile
		var e *errcode.Error
		if errors.As(err, &e) {
			return nil, (&errcode.Error{Code: e.Code, Message: where + ": " + e.Message, Hint: e.Hint, Err: e}).With("branch", branchOf(key))
		}
		return nil, errcode.Wrap(errcode.ReceiptCorrupt, err, "%s", where)
	}
	return r, nil
}

// CheckState reports whether a state write of key would be refused for
// want of a key (store.StateChecker).
func (s *Store) CheckState(key store.Key) error {
	_, _, _, err := s.sealState(key, "state", nil)
	return err
}

// sealState prepares a state document: sealed under the key, or plaintext
// when explicitly allowed. It returns the payload, the file name to write and
// the name of the other form, which the write removes.
func (s *Store) sealState(key store.Key, doc string, state []byte) (payload []byte, name, other string, err error) {
	switch {
	case s.key != nil:
		payload, err = seal(s.key, sealContext(key, doc), state)
		return payload, stateSealed, statePlain, err
	case s.plain:
		return append([]byte(nil), state...), statePlain, stateSealed, nil
	default:
		return nil, "", "", errcode.New(errcode.Usage, "the git store does not write state unencrypted: anyone who can read the repository could read it, secrets included").WithHint(keyHint)
	}
}

// sealContext binds a sealed document to its stack, scope and place, so
// that it does not open when copied elsewhere (another stack's branch
// included). The layout before stacks bound it to environment and scope
// only; Migrate seals those documents again.
func sealContext(key store.Key, doc string) string {
	if key.Stack == "" {
		return key.Environment + "/" + key.Scope + "/" + doc
	}
	return store.StackSegment(key.Stack) + "//" + key.Environment + "/" + key.Scope + "/" + doc
}
