package ownership

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Identifying values that are sensitive never reach a receipt, a ledger or
// the ownership index in clear (docs/design.md §9): the identity holds a keyed
// hash of the value instead, `<attr>=hmac:<hex>`, unambiguous beside the
// JSON of a clear value. The key is one per environment, so that every
// scope computes the same identity for the same value: a random key kept in
// the store beside the environment's intent lease (HashKeyRecord), made by
// the first run that needs it. A value is sensitive when the plan marks it
// (after_sensitive, before_sensitive: the provider's schema or a sensitive
// variable) or the state does (sensitive_attributes). Because another scope
// may not mark the same value, Keyed also matches every planned change with
// all of its identifying values hashed.

// HashKeyRecord is the name of the record, in the intent lease's scope,
// that holds the environment's key for hashing sensitive identifying values.
const HashKeyRecord = "identity-hash-key"

// NewHashKey returns a fresh random key for HashKeyRecord.
func NewHashKey() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// ParseHashKey reads a HashKeyRecord.
func ParseHashKey(data []byte) ([]byte, error) {
	k, err := hex.DecodeString(string(data))
	if err != nil || len(k) < 16 {
		return nil, errors.New("the identity hash key record is not a hex key of at least 16 bytes")
	}
	return k, nil
}

// EncodeHashKey renders a key for HashKeyRecord.
func EncodeHashKey(k []byte) []byte { return []byte(hex.EncodeToString(k)) }

// sealed is an identifying value replaced by its keyed hash.
type sealed string

// seal returns attrs with the identifying attributes of typ that sensitive
// names (all of them with all) replaced by their keyed hash.
func (pol Policy) seal(typ string, attrs map[string]any, sensitive map[string]bool, all bool) map[string]any {
	var out map[string]any
	for _, n := range pol.Identity[typ] {
		v := Normalize(attrs[n])
		if v == nil || (!all && !sensitive[n]) {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(attrs))
			for k, x := range attrs {
				out[k] = x
			}
		}
		m := hmac.New(sha256.New, pol.HashKey)
		fmt.Fprint(m, canonical(v))
		out[n] = sealed("hmac:" + hex.EncodeToString(m.Sum(nil)[:16]))
	}
	if out == nil {
		return attrs
	}
	return out
}

// NeedsHashKey reports whether the plan has a sensitive value among the
// identifying attributes of pol: the run then needs the environment's key.
func (pol Policy) NeedsHashKey(p *tfjson.Plan) bool {
	if p == nil {
		return false
	}
	for _, rc := range p.ResourceChanges {
		if rc.Mode != tfjson.ManagedResourceMode || rc.Change == nil {
			continue
		}
		for _, n := range pol.Identity[rc.Type] {
			if topSensitive(rc.Change.AfterSensitive)[n] || topSensitive(rc.Change.BeforeSensitive)[n] {
				return true
			}
		}
	}
	return false
}

// topSensitive returns the top-level attributes a plan's sensitivity value
// marks, wholly or in part.
func topSensitive(v any) map[string]bool {
	m, _ := v.(map[string]any)
	out := map[string]bool{}
	for k, x := range m {
		if anyTrue(x) {
			out[k] = true
		}
	}
	return out
}

func anyTrue(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case map[string]any:
		for _, e := range x {
			if anyTrue(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if anyTrue(e) {
				return true
			}
		}
	}
	return false
}

// sensitiveFromPlan maps the address of every managed resource instance of
// a plan, no-ops included, to the attributes the plan marks sensitive: the
// state alone does not say which attributes a provider's schema marks.
func sensitiveFromPlan(p *tfjson.Plan) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	if p == nil {
		return out
	}
	for _, rc := range p.ResourceChanges {
		if rc.Mode != tfjson.ManagedResourceMode || rc.Change == nil {
			continue
		}
		s := topSensitive(rc.Change.AfterSensitive)
		for k := range topSensitive(rc.Change.BeforeSensitive) {
			s[k] = true
		}
		if len(s) > 0 {
			out[rc.Address] = s
		}
	}
	return out
}

// LoadHashKey returns the environment's key for sensitive identifying
// values. When the store has none yet and create is set, it makes one under
// the intent lease (so two runs never make two); without create it returns
// a fresh key that is not kept: no identity in the environment is hashed
// yet, so a read-only plan can match nothing hashed anyway. nil, nil when
// there is none and need is false.
func LoadHashKey(ctx context.Context, st lease.Store, env, holder string, cfg lease.Config, need, create bool) ([]byte, error) {
	key := store.Key{Environment: env, Scope: IntentLeaseScope}
	read := func(ctx context.Context) ([]byte, error) {
		b, err := st.ReadRecord(ctx, key, HashKeyRecord)
		if err != nil || b == nil {
			return nil, err
		}
		return ParseHashKey(b)
	}
	k, err := read(ctx)
	if err != nil || k != nil || !need {
		return k, err
	}
	if !create {
		return NewHashKey(), nil
	}
	cfg.Wait = true
	cfg.OnWait = nil
	if cfg.TTL <= 0 || cfg.TTL > IntentLeaseTTL {
		cfg.TTL = IntentLeaseTTL
	}
	if cfg.PollInterval <= 0 || cfg.PollInterval > intentLeasePoll {
		cfg.PollInterval = intentLeasePoll
	}
	held, err := lease.Acquire(ctx, st, key, holder, cfg)
	if err != nil {
		return nil, err
	}
	defer held.Release(context.WithoutCancel(ctx))
	if k, err = read(ctx); err != nil || k != nil {
		return k, err
	}
	k = NewHashKey()
	if err := held.WriteRecord(ctx, HashKeyRecord, EncodeHashKey(k)); err != nil {
		return nil, err
	}
	return k, nil
}
