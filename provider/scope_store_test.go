package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// The tests of this file hand the environment over through getenv, so they
// run in parallel and never touch the process's variables.

var (
	testKey      = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-42"}
	testRecord   = scopeRecord{Environment: "preview", Name: "pr-42", Predecessor: "branch-feat-search"}
	testNow      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ownHolderPat = regexp.MustCompile(`^provider-[0-9a-f]{8}$`)
)

// env is a getenv over a map.
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// newTestScopeStore is a scopeStore over the real file store with a fixed
// clock; nothing is handed over unless vars says so.
func newTestScopeStore(vars map[string]string) *scopeStore {
	return newScopeStore(env(vars), nil, func() time.Time { return testNow }, "")
}

// testFileStore opens a file store in a new directory and returns it with
// its URL.
func testFileStore(t *testing.T) (*filestore.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, "file://" + dir
}

// handoverVars is what the wrapper sets for the engine holding l in the
// store at url.
func handoverVars(url string, l store.Lease) map[string]string {
	vars := map[string]string{}
	for _, kv := range lease.HandoverEnv(url, l) {
		name, value, _ := strings.Cut(kv, "=")
		vars[name] = value
	}
	return vars
}

func acquire(t *testing.T, st store.Store, key store.Key, holder string, ttl time.Duration) store.Lease {
	t.Helper()
	g, err := st.Acquire(context.Background(), key, holder, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return g.Lease
}

func readRecord(t *testing.T, st store.Store, key store.Key) []byte {
	t.Helper()
	b, err := st.ReadRecord(context.Background(), key, scopeRecordName)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeRecord(t *testing.T, b []byte) scopeRecord {
	t.Helper()
	var rec scopeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("scope record %s: %v", b, err)
	}
	return rec
}

func readLease(t *testing.T, st store.Store, key store.Key) store.LeaseInfo {
	t.Helper()
	info, err := st.ReadLease(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// wantOneError fails unless diags is exactly one error with summary whose
// detail starts with prefix and ends with the original error.
func wantOneError(t *testing.T, diags diag.Diagnostics, summary, prefix string, cause error) string {
	t.Helper()
	if len(diags) != 1 || !diags.HasError() || diags[0].Summary() != summary {
		t.Fatalf("diagnostics = %v, want one error %q", diags, summary)
	}
	detail := diags[0].Detail()
	if !strings.HasPrefix(detail, prefix) {
		t.Errorf("detail does not start with %q:\n%s", prefix, detail)
	}
	if cause != nil && !strings.HasSuffix(detail, "\n\n"+cause.Error()) {
		t.Errorf("detail does not end with the original error %q:\n%s", cause, detail)
	}
	return detail
}

func TestScopeStore_ownLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := testFileStore(t)
	s := newTestScopeStore(map[string]string{storeurl.EnvVar: url})

	for token := int64(1); token <= 2; token++ {
		if diags := s.put(ctx, testKey, testRecord); len(diags) > 0 {
			t.Fatalf("put: %v", diags)
		}
		rec := decodeRecord(t, readRecord(t, st, testKey))
		if !ownHolderPat.MatchString(rec.Writer) {
			t.Errorf("writer = %q, want %s", rec.Writer, ownHolderPat)
		}
		want := testRecord
		want.Writer, want.WrittenAt = rec.Writer, testNow
		if diff := cmp.Diff(want, rec); diff != "" {
			t.Errorf("record (-want +got):\n%s", diff)
		}
		// Released, with the token of this write: each write is one grant.
		if l := readLease(t, st, testKey); l.Holder != "" || l.Token != token {
			t.Errorf("lease after write %d = %+v, want released with token %d", token, l, token)
		}
	}

	if diags := s.remove(ctx, testKey, "preview", "pr-42"); len(diags) > 0 {
		t.Fatalf("remove: %v", diags)
	}
	if b := readRecord(t, st, testKey); b != nil {
		t.Errorf("record after remove = %s, want none", b)
	}
	if l := readLease(t, st, testKey); l.Holder != "" || l.Token != 3 {
		t.Errorf("lease after remove = %+v, want released with token 3", l)
	}
}

func TestScopeStore_ownLeaseHeld(t *testing.T) {
	t.Parallel()
	st, url := testFileStore(t)
	other := acquire(t, st, testKey, "run-other", 5*time.Minute)
	s := newTestScopeStore(map[string]string{storeurl.EnvVar: url})

	diags := s.put(context.Background(), testKey, testRecord)

	detail := wantOneError(t, diags, "Scope Leased By Another Run", "LOCK_HELD: ", nil)
	for _, want := range []string{"preview/pr-42", "run run-other", other.ExpiresAt.UTC().Format(time.RFC3339), "sponson apply --wait"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail does not contain %q:\n%s", want, detail)
		}
	}
	if b := readRecord(t, st, testKey); b != nil {
		t.Errorf("record = %s, want none", b)
	}
	if l := readLease(t, st, testKey); l.Holder != "run-other" || l.Token != other.Token {
		t.Errorf("lease = %+v, want run-other's, untouched", l)
	}
}

func TestScopeStore_runLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := testFileStore(t)
	own, ownURL := testFileStore(t)
	run := acquire(t, st, testKey, "run-test", time.Minute)
	vars := handoverVars(url, run)
	vars[storeurl.EnvVar] = ownURL // ignored under the wrapper
	s := newTestScopeStore(vars)
	s.url = ownURL // ignored as well

	if diags := s.put(ctx, testKey, testRecord); len(diags) > 0 {
		t.Fatalf("put: %v", diags)
	}
	if rec := decodeRecord(t, readRecord(t, st, testKey)); rec.Writer != "run-test" || rec.Name != "pr-42" {
		t.Errorf("record = %+v, want pr-42 written by run-test", rec)
	}
	// The run's lease is the run's: the provider never releases it.
	if l := readLease(t, st, testKey); l.Holder != "run-test" || l.Token != run.Token {
		t.Errorf("lease = %+v, want still run-test's", l)
	}
	if diags := s.remove(ctx, testKey, "preview", "pr-42"); len(diags) > 0 {
		t.Fatalf("remove: %v", diags)
	}
	if b := readRecord(t, st, testKey); b != nil {
		t.Errorf("record after remove = %s, want none", b)
	}
	if l := readLease(t, st, testKey); l.Holder != "run-test" {
		t.Errorf("lease after remove = %+v, want still run-test's", l)
	}
	if l := readLease(t, own, testKey); l.Token != 0 {
		t.Errorf("the provider took a lease in its own store: %+v", l)
	}
}

func TestScopeStore_runLeaseLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := testFileStore(t)
	run := acquire(t, st, testKey, "run-test", time.Minute)
	// The run's lease is taken over: released here, so the test need not
	// wait for an expiry (the acceptance test does).
	if err := st.Release(ctx, run); err != nil {
		t.Fatal(err)
	}
	other := acquire(t, st, testKey, "run-other", time.Minute)
	written := []byte(`{"environment":"preview","name":"pr-42","writer":"run-other"}`)
	if err := st.WriteRecord(ctx, other, scopeRecordName, written); err != nil {
		t.Fatal(err)
	}
	s := newTestScopeStore(handoverVars(url, run))

	for name, op := range map[string]func() diag.Diagnostics{
		"put":    func() diag.Diagnostics { return s.put(ctx, testKey, testRecord) },
		"remove": func() diag.Diagnostics { return s.remove(ctx, testKey, "preview", "pr-42") },
	} {
		diags := op()

		detail := wantOneError(t, diags, "Lease Lost", "LOCK_LOST: ", nil)
		for _, want := range []string{"lost its lease of preview/pr-42", "nothing was written", "Run the apply again",
			"the run that took over is authoritative", store.ErrLeaseLost.Error()} {
			if !strings.Contains(detail, want) {
				t.Errorf("%s: detail does not contain %q:\n%s", name, want, detail)
			}
		}
		if b := readRecord(t, st, testKey); !bytes.Equal(b, written) {
			t.Errorf("%s: record = %s, want run-other's unchanged", name, b)
		}
	}
	if l := readLease(t, st, testKey); l.Holder != "run-other" || l.Token != other.Token {
		t.Errorf("lease = %+v, want run-other's", l)
	}
}

func TestScopeStore_handoverMalformed(t *testing.T) {
	t.Parallel()

	tests := map[string]map[string]string{
		"no token":        {lease.EnvStore: "file:///x", lease.EnvHolder: "run-1"},
		"no store":        {lease.EnvHolder: "run-1", lease.EnvToken: "3"},
		"no holder":       {lease.EnvStore: "file:///x", lease.EnvToken: "3"},
		"token not a num": {lease.EnvStore: "file:///x", lease.EnvHolder: "run-1", lease.EnvToken: "three"},
		"token zero":      {lease.EnvStore: "file:///x", lease.EnvHolder: "run-1", lease.EnvToken: "0"},
	}
	for name, vars := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var opened atomic.Int32
			s := newTestScopeStore(vars)
			s.open = func(raw, dir string) (store.Store, string, error) {
				opened.Add(1)
				return storeurl.Open(raw, dir)
			}

			diags := s.put(context.Background(), testKey, testRecord)

			detail := wantOneError(t, diags, "Invalid Lease Hand-Over", "INTERNAL: ", nil)
			for _, want := range []string{lease.EnvStore, lease.EnvHolder, lease.EnvToken, "incomplete lease hand-over"} {
				if !strings.Contains(detail, want) {
					t.Errorf("detail does not contain %q:\n%s", want, detail)
				}
			}
			// Never a fall-back to a lease of its own.
			if n := opened.Load(); n != 0 {
				t.Errorf("a store was opened %d times", n)
			}
		})
	}
}

func TestScopeStore_source(t *testing.T) {
	t.Parallel()
	unknown := errors.New("not known")

	tests := map[string]struct {
		url        string
		urlErr     error
		vars       map[string]string
		wantRaw    string
		wantSource string
		wantErr    error
	}{
		"attribute wins": {
			url: "file:///a", vars: map[string]string{storeurl.EnvVar: "file:///b"},
			wantRaw: "file:///a", wantSource: "the provider's store attribute",
		},
		"environment": {
			vars:    map[string]string{storeurl.EnvVar: "file:///b"},
			wantRaw: "file:///b", wantSource: storeurl.EnvVar,
		},
		"default in the working directory": {
			wantSource: "the default, .sponson/ in the working directory",
		},
		"unknown attribute": {
			urlErr: unknown, vars: map[string]string{storeurl.EnvVar: "file:///b"},
			wantErr: unknown,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newScopeStore(env(tt.vars), nil, nil, "/w")
			s.url, s.urlErr = tt.url, tt.urlErr

			raw, source, err := s.source()

			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("source error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff([2]string{tt.wantRaw, tt.wantSource}, [2]string{raw, source}); diff != "" {
				t.Errorf("source (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScopeStore_opensInWorkDir shows that every store is opened in the
// configuration directory, where the embedded default lives.
func TestScopeStore_opensInWorkDir(t *testing.T) {
	t.Parallel()
	_, url := testFileStore(t)
	run := store.Lease{Key: testKey, Holder: "run-1", Token: 1}

	tests := map[string]struct {
		vars    map[string]string
		url     string
		wantRaw string
	}{
		"default":     {},
		"attribute":   {url: url, wantRaw: url},
		"environment": {vars: map[string]string{storeurl.EnvVar: url}, wantRaw: url},
		"hand-over":   {vars: handoverVars(url, run), url: "file:///ignored", wantRaw: url},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var gotRaw, gotDir string
			s := newScopeStore(env(tt.vars), func(raw, dir string) (store.Store, string, error) {
				gotRaw, gotDir = raw, dir
				return nil, "", errcode.New(errcode.StoreUnavailable, "not opened in this test")
			}, nil, "/config")
			s.url = tt.url

			diags := s.put(context.Background(), testKey, testRecord)

			wantOneError(t, diags, "Store Not Opened", "STORE_UNAVAILABLE: ", nil)
			if gotRaw != tt.wantRaw || gotDir != "/config" {
				t.Errorf("opened %q in %q, want %q in /config", gotRaw, gotDir, tt.wantRaw)
			}
		})
	}
}

func TestScopeStore_defaultStore(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := newScopeStore(env(nil), nil, nil, work)

	if diags := s.put(context.Background(), testKey, testRecord); len(diags) > 0 {
		t.Fatalf("put: %v", diags)
	}
	st, err := filestore.Open(work + "/" + storeurl.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	if rec := decodeRecord(t, readRecord(t, st, testKey)); rec.Name != "pr-42" {
		t.Errorf("record in the default store = %+v", rec)
	}
}

func TestScopeStore_removeOnlyItsOwnRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	tests := map[string]struct {
		record     string
		wantRemove bool
	}{
		"its own":                  {record: `{"environment":"staging","name":"pr-42","writer":"x"}`, wantRemove: true},
		"another environment's":    {record: `{"environment":"qa","name":"pr-42","writer":"x"}`},
		"another scope's":          {record: `{"environment":"staging","name":"main","writer":"x"}`},
		"one that does not decode": {record: `{`, wantRemove: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st, url := testFileStore(t)
			l := acquire(t, st, testKey, "run-setup", time.Minute)
			if err := st.WriteRecord(ctx, l, scopeRecordName, []byte(tt.record)); err != nil {
				t.Fatal(err)
			}
			if err := st.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			s := newTestScopeStore(map[string]string{storeurl.EnvVar: url})

			// The destroyed object's environment is configured: staging.
			if diags := s.remove(ctx, testKey, "staging", "pr-42"); len(diags) > 0 {
				t.Fatalf("remove: %v", diags)
			}

			b := readRecord(t, st, testKey)
			if removed := b == nil; removed != tt.wantRemove {
				t.Errorf("record after remove = %s, want removed %v", b, tt.wantRemove)
			}
		})
	}

	t.Run("none", func(t *testing.T) {
		t.Parallel()
		_, url := testFileStore(t)
		s := newTestScopeStore(map[string]string{storeurl.EnvVar: url})

		if diags := s.remove(ctx, testKey, "preview", "pr-42"); len(diags) > 0 {
			t.Fatalf("remove: %v", diags)
		}
	})
}

// releaseFailingStore refuses every Release, as an unreachable store would.
type releaseFailingStore struct{ store.Store }

func (releaseFailingStore) Release(context.Context, store.Lease) error {
	return errcode.New(errcode.StoreUnavailable, "store unreachable")
}

func TestScopeStore_releaseWarning(t *testing.T) {
	t.Parallel()
	st, url := testFileStore(t)
	s := newTestScopeStore(map[string]string{storeurl.EnvVar: url})
	s.open = func(raw, dir string) (store.Store, string, error) {
		st, u, err := storeurl.Open(raw, dir)
		return releaseFailingStore{st}, u, err
	}

	diags := s.put(context.Background(), testKey, testRecord)

	if diags.HasError() || len(diags) != 1 || diags[0].Summary() != "Scope Lease Not Released" {
		t.Fatalf("diagnostics = %v, want one warning", diags)
	}
	if !strings.Contains(diags[0].Detail(), "store unreachable") {
		t.Errorf("the warning does not carry Release's warning:\n%s", diags[0].Detail())
	}
	if rec := decodeRecord(t, readRecord(t, st, testKey)); rec.Name != "pr-42" {
		t.Errorf("record = %+v, want written", rec)
	}
}

// TestScopeStore_openFails names a store of a scheme sponson has no
// backend for (swift://), so that opening it fails before any network.
func TestScopeStore_openFails(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		url      string
		vars     map[string]string
		want     []string
		wantNone string
	}{
		"environment": {
			vars: map[string]string{storeurl.EnvVar: "swift://bucket/sponson"},
			want: []string{`"swift://bucket/sponson"`, "from " + storeurl.EnvVar},
		},
		"attribute, credentials redacted": {
			url:      "swift://sponson:hunter2@bucket/sponson",
			want:     []string{"swift://sponson", "from the provider's store attribute"},
			wantNone: "hunter2",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTestScopeStore(tt.vars)
			s.url = tt.url

			diags := s.put(context.Background(), testKey, testRecord)

			detail := wantOneError(t, diags, "Store Not Opened", "USAGE: ", nil)
			for _, want := range tt.want {
				if !strings.Contains(detail, want) {
					t.Errorf("detail does not contain %q:\n%s", want, detail)
				}
			}
			if tt.wantNone != "" && strings.Contains(detail, tt.wantNone) {
				t.Errorf("detail shows %q:\n%s", tt.wantNone, detail)
			}
		})
	}
}

// TestScopeStore_parallelOwnLeases shows that two sponson_scope resources of
// one configuration, applied in parallel, do not refuse each other the
// scope's lease.
func TestScopeStore_parallelOwnLeases(t *testing.T) {
	t.Parallel()
	st, url := testFileStore(t)
	s := newTestScopeStore(map[string]string{storeurl.EnvVar: url})

	const n = 4
	var wg sync.WaitGroup
	results := make([]diag.Diagnostics, n)
	for i := range n {
		wg.Go(func() { results[i] = s.put(context.Background(), testKey, testRecord) })
	}
	wg.Wait()

	for i, diags := range results {
		if len(diags) > 0 {
			t.Errorf("put %d: %v", i, diags)
		}
	}
	if l := readLease(t, st, testKey); l.Holder != "" || l.Token != n {
		t.Errorf("lease = %+v, want released with token %d", l, n)
	}
}

func TestNewHolderID(t *testing.T) {
	t.Parallel()
	a, b := newHolderID(), newHolderID()
	if !ownHolderPat.MatchString(a) || a == b {
		t.Errorf("newHolderID = %q, %q; want two different %s", a, b, ownHolderPat)
	}
}

func TestWriteErrorDiag(t *testing.T) {
	t.Parallel()
	lost := fmt.Errorf("%w: preview/pr-42: the lease is now run-other's with token 2", store.ErrLeaseLost)
	unavailable := errcode.New(errcode.StoreUnavailable, "disk full")

	tests := map[string]struct {
		err         error
		wantSummary string
		wantPrefix  string
		wantDetail  string
	}{
		"lease lost": {
			err: lost, wantSummary: "Lease Lost", wantPrefix: "LOCK_LOST: ",
			wantDetail: "this run lost its lease of preview/pr-42",
		},
		"lease lost, wrapped in a code": {
			err: errcode.Wrap(errcode.Internal, lost, "writing"), wantSummary: "Lease Lost", wantPrefix: "LOCK_LOST: ",
			wantDetail: "nothing was written",
		},
		"coded": {
			err: unavailable, wantSummary: "Scope Record Not Written", wantPrefix: "STORE_UNAVAILABLE: ",
			wantDetail: errcode.Lookup(errcode.StoreUnavailable).Hint,
		},
		"uncoded": {
			err: errors.New("boom"), wantSummary: "Scope Record Not Written", wantPrefix: "INTERNAL: ",
			wantDetail: "could not write the scope record of preview/pr-42",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			d := writeErrorDiag(testKey, tt.err)

			detail := wantOneError(t, diag.Diagnostics{d}, tt.wantSummary, tt.wantPrefix, tt.err)
			if !strings.Contains(detail, tt.wantDetail) {
				t.Errorf("detail does not contain %q:\n%s", tt.wantDetail, detail)
			}
		})
	}
}

func TestAcquireErrorDiag(t *testing.T) {
	t.Parallel()
	expires := time.Date(2026, 3, 1, 12, 15, 0, 0, time.UTC)
	held := errcode.New(errcode.LockHeld, "scope preview/pr-42 is leased by run run-7 until %s", expires.Format(time.RFC3339)).
		With("holder", "run-7").With("expiresAt", expires)

	tests := map[string]struct {
		err         error
		wantSummary string
		wantPrefix  string
		wantDetail  []string
	}{
		"held": {
			err: held, wantSummary: "Scope Leased By Another Run", wantPrefix: "LOCK_HELD: ",
			wantDetail: []string{"scope preview/pr-42 is leased by run run-7 until 2026-03-01T12:15:00Z", "sponson apply --wait"},
		},
		"held, no details": {
			err: errcode.New(errcode.LockHeld, "held"), wantSummary: "Scope Leased By Another Run", wantPrefix: "LOCK_HELD: ",
			wantDetail: []string{"is leased by another run, so"},
		},
		"store failed": {
			err: errcode.New(errcode.StorePermission, "permission denied"), wantSummary: "Scope Lease Not Acquired",
			wantPrefix: "STORE_PERMISSION: ", wantDetail: []string{"could not take the lease of preview/pr-42"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			d := acquireErrorDiag(testKey, tt.err)

			detail := wantOneError(t, diag.Diagnostics{d}, tt.wantSummary, tt.wantPrefix, tt.err)
			for _, want := range tt.wantDetail {
				if !strings.Contains(detail, want) {
					t.Errorf("detail does not contain %q:\n%s", want, detail)
				}
			}
		})
	}
}
