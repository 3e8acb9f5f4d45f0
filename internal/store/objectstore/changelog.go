package objectstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The ownership log (docs/design.md §5.5) spares the foreign check the
// listing of every pointer of an environment. Every pointer write that
// changes the scope's ownership part is bracketed by two conditional
// writes of <env>/.owners.log.json: begin, before the pointer's PUT, adds
// the scope to the log's recent changes under the next sequence number and
// marks the write pending; end, after the PUT (landed or not), clears the
// mark. A reader that has read the log at sequence N with pending set P
// and then read the pointers it needed knows every ownership write that
// landed before its read of the log: one begun after it has a sequence
// above N, one begun before and landed after it is in P. So a later check
// reads the log again (a conditional GET: 304 when nothing began) and
// reads only the pointers of the scopes changed since N and those pending
// in either version of the log. A write that never ends (a crash between
// begin and end) stays pending, a pointer read per check, until the next
// writer of the log finds the pointer moved away from the ETag the write
// was conditional on: then that write has landed or never will.
const (
	// logKeep is how many recent changes the log holds; a reader further
	// behind lists the environment instead.
	logKeep = 2000
	// logPendingCheck is the age after which a writer of the log checks
	// whether a pending mark's write is over (its pointer moved).
	logPendingCheck = 10 * time.Minute
	// logAttempts bounds the read-modify-write of the log under contention.
	logAttempts = 100
)

// ownersLog is <env>/.owners.log.json. Changes[i] is the scope id of
// change Seq-len(Changes)+1+i.
type ownersLog struct {
	Nonce string `json:"nonce"`
	// Epoch is drawn when the log is created: a log deleted and written
	// anew restarts its sequence, which no reader may take for the old one's.
	Epoch   string             `json:"epoch"`
	Seq     int64              `json:"seq"`
	Changes []string           `json:"changes"`
	Pending map[string]pending `json:"pending,omitempty"` // by write token
}

type pending struct {
	Scope string    `json:"scope"`
	Since time.Time `json:"since"` // the server's clock at begin
	// IfMatch is the pointer ETag the write is conditional on.
	IfMatch string `json:"ifMatch"`
}

// first is the sequence number of the oldest change the log holds.
func (l ownersLog) first() int64 { return l.Seq - int64(len(l.Changes)) + 1 }

// since returns the scopes changed after sequence n, and false when the log
// no longer reaches back to n+1.
func (l ownersLog) since(n int64) ([]string, bool) {
	if n > l.Seq || n+1 < l.first() {
		return nil, false
	}
	return l.Changes[n+1-l.first():], true
}

func (s *Store) ownersLogKey(env string) string { return s.prefix + env + "/.owners.log.json" }

// editLog applies edit to the log of env by a conditional write, read again
// and applied again when another writer came first.
func (s *Store) editLog(ctx context.Context, env string, edit func(doc *ownersLog, now time.Time)) error {
	key := s.ownersLogKey(env)
	for range logAttempts {
		var doc ownersLog
		o, err := s.objects.Get(ctx, key)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(o.Data, &doc); err != nil {
				return errcode.Wrap(errcode.StoreUnavailable, err, "the ownership log %s does not parse; delete it (readers then list the environment)", s.url(key)).With("store", s.display)
			}
		}
		if doc.Epoch == "" {
			doc.Epoch = nonce()
		}
		edit(&doc, o.Date)
		if err := s.dropOver(ctx, env, &doc, o.Date); err != nil {
			return err
		}
		if len(doc.Changes) > logKeep {
			doc.Changes = doc.Changes[len(doc.Changes)-logKeep:]
		}
		doc.Nonce = nonce()
		data, err := json.Marshal(doc)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "encode the ownership log of %s", env)
		}
		_, err = s.objects.PutIf(ctx, key, data, o.ETag, func(b []byte) bool {
			var cur ownersLog
			return json.Unmarshal(b, &cur) == nil && cur.Nonce == doc.Nonce
		})
		if !errors.Is(err, ErrPrecondition) {
			return err
		}
		if ctx.Err() != nil {
			return ContextError(ctx, "write the ownership log of "+env)
		}
	}
	return errcode.New(errcode.StoreContended, "the %s store %s could not write the ownership log of %s: it kept moving", s.name, s.display, env).With("store", s.display)
}

// dropOver drops the pending marks older than logPendingCheck whose
// pointer no longer has the ETag their write was conditional on: that
// write has landed (and a reader that held the mark reads the pointer
// again when the mark goes) or never will.
func (s *Store) dropOver(ctx context.Context, env string, doc *ownersLog, now time.Time) error {
	for t, p := range doc.Pending {
		if now.Sub(p.Since) < logPendingCheck {
			continue
		}
		k, ok := keyOf(env, p.Scope)
		if !ok {
			delete(doc.Pending, t)
			continue
		}
		cur, err := s.readPointer(ctx, k)
		if err != nil {
			return err
		}
		if cur.etag != p.IfMatch {
			delete(doc.Pending, t)
		}
	}
	return nil
}

// logBegin records that the ownership part of k is about to change by a
// write conditional on the pointer's ETag ifMatch, and returns the write's
// token for logEnd.
func (s *Store) logBegin(ctx context.Context, k store.Key, ifMatch string) (string, error) {
	token, id := nonce(), scopeID(k)
	err := s.editLog(ctx, k.Environment, func(doc *ownersLog, now time.Time) {
		doc.Seq++
		doc.Changes = append(doc.Changes, id)
		if doc.Pending == nil {
			doc.Pending = map[string]pending{}
		}
		doc.Pending[token] = pending{Scope: id, Since: now, IfMatch: ifMatch}
	})
	return token, err
}

// logEnd clears the pending mark of token once its pointer write is over,
// landed or not. A failure is ignored: the mark only costs readers a
// pointer read until it ages out.
func (s *Store) logEnd(ctx context.Context, k store.Key, token string) {
	_ = s.editLog(context.WithoutCancel(ctx), k.Environment, func(doc *ownersLog, _ time.Time) {
		delete(doc.Pending, token)
	})
}

// logState is what a cache knows of the log it was last brought up to
// date with.
type logState struct {
	ok      bool // false: the cache was not read through the log
	etag    string
	epoch   string
	seq     int64
	pending []string // scope ids
}

func pendingScopes(doc ownersLog) []string {
	out := make([]string, 0, len(doc.Pending))
	for _, p := range doc.Pending {
		out = append(out, p.Scope)
	}
	return out
}
