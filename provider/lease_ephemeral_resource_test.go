package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/echoprovider"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// testParent is the object the tests lease: a fixture list, named the way
// the parents policy names it.
const testParent = "fixture|list=allow-urls"

var (
	testParentKey  = store.Key{Environment: "preview", Scope: ownership.ParentLeaseScope(testParent)}
	leaseHolderPat = regexp.MustCompile(`^lease-[0-9a-f]{8}$`)
)

// newTestLeaseManager is a leaseManager over the real file store with the
// holder lease-test and a fast poll; nothing is handed over unless vars
// says so.
func newTestLeaseManager(vars map[string]string) *leaseManager {
	m := newLeaseManager(newTestScopeStore(vars))
	m.newHolder = func() string { return "lease-test" }
	m.poll = 20 * time.Millisecond
	return m
}

// testLeaseOptions is a lease on testParent that does not wait.
var testLeaseOptions = leaseOptions{name: testParent, ttl: 30 * time.Second, waitTimeout: time.Minute}

func TestLeaseKey(t *testing.T) {
	t.Parallel()
	// Pinned: the wrapper and the provider of other versions must agree.
	if testParentKey.Scope != "_parent-7b5a2444ab63d4a59805682a70a60636" {
		t.Errorf("scope of %q = %q", testParent, testParentKey.Scope)
	}
	if err := runctx.ValidName("scope", testParentKey.Scope); err != nil {
		t.Error(err)
	}
	if a, b := newLeaseHolderID(), newLeaseHolderID(); !leaseHolderPat.MatchString(a) || a == b {
		t.Error("newLeaseHolderID does not give new lease-<8 hex> names")
	}
}

func TestLeaseManager_acquireRenewRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := testFileStore(t)
	m := newTestLeaseManager(map[string]string{storeurl.EnvVar: url})

	before := time.Now()
	s, diags := m.acquire(ctx, githubContext, testLeaseOptions)
	if len(diags) > 0 {
		t.Fatalf("acquire: %v", diags)
	}
	if s.key() != testParentKey || s.Holder != "lease-test" || s.Token != 1 || s.Store != url || s.Joined {
		t.Errorf("acquired %+v", s)
	}
	if next := s.nextRenewal(); next.Before(before.Add(10*time.Second)) || next.After(time.Now().Add(10*time.Second)) {
		t.Errorf("next renewal at %s, want TTL/3 = 10s after the grant was sent", next)
	}
	if l := readLease(t, st, testParentKey); l.Holder != "lease-test" || l.Token != 1 {
		t.Fatalf("lease after acquire = %+v", l)
	}

	time.Sleep(5 * time.Millisecond)
	sent := time.Now()
	renewed, renewAt, diags := m.renew(ctx, s)
	if len(diags) > 0 {
		t.Fatalf("renew: %v", diags)
	}
	if !renewed.ExpiresAt.After(s.ExpiresAt) || !renewed.ValidUntil.After(s.ValidUntil) {
		t.Errorf("renewal did not extend the lease: %+v -> %+v", s, renewed)
	}
	// Bracketed by the times before and after the call, however long it took.
	if !renewAt.Equal(renewed.nextRenewal()) || renewAt.Before(sent.Add(10*time.Second)) || renewAt.After(time.Now().Add(10*time.Second)) {
		t.Errorf("renew at %s, want TTL/3 = 10s after the renewal was sent (%s)", renewAt, sent)
	}
	if l := readLease(t, st, testParentKey); !l.ExpiresAt.Equal(renewed.ExpiresAt) {
		t.Errorf("store expiry %s, want %s", l.ExpiresAt, renewed.ExpiresAt)
	}

	if diags := m.release(ctx, renewed); len(diags) > 0 {
		t.Fatalf("release: %v", diags)
	}
	if l := readLease(t, st, testParentKey); l.Holder != "" || l.Token != 1 {
		t.Errorf("lease after release = %+v, want free with token 1", l)
	}
}

func TestLeaseManager_held(t *testing.T) {
	t.Parallel()
	st, url := testFileStore(t)
	other := acquire(t, st, testParentKey, "run-other", 5*time.Minute)
	m := newTestLeaseManager(map[string]string{storeurl.EnvVar: url})

	_, diags := m.acquire(context.Background(), githubContext, testLeaseOptions)

	detail := wantOneError(t, diags, "Lease Held By Another Run", "LOCK_HELD: ", nil)
	for _, want := range []string{`"` + testParent + `"`, testParentKey.String(), "run-other",
		other.ExpiresAt.UTC().Format(time.RFC3339), "wait = true"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail does not contain %q:\n%s", want, detail)
		}
	}
	if l := readLease(t, st, testParentKey); l.Holder != "run-other" || l.Token != other.Token {
		t.Errorf("lease = %+v, want run-other's untouched", l)
	}
}

func TestLeaseManager_wait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("released", func(t *testing.T) {
		t.Parallel()
		st, url := testFileStore(t)
		other := acquire(t, st, testParentKey, "run-other", time.Minute)
		m := newTestLeaseManager(map[string]string{storeurl.EnvVar: url})
		go func() {
			time.Sleep(300 * time.Millisecond)
			_ = st.Release(ctx, other)
		}()
		opts := testLeaseOptions
		opts.wait = true

		start := time.Now()
		s, diags := m.acquire(ctx, githubContext, opts)

		if len(diags) > 0 {
			t.Fatalf("acquire: %v", diags)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Errorf("acquired after %s, before the holder released", waited)
		}
		if s.Token != other.Token+1 {
			t.Errorf("token = %d, want %d", s.Token, other.Token+1)
		}
	})
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		st, url := testFileStore(t)
		acquire(t, st, testParentKey, "run-dead", 200*time.Millisecond)
		m := newTestLeaseManager(map[string]string{storeurl.EnvVar: url})
		opts := testLeaseOptions
		opts.wait = true

		s, diags := m.acquire(ctx, githubContext, opts)

		if len(diags) > 0 || s.Token != 2 {
			t.Fatalf("acquire = %+v, %v; want the expired lease taken over", s, diags)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		st, url := testFileStore(t)
		acquire(t, st, testParentKey, "run-other", time.Minute)
		m := newTestLeaseManager(map[string]string{storeurl.EnvVar: url})
		opts := testLeaseOptions
		opts.wait, opts.waitTimeout = true, 100*time.Millisecond

		_, diags := m.acquire(ctx, githubContext, opts)

		detail := wantOneError(t, diags, "Lease Wait Timed Out", "WAIT_TIMEOUT: ", nil)
		if !strings.Contains(detail, "run-other") || !strings.Contains(detail, "wait_timeout_seconds") {
			t.Errorf("detail:\n%s", detail)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		t.Parallel()
		st, url := testFileStore(t)
		acquire(t, st, testParentKey, "run-other", time.Minute)
		m := newTestLeaseManager(map[string]string{storeurl.EnvVar: url})
		opts := testLeaseOptions
		opts.wait = true
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()

		_, diags := m.acquire(ctx, githubContext, opts)

		wantOneError(t, diags, "Lease Wait Interrupted", "INTERRUPTED: ", nil)
	})
}

// TestLeaseManager_lost takes the lease over behind the holder's back: its
// renewal and its release both report LOCK_LOST and leave the new holder's
// lease alone.
func TestLeaseManager_lost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := testFileStore(t)
	m := newTestLeaseManager(map[string]string{storeurl.EnvVar: url})
	s, diags := m.acquire(ctx, githubContext, testLeaseOptions)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if err := st.Release(ctx, s.lease()); err != nil { // as if it expired
		t.Fatal(err)
	}
	other := acquire(t, st, testParentKey, "run-other", time.Minute)

	_, renewAt, diags := m.renew(ctx, s)
	detail := wantOneError(t, diags, "Lease Lost", "LOCK_LOST: ", nil)
	if !strings.Contains(detail, "took it over") || !renewAt.IsZero() {
		t.Errorf("renew at %s, detail:\n%s", renewAt, detail)
	}

	diags = m.release(ctx, s)
	wantOneError(t, diags, "Lease Lost", "LOCK_LOST: ", nil)

	if l := readLease(t, st, testParentKey); l.Holder != "run-other" || l.Token != other.Token {
		t.Errorf("lease = %+v, want run-other's untouched", l)
	}
}

// failingStore fails Renew and Release the way an unreachable store does.
type failingStore struct{ store.Store }

func (failingStore) Renew(context.Context, store.Lease, time.Duration) (store.Lease, error) {
	return store.Lease{}, errcode.New(errcode.StoreUnavailable, "store unreachable")
}

func (failingStore) Release(context.Context, store.Lease) error {
	return errcode.New(errcode.StoreUnavailable, "store unreachable")
}

func TestLeaseManager_storeFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := testFileStore(t)
	m := newTestLeaseManager(map[string]string{storeurl.EnvVar: url})
	s, diags := m.acquire(ctx, githubContext, testLeaseOptions)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	m.records.open = func(raw, dir string) (store.Store, string, error) {
		st, u, err := storeurl.Open(raw, dir)
		return failingStore{st}, u, err
	}

	t.Run("renewal retried sooner", func(t *testing.T) {
		now := s.ValidUntil.Add(-s.TTL + s.TTL/3) // on schedule
		m.now = func() time.Time { return now }

		got, renewAt, diags := m.renew(ctx, s)

		if diags.HasError() || len(diags) != 1 || diags[0].Summary() != "Lease Not Renewed" {
			t.Fatalf("diagnostics = %v, want one warning", diags)
		}
		if want := now.Add(3 * time.Second); !renewAt.Equal(want) {
			t.Errorf("retry at %s, want TTL/10 later, %s", renewAt, want)
		}
		if got.ValidUntil != s.ValidUntil {
			t.Errorf("a failed renewal moved the deadline: %s -> %s", s.ValidUntil, got.ValidUntil)
		}
	})
	t.Run("renewal given up at the own deadline", func(t *testing.T) {
		now := s.selfStop().Add(-time.Second)
		m.now = func() time.Time { return now }

		_, renewAt, diags := m.renew(ctx, s)

		detail := wantOneError(t, diags, "Lease Lost", "LOCK_LOST: ", nil)
		if !strings.Contains(detail, "did not renew it in time") || !renewAt.IsZero() {
			t.Errorf("renew at %s, detail:\n%s", renewAt, detail)
		}
	})
	t.Run("release warns", func(t *testing.T) {
		diags := m.release(ctx, s)

		if diags.HasError() || len(diags) != 1 || diags[0].Summary() != "Lease Not Released" {
			t.Fatalf("diagnostics = %v, want one warning", diags)
		}
		if !strings.Contains(diags[0].Detail(), "store unreachable") {
			t.Errorf("the warning does not carry the store's error:\n%s", diags[0].Detail())
		}
	})
	if l := readLease(t, st, testParentKey); l.Holder != "lease-test" {
		t.Errorf("lease = %+v", l)
	}
}

// TestLeaseManager_handover is sponson_lease under the wrapper: the run's
// store, a holder of its own, and the run's own lease joined.
func TestLeaseManager_handover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("the run's store", func(t *testing.T) {
		t.Parallel()
		runStore, runURL := testFileStore(t)
		envStore, envURL := testFileStore(t)
		run := acquire(t, runStore, testKey, "run-test", time.Minute)
		vars := handoverVars(runURL, run)
		vars[storeurl.EnvVar] = envURL // ignored: the run's store wins
		m := newTestLeaseManager(vars)

		s, diags := m.acquire(ctx, githubContext, testLeaseOptions)

		if len(diags) > 0 {
			t.Fatal(diags)
		}
		if s.Store != runURL || s.Holder != "lease-test" || s.Joined {
			t.Errorf("acquired %+v, want lease-test's lease in the run's store", s)
		}
		if l := readLease(t, runStore, testParentKey); l.Holder != "lease-test" {
			t.Errorf("lease in the run's store = %+v", l)
		}
		if l := readLease(t, envStore, testParentKey); l.Token != 0 {
			t.Errorf("lease in SPONSON_STORE = %+v, want none", l)
		}
		if l := readLease(t, runStore, testKey); l.Holder != "run-test" || l.Token != run.Token {
			t.Errorf("the run's scope lease = %+v, want untouched", l)
		}
	})
	t.Run("the run's own parent lease is joined", func(t *testing.T) {
		t.Parallel()
		runStore, runURL := testFileStore(t)
		run := acquire(t, runStore, testKey, "run-test", time.Minute)
		parent := acquire(t, runStore, testParentKey, "run-test", time.Minute)
		m := newTestLeaseManager(handoverVars(runURL, run))

		s, diags := m.acquire(ctx, githubContext, testLeaseOptions)
		if len(diags) > 0 {
			t.Fatal(diags)
		}
		if !s.Joined || s.Holder != "run-test" || s.Token != parent.Token {
			t.Fatalf("acquired %+v, want the run's lease joined", s)
		}
		if _, _, diags := m.renew(ctx, s); len(diags) > 0 {
			t.Errorf("renew: %v", diags)
		}
		if diags := m.release(ctx, s); len(diags) > 0 {
			t.Errorf("release: %v", diags)
		}
		if l := readLease(t, runStore, testParentKey); l.Holder != "run-test" || l.Token != parent.Token {
			t.Errorf("lease = %+v, want still the run's: the run releases it", l)
		}

		if err := runStore.Release(ctx, parent); err != nil {
			t.Fatal(err)
		}
		_, _, diags = m.renew(ctx, s)
		wantOneError(t, diags, "Lease Lost", "LOCK_LOST: ", nil)
	})
	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		_, url := testFileStore(t)
		m := newTestLeaseManager(map[string]string{"SPONSON_RUN_STORE": url, "SPONSON_RUN_HOLDER": "run-test"})

		_, diags := m.acquire(ctx, githubContext, testLeaseOptions)

		wantOneError(t, diags, "Invalid Lease Hand-Over", "INTERNAL: ", nil)
	})
}

func TestLeaseManager_storeNotOpened(t *testing.T) {
	t.Parallel()
	m := newTestLeaseManager(map[string]string{storeurl.EnvVar: "swift://bucket/sponson"})

	_, diags := m.acquire(context.Background(), githubContext, testLeaseOptions)

	detail := wantOneError(t, diags, "Store Not Opened", "USAGE: ", nil)
	if !strings.Contains(detail, storeurl.EnvVar) || !strings.Contains(detail, testParent) {
		t.Errorf("detail:\n%s", detail)
	}
}

// leaseProtocol serves a provider over the plugin protocol, configured, as
// the engine sees it: the only way to carry the private data from Open to
// Renew and Close the way the engine does.
type leaseProtocol struct {
	t   *testing.T
	srv tfprotov6.ProviderServer
	typ tftypes.Type
}

func newLeaseProtocol(t *testing.T, vars map[string]string) *leaseProtocol {
	t.Helper()
	ctx := context.Background()
	p := &sponsonProvider{version: "test", getenv: env(vars), workDir: t.TempDir(),
		resolver: resolverFunc(func(string) (runctx.Context, bool, error) { return githubContext, true, nil })}
	srv, err := providerserver.NewProtocol6WithError(p)()
	if err != nil {
		t.Fatal(err)
	}
	var presp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &presp)
	pt := presp.Schema.Type().TerraformType(ctx)
	null := tftypes.NewValue(tftypes.String, nil)
	cfg, err := tfprotov6.NewDynamicValue(pt, tftypes.NewValue(pt, map[string]tftypes.Value{"environment": null, "store": null}))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: &cfg})
	if err != nil || len(resp.Diagnostics) > 0 {
		t.Fatalf("ConfigureProvider = %v, %v", resp, err)
	}
	var eresp ephemeral.SchemaResponse
	(&leaseEphemeralResource{}).Schema(ctx, ephemeral.SchemaRequest{}, &eresp)
	return &leaseProtocol{t: t, srv: srv, typ: eresp.Schema.Type().TerraformType(ctx)}
}

// config is a sponson_lease configuration; nil values are null.
func (lp *leaseProtocol) config(name string, ttl, waitTimeout *int64, wait *bool) *tfprotov6.DynamicValue {
	lp.t.Helper()
	num := func(n *int64) tftypes.Value {
		if n == nil {
			return tftypes.NewValue(tftypes.Number, nil)
		}
		return tftypes.NewValue(tftypes.Number, *n)
	}
	b := tftypes.NewValue(tftypes.Bool, nil)
	if wait != nil {
		b = tftypes.NewValue(tftypes.Bool, *wait)
	}
	v := tftypes.NewValue(lp.typ, map[string]tftypes.Value{
		"name":                 tftypes.NewValue(tftypes.String, name),
		"ttl_seconds":          num(ttl),
		"wait":                 b,
		"wait_timeout_seconds": num(waitTimeout),
		"key":                  tftypes.NewValue(tftypes.String, nil),
		"holder":               tftypes.NewValue(tftypes.String, nil),
		"token":                tftypes.NewValue(tftypes.Number, nil),
		"expires_at":           tftypes.NewValue(tftypes.String, nil),
	})
	dv, err := tfprotov6.NewDynamicValue(lp.typ, v)
	if err != nil {
		lp.t.Fatal(err)
	}
	return &dv
}

// protocolDiags turns protocol diagnostics into a string for messages and
// matching.
func protocolDiags(diags []*tfprotov6.Diagnostic) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "[%s] %s: %s\n", d.Severity, d.Summary, d.Detail)
	}
	return b.String()
}

func TestLeaseEphemeralResource_protocol(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, url := testFileStore(t)
	lp := newLeaseProtocol(t, map[string]string{storeurl.EnvVar: url})
	ttl := int64(30)

	schema, err := lp.srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || schema.EphemeralResourceSchemas["sponson_lease"] == nil {
		t.Fatalf("the provider does not serve sponson_lease: %v", err)
	}

	sent := time.Now()
	open, err := lp.srv.OpenEphemeralResource(ctx, &tfprotov6.OpenEphemeralResourceRequest{
		TypeName: "sponson_lease", Config: lp.config(testParent, &ttl, nil, nil)})
	if err != nil || len(open.Diagnostics) > 0 {
		t.Fatalf("Open = %v\n%s", err, protocolDiags(open.Diagnostics))
	}
	result, err := open.Result.Unmarshal(lp.typ)
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]tftypes.Value
	if err := result.As(&vals); err != nil {
		t.Fatal(err)
	}
	var holder, key, expires string
	_ = vals["holder"].As(&holder)
	_ = vals["key"].As(&key)
	_ = vals["expires_at"].As(&expires)
	if !leaseHolderPat.MatchString(holder) || key != testParentKey.String() || expires == "" {
		t.Errorf("result holder %q key %q expires_at %q", holder, key, expires)
	}
	if l := readLease(t, st, testParentKey); l.Holder != holder || l.Token != 1 {
		t.Fatalf("lease after Open = %+v, want %s's", l, holder)
	}
	if open.RenewAt.Before(sent.Add(10*time.Second)) || open.RenewAt.After(time.Now().Add(10*time.Second)) {
		t.Errorf("Open renews at %s, want TTL/3 = 10s after %s", open.RenewAt, sent)
	}
	if strings.Contains(string(open.Private), "\"ttl\":0") || len(open.Private) == 0 {
		t.Errorf("private data %s", open.Private)
	}

	// Renew and Close get the private data only.
	time.Sleep(5 * time.Millisecond)
	renew, err := lp.srv.RenewEphemeralResource(ctx, &tfprotov6.RenewEphemeralResourceRequest{
		TypeName: "sponson_lease", Private: open.Private})
	if err != nil || len(renew.Diagnostics) > 0 {
		t.Fatalf("Renew = %v\n%s", err, protocolDiags(renew.Diagnostics))
	}
	if !renew.RenewAt.After(open.RenewAt) {
		t.Errorf("Renew renews at %s, not after %s", renew.RenewAt, open.RenewAt)
	}
	l := readLease(t, st, testParentKey)
	if l.Holder != holder || !l.ExpiresAt.After(mustParseTime(t, expires)) {
		t.Errorf("lease after Renew = %+v, want extended past %s", l, expires)
	}

	closed, err := lp.srv.CloseEphemeralResource(ctx, &tfprotov6.CloseEphemeralResourceRequest{
		TypeName: "sponson_lease", Private: renew.Private})
	if err != nil || len(closed.Diagnostics) > 0 {
		t.Fatalf("Close = %v\n%s", err, protocolDiags(closed.Diagnostics))
	}
	if l := readLease(t, st, testParentKey); l.Holder != "" || l.Token != 1 {
		t.Errorf("lease after Close = %+v, want released", l)
	}

	t.Run("unknown name", func(t *testing.T) {
		cfg := lp.config(testParent, nil, nil, nil)
		v, err := cfg.Unmarshal(lp.typ)
		if err != nil {
			t.Fatal(err)
		}
		var vals map[string]tftypes.Value
		if err := v.As(&vals); err != nil {
			t.Fatal(err)
		}
		vals["name"] = tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
		dv, err := tfprotov6.NewDynamicValue(lp.typ, tftypes.NewValue(lp.typ, vals))
		if err != nil {
			t.Fatal(err)
		}

		open, err := lp.srv.OpenEphemeralResource(ctx, &tfprotov6.OpenEphemeralResourceRequest{TypeName: "sponson_lease", Config: &dv})

		if err != nil || len(open.Diagnostics) > 0 || !open.RenewAt.IsZero() {
			t.Fatalf("Open = %v, renew at %s\n%s", err, open.RenewAt, protocolDiags(open.Diagnostics))
		}
		if l := readLease(t, st, testParentKey); l.Token != 1 {
			t.Errorf("lease = %+v, want no new grant", l)
		}
	})
	t.Run("no private data", func(t *testing.T) {
		renew, err := lp.srv.RenewEphemeralResource(ctx, &tfprotov6.RenewEphemeralResourceRequest{TypeName: "sponson_lease"})
		if err != nil || !strings.Contains(protocolDiags(renew.Diagnostics), "Lease Not Found") {
			t.Errorf("Renew without private data = %v\n%s", err, protocolDiags(renew.Diagnostics))
		}
	})
}

func TestLeaseEphemeralResource_validate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lp := newLeaseProtocol(t, nil)
	n := func(v int64) *int64 { return &v }
	yes, no := true, false

	tests := map[string]struct {
		config *tfprotov6.DynamicValue
		want   string // "" for valid
	}{
		"minimal":                   {config: lp.config(testParent, nil, nil, nil)},
		"all set":                   {config: lp.config(testParent, n(60), n(30), &yes)},
		"blank name":                {config: lp.config(" ", nil, nil, nil), want: "Empty Value"},
		"ttl too short":             {config: lp.config(testParent, n(2), nil, nil), want: "Value Out Of Range"},
		"timeout without wait":      {config: lp.config(testParent, nil, n(30), nil), want: "Wait Timeout Without Wait"},
		"timeout with wait = false": {config: lp.config(testParent, nil, n(30), &no), want: "Wait Timeout Without Wait"},
		"timeout zero":              {config: lp.config(testParent, nil, n(0), &yes), want: "Value Out Of Range"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			resp, err := lp.srv.ValidateEphemeralResourceConfig(ctx, &tfprotov6.ValidateEphemeralResourceConfigRequest{
				TypeName: "sponson_lease", Config: tt.config})
			if err != nil {
				t.Fatal(err)
			}
			got := protocolDiags(resp.Diagnostics)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("diagnostics = %q, want %q", got, tt.want)
			}
		})
	}
}

func mustParseTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// The acceptance tests below set variables with t.Setenv, so none is
// parallel. The lease is observed through the echo provider, the documented
// way to see an ephemeral resource's result (it never reaches a plan or a
// state otherwise).

// testAccLeaseFactories serves the sponson provider, detecting in dir (""
// for this package) when no context is handed over, and the echo provider.
func testAccLeaseFactories(dir ...string) map[string]func() (tfprotov6.ProviderServer, error) {
	f := testAccProviderFactories(strings.Join(dir, ""))
	f["echo"] = echoprovider.NewProviderServer()
	return f
}

func TestAccLeaseEphemeralResource_basic(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	useStore(t, dir)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccLeaseFactories(),
		Steps: []resource.TestStep{
			{
				Config: testAccLeaseConfig(testParent, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("echo.lease", tfjsonpath.New("data").AtMapKey("key"),
						knownvalue.StringExact(testParentKey.String())),
					statecheck.ExpectKnownValue("echo.lease", tfjsonpath.New("data").AtMapKey("holder"),
						knownvalue.StringRegexp(leaseHolderPat)),
					statecheck.ExpectKnownValue("echo.lease", tfjsonpath.New("data").AtMapKey("expires_at"),
						knownvalue.StringRegexp(regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`))),
					// The apply's lease, and it was released when the
					// engine closed the resource.
					expectEchoedLease(dir, testParentKey, ""),
				},
			},
		},
	})
}

// TestAccLeaseEphemeralResource_heldWhileUsed runs a 2.5 s provisioner that
// uses the lease, with a TTL of 3 s: the lease must be held by the
// resource's holder throughout, renewed by the engine (it would have expired
// otherwise), and released afterwards.
func TestAccLeaseEphemeralResource_heldWhileUsed(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	useStore(t, dir)
	out := t.TempDir()
	// The file store's layout (internal/store/filestore): parent leases have
	// no stack, and live under the "_" stack segment.
	leaseFile := filepath.Join(dir, "@stacks", testParentKey.Environment, store.StackSegment(testParentKey.Stack), testParentKey.Scope, "lease.json")

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccLeaseFactories(),
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
ephemeral "sponson_lease" "list" {
  name        = %[1]q
  ttl_seconds = 3
}

resource "terraform_data" "slow" {
  provisioner "local-exec" {
    command = "printf %%s \"$HOLDER\" > %[3]s/holder; cat %[2]s > %[3]s/first.json; sleep 2.5; cat %[2]s > %[3]s/last.json"
    environment = {
      HOLDER = ephemeral.sponson_lease.list.holder
    }
  }
}
`, testParent, leaseFile, out),
				Check: resource.ComposeAggregateTestCheckFunc(
					testAccCheckRenewedWhileUsed(out),
					testAccCheckLeaseHolder(dir, testParentKey, ""),
				),
			},
		},
	})
}

func TestAccLeaseEphemeralResource_held(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	useStore(t, dir)
	other := testAccAcquire(t, dir, testParentKey, "run-other", 5*time.Minute)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccLeaseFactories(),
		Steps: []resource.TestStep{
			{
				Config:      testAccLeaseConfig(testParent, ""),
				ExpectError: regexp.MustCompile(`(?s)Lease Held By Another Run.*LOCK_HELD:.*fixture\|list=allow-urls.*run-other`),
			},
		},
	})

	if err := testAccCheckLease(dir, testParentKey, "run-other", other.Token)(nil); err != nil {
		t.Error(err)
	}
}

// TestAccLeaseEphemeralResource_wait queues behind a run that releases the
// lease after two seconds.
func TestAccLeaseEphemeralResource_wait(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	useStore(t, dir)
	var other store.Lease
	released := make(chan error, 1)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccLeaseFactories(),
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					other = testAccAcquire(t, dir, testParentKey, "run-other", time.Minute)
					go func() {
						time.Sleep(2 * time.Second)
						st, err := openTestStore(dir)
						if err == nil {
							err = st.Release(context.Background(), other)
						}
						released <- err
					}()
				},
				Config: testAccLeaseConfig(testParent, `
  wait                 = true
  wait_timeout_seconds = 60`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("echo.lease", tfjsonpath.New("data").AtMapKey("token"),
						knownvalue.Int64Func(func(v int64) error {
							if v <= other.Token {
								return fmt.Errorf("token %d is not after run-other's %d", v, other.Token)
							}
							return nil
						})),
					expectEchoedLease(dir, testParentKey, ""),
				},
			},
		},
	})

	if err := <-released; err != nil {
		t.Errorf("run-other's release: %v", err)
	}
}

func TestAccLeaseEphemeralResource_waitTimeout(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	useStore(t, dir)
	testAccAcquire(t, dir, testParentKey, "run-other", 5*time.Minute)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccLeaseFactories(),
		Steps: []resource.TestStep{
			{
				Config: testAccLeaseConfig(testParent, `
  wait                 = true
  wait_timeout_seconds = 1`),
				ExpectError: regexp.MustCompile(`(?s)Lease Wait Timed Out.*WAIT_TIMEOUT:.*run-other`),
			},
		},
	})
}

// TestAccLeaseEphemeralResource_underWrapper takes the lease in the run's
// store with a holder of its own.
func TestAccLeaseEphemeralResource_underWrapper(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	envDir := t.TempDir()
	useStore(t, envDir) // ignored: the run's store is handed over
	run := testAccAcquire(t, dir, testKey, "run-test", 5*time.Minute)
	handOverLease(t, dir, run)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccLeaseFactories(),
		Steps: []resource.TestStep{
			{
				Config: testAccLeaseConfig(testParent, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("echo.lease", tfjsonpath.New("data").AtMapKey("holder"),
						knownvalue.StringRegexp(leaseHolderPat)),
					expectEchoedLease(dir, testParentKey, ""),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					testAccCheckNoLease(envDir, testParentKey),
					testAccCheckLease(dir, testKey, "run-test", run.Token),
				),
			},
		},
	})
}

// TestAccLeaseEphemeralResource_joinsRunLease is a run that took the
// object's lease itself, for its parents policy: the resource joins it and
// leaves it to the run, instead of waiting for its own run.
func TestAccLeaseEphemeralResource_joinsRunLease(t *testing.T) {
	isolateContext(t)
	handOver(t, githubContext)
	dir := t.TempDir()
	useStore(t, t.TempDir())
	run := testAccAcquire(t, dir, testKey, "run-test", 5*time.Minute)
	parent := testAccAcquire(t, dir, testParentKey, "run-test", 5*time.Minute)
	handOverLease(t, dir, run)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccLeaseFactories(),
		Steps: []resource.TestStep{
			{
				Config: testAccLeaseConfig(testParent, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("echo.lease", tfjsonpath.New("data").AtMapKey("holder"),
						knownvalue.StringExact("run-test")),
					expectEchoedLease(dir, testParentKey, "run-test"),
				},
				Check: testAccCheckLease(dir, testParentKey, "run-test", parent.Token),
			},
		},
	})
}

func TestAccLeaseEphemeralResource_noContext(t *testing.T) {
	isolateContext(t)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccLeaseFactories(t.TempDir()),
		Steps: []resource.TestStep{
			{
				Config:      testAccLeaseConfig(testParent, ""),
				ExpectError: regexp.MustCompile(`(?s)Run Context Not Decided.*sponson_lease`),
			},
		},
	})
}

// testAccLeaseConfig is a sponson_lease on name, with extra lines in its
// block, echoed into echo.lease.
func testAccLeaseConfig(name, extra string) string {
	return fmt.Sprintf(`
ephemeral "sponson_lease" "list" {
  name = %[1]q%[2]s
}

provider "echo" {
  data = ephemeral.sponson_lease.list
}

resource "echo" "lease" {}
`, name, extra)
}

// expectEchoedLease checks the store's lease of key against the lease
// echo.lease shows: the same token (the apply's grant, no later one), and
// holder (usually "", released).
func expectEchoedLease(dir string, key store.Key, holder string) statecheck.StateCheck {
	return echoedLeaseCheck{dir: dir, key: key, holder: holder}
}

type echoedLeaseCheck struct {
	dir    string
	key    store.Key
	holder string
}

func (c echoedLeaseCheck) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	if req.State == nil || req.State.Values == nil || req.State.Values.RootModule == nil {
		resp.Error = errors.New("no state")
		return
	}
	for _, r := range req.State.Values.RootModule.Resources {
		if r.Address != "echo.lease" {
			continue
		}
		data, _ := r.AttributeValues["data"].(map[string]any)
		token, err := data["token"].(json.Number).Int64()
		if err != nil {
			resp.Error = fmt.Errorf("echo.lease token %v: %w", data["token"], err)
			return
		}
		resp.Error = testAccCheckLease(c.dir, c.key, c.holder, token)(nil)
		return
	}
	resp.Error = errors.New("no echo.lease in the state")
}

// testAccCheckLeaseHolder checks only the holder of key's lease.
func testAccCheckLeaseHolder(dir string, key store.Key, holder string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		st, err := openTestStore(dir)
		if err != nil {
			return err
		}
		l, err := st.ReadLease(context.Background(), key)
		if err != nil {
			return err
		}
		if l.Holder != holder {
			return fmt.Errorf("lease of %s held by %q, want %q", key, l.Holder, holder)
		}
		return nil
	}
}

// testAccCheckRenewedWhileUsed reads what the provisioner saw of the lease
// at its start and at its end.
func testAccCheckRenewedWhileUsed(out string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		holder, err := os.ReadFile(filepath.Join(out, "holder"))
		if err != nil {
			return err
		}
		if !leaseHolderPat.Match(holder) {
			return fmt.Errorf("the provisioner got holder %q", holder)
		}
		var first, last store.LeaseInfo
		for name, l := range map[string]*store.LeaseInfo{"first.json": &first, "last.json": &last} {
			b, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, l); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if l.Holder != string(holder) {
				return fmt.Errorf("%s: lease held by %q while %q used it: %s", name, l.Holder, holder, b)
			}
		}
		if first.Token != last.Token {
			return fmt.Errorf("token changed while used: %d -> %d", first.Token, last.Token)
		}
		// Without renewals the lease would have expired 3 s after its
		// grant, before the provisioner's last look at 2.5 s plus the
		// engine's own time.
		if !last.ExpiresAt.After(first.ExpiresAt) || !last.ExpiresAt.After(last.AcquiredAt.Add(3*time.Second)) {
			return fmt.Errorf("not renewed while used: first %+v, last %+v", first, last)
		}
		return nil
	}
}
