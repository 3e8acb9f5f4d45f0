package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// scopeRecordName is the name of the record sponson_scope keeps in its scope.
const scopeRecordName = "scope"

// ownLeaseTTL is the TTL of the lease the provider takes for one write when
// no run handed one over. A write takes milliseconds; the TTL only bounds how
// long a provider that died mid-write blocks the scope.
const ownLeaseTTL = 2 * time.Minute

// releaseTimeout bounds Release, which still runs when the apply was
// interrupted: a lease left behind blocks the scope for a whole TTL.
const releaseTimeout = 30 * time.Second

// storeOpener opens the store a URL names; "" means the embedded store under
// dir. storeurl.Open in the provider; tests hand over wrappers that fail on
// purpose.
type storeOpener func(raw, dir string) (st store.Store, url string, err error)

// scopeRecord is the document sponson_scope keeps in the store as the record
// "scope" of the run's scope: the resource's values and who wrote them when.
// The wrapper and `sponson status` read it to know which scope a
// configuration declared, so it is written only under the scope's lease.
type scopeRecord struct {
	Environment string    `json:"environment"`
	Name        string    `json:"name"`
	Predecessor string    `json:"predecessor,omitempty"`
	Writer      string    `json:"writer"`
	WrittenAt   time.Time `json:"writtenAt"`
}

// scopeStore writes the record of sponson_scope under the scope's lease
// (docs/design.md §2.7 "Lease", §2.8 "Fenced write" and §6.1), through the
// same lease and store packages as the wrapper.
//
// Under the wrapper it writes under the run's own lease, which the wrapper
// hands over in lease.EnvStore, lease.EnvHolder and lease.EnvToken. The store
// fences every write with that holder and token, so the provider's writes are
// fenced exactly like the run's: a run that lost its lease cannot write
// through its provider either, and the apply fails with LOCK_LOST. The
// provider never takes a lease of its own then, not even when the hand-over is
// malformed: a second lease would be a second writer the run does not know
// of, and taking it would fail anyway while the run holds the lease.
//
// Under plain `tofu apply` nobody holds the lease, so each write takes the
// scope lease, writes, and releases it: a provider write then excludes a
// wrapper run of the same scope, and the other way round.
type scopeStore struct {
	// getenv reads the hand-over and SPONSON_STORE; tests replace it so
	// that both modes run side by side without touching the process.
	getenv func(string) string
	open   storeOpener
	now    func() time.Time
	// newHolder names the provider's own lease.
	newHolder func() string
	// url is the provider block's store attribute, "" when unset; urlErr
	// says why it cannot be used (it was unknown when configured).
	url    string
	urlErr error
	// workDir is where the embedded default store lives; "" means the
	// working directory, which the engine sets to the configuration
	// directory when it starts the provider.
	workDir string

	// mu serialises this provider's own leases: two sponson_scope
	// resources applied in parallel would otherwise refuse each other
	// the scope's lease.
	mu sync.Mutex
}

// newScopeStore returns a scopeStore with the process's dependencies where
// none is given.
func newScopeStore(getenv func(string) string, open storeOpener, now func() time.Time, workDir string) *scopeStore {
	if getenv == nil {
		getenv = os.Getenv
	}
	if open == nil {
		open = storeurl.Open
	}
	if now == nil {
		now = time.Now
	}
	return &scopeStore{getenv: getenv, open: open, now: now, newHolder: newHolderID, workDir: workDir}
}

// newHolderID names a lease the provider takes for itself: provider-<8 hex>,
// so that LOCK_HELD tells a provider's lease from a wrapper run's.
func newHolderID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes instead
	return "provider-" + hex.EncodeToString(b[:])
}

// runKey is the store key of the run's scope: the key of the wrapper's lease.
func runKey(rc runctx.Context) store.Key {
	return store.Key{Stack: rc.Stack, Environment: rc.Environment, Scope: rc.Scope}
}

// put writes rec as the scope record of key.
func (s *scopeStore) put(ctx context.Context, key store.Key, rec scopeRecord) diag.Diagnostics {
	return s.withLease(ctx, key, func(ctx context.Context, _ store.Records, h *lease.Held) error {
		rec.Writer = h.Lease().Holder
		rec.WrittenAt = s.now().UTC()
		b, err := json.Marshal(rec)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "encoding the scope record")
		}
		return h.WriteRecord(ctx, scopeRecordName, b)
	})
}

// remove deletes the scope record of key if it is the record of the object
// being destroyed (environment and name as in its state). A record naming
// another environment or scope belongs to another object, for example the
// replacement a create_before_destroy lifecycle created first, and is left.
func (s *scopeStore) remove(ctx context.Context, key store.Key, environment, name string) diag.Diagnostics {
	return s.withLease(ctx, key, func(ctx context.Context, st store.Records, h *lease.Held) error {
		// Reading, then deleting under the lease is consistent: the delete
		// is fenced, and nobody writes the record without the lease.
		b, err := st.ReadRecord(ctx, key, scopeRecordName)
		if err != nil || b == nil {
			return err
		}
		var rec scopeRecord
		if json.Unmarshal(b, &rec) == nil && (rec.Environment != environment || rec.Name != name) {
			tflog.Debug(ctx, "Leaving the scope record of another sponson_scope object", map[string]any{
				"key": key.String(), "record_environment": rec.Environment, "record_name": rec.Name,
			})
			return nil
		}
		// A record that does not decode is removed too: it is in the run's
		// own scope, and nothing can rely on it.
		return h.DeleteRecord(ctx, scopeRecordName)
	})
}

// writeFunc is one write under a lease: it reads from st and writes
// through h, the only way to write under the lease; withLease reports its
// error.
type writeFunc func(ctx context.Context, st store.Records, h *lease.Held) error

// withLease runs write under the run's handed-over lease of key, or else
// under a lease of key taken for the call, and reports what went wrong.
func (s *scopeStore) withLease(ctx context.Context, key store.Key, write writeFunc) diag.Diagnostics {
	var diags diag.Diagnostics
	url, l, handedOver, err := lease.FromHandover(s.getenv, key)
	if err != nil {
		diags.Append(handoverDiag(key, err))
		return diags
	}
	if handedOver {
		return s.underRunLease(ctx, url, l, write)
	}
	return s.underOwnLease(ctx, key, write)
}

// underRunLease writes under the lease the wrapper handed over. The store is
// the run's, whatever the provider block or SPONSON_STORE say: the lease
// lives there.
func (s *scopeStore) underRunLease(ctx context.Context, url string, l store.Lease, write writeFunc) diag.Diagnostics {
	var diags diag.Diagnostics
	dir, err := s.dir()
	var st store.Store
	if err == nil {
		st, _, err = s.open(url, dir)
	}
	if err != nil {
		diags.Append(storeErrorDiag("Store Not Opened",
			fmt.Sprintf("The sponson provider could not open the run's store %s, which the sponson wrapper handed "+
				"over in %s, so it wrote nothing.", describeStore(url, dir), lease.EnvStore), err))
		return diags
	}
	defer st.Close()
	tflog.Debug(ctx, "Writing the scope record under the run's lease", map[string]any{
		"key": l.Key.String(), "holder": l.Holder, "token": l.Token, "store": storeurl.Redact(url),
	})
	if err := write(ctx, st, lease.Joined(st, l)); err != nil {
		diags.Append(writeErrorDiag(l.Key, err))
	}
	return diags
}

// underOwnLease takes the scope lease for one write and releases it.
func (s *scopeStore) underOwnLease(ctx context.Context, key store.Key, write writeFunc) diag.Diagnostics {
	var diags diag.Diagnostics
	raw, source, err := s.source()
	var dir string
	if err == nil {
		dir, err = s.dir()
	}
	if err != nil {
		diags.Append(storeErrorDiag("Store Not Opened",
			"The sponson provider could not decide which store to write the scope record to, so it wrote nothing.", err))
		return diags
	}
	st, url, err := s.open(raw, dir)
	if err != nil {
		diags.Append(storeErrorDiag("Store Not Opened",
			fmt.Sprintf("The sponson provider could not open the store %s (from %s), so it wrote nothing. Fix "+
				"the store URL, for example file:///path/to/dir.", describeStore(raw, dir), source), err))
		return diags
	}
	defer st.Close()

	s.mu.Lock()
	defer s.mu.Unlock()
	held, err := lease.Acquire(ctx, st, key, s.newHolder(), lease.Config{TTL: ownLeaseTTL})
	if err != nil {
		diags.Append(acquireErrorDiag(key, err))
		return diags
	}
	l := held.Lease()
	tflog.Debug(ctx, "Writing the scope record under a lease of the provider's own", map[string]any{
		"key": key.String(), "holder": l.Holder, "token": l.Token, "store": storeurl.Redact(url), "store_from": source,
	})
	// A write refused for a lost lease makes held lost itself, and Release
	// then leaves the lease alone: it is not ours any more.
	werr := write(ctx, st, held)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if warning := held.Release(rctx); warning != "" {
		diags.AddWarning("Scope Lease Not Released",
			fmt.Sprintf("The sponson provider could not release the lease of %s it took to write the scope "+
				"record. Other runs of the scope wait until the lease expires; nothing else needs to be "+
				"done.\n\n%s", key, warning))
	}
	if werr != nil {
		diags.Append(writeErrorDiag(key, werr))
	}
	return diags
}

// source decides the store of a write without a hand-over: the provider
// block's store attribute, else SPONSON_STORE, else the embedded store
// under the working directory. source says which, for messages.
func (s *scopeStore) source() (raw, source string, err error) {
	switch {
	case s.urlErr != nil:
		return "", "", s.urlErr
	case s.url != "":
		return s.url, "the provider's store attribute", nil
	case s.getenv(storeurl.EnvVar) != "":
		return s.getenv(storeurl.EnvVar), storeurl.EnvVar, nil
	}
	return "", "the default, " + storeurl.DefaultDir + "/ in the working directory", nil
}

// dir is the configuration directory stores are opened in: the embedded
// default lives there.
func (s *scopeStore) dir() (string, error) {
	if s.workDir != "" {
		return s.workDir, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", errcode.Wrap(errcode.StoreUnavailable, err, "cannot read the working directory")
	}
	return dir, nil
}

// describeStore names a store for messages, without credentials.
func describeStore(raw, dir string) string {
	if raw == "" {
		return fmt.Sprintf("%q", filepath.Join(dir, storeurl.DefaultDir))
	}
	return fmt.Sprintf("%q", storeurl.Redact(raw))
}
