package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

var (
	_ ephemeral.EphemeralResourceWithConfigure        = (*leaseEphemeralResource)(nil)
	_ ephemeral.EphemeralResourceWithRenew            = (*leaseEphemeralResource)(nil)
	_ ephemeral.EphemeralResourceWithClose            = (*leaseEphemeralResource)(nil)
	_ ephemeral.EphemeralResourceWithConfigValidators = (*leaseEphemeralResource)(nil)
)

const (
	// defaultLeaseTTLSeconds is the TTL of a sponson_lease without
	// ttl_seconds. The engine renews at TTL/3, so a provider that dies
	// blocks the object for at most this long.
	defaultLeaseTTLSeconds = 120
	// minLeaseTTLSeconds keeps TTL/3, the renewal interval, at a second or
	// more.
	minLeaseTTLSeconds = 3
	maxLeaseTTLSeconds = 24 * 60 * 60
	// defaultLeaseWaitTimeout is how long wait = true waits without
	// wait_timeout_seconds: the wrapper's own default.
	defaultLeaseWaitTimeout = 10 * time.Minute
	// leasePollInterval is how often a waiting Open asks the store again.
	leasePollInterval = time.Second
	// leasePrivateKey is where Open leaves the lease for Renew and Close,
	// which receive nothing else (engine-notes §3).
	leasePrivateKey = "lease"
)

// NewLeaseEphemeralResource returns the sponson_lease ephemeral resource.
func NewLeaseEphemeralResource() ephemeral.EphemeralResource {
	return &leaseEphemeralResource{}
}

// leaseEphemeralResource is a lease on a named object, typically a parent
// object several scopes write entries of (docs/design.md §2.10 "Parent lease"). The
// engine drives it: Open acquires, Renew renews at each RenewAt it returned
// (TTL/3), Close releases after the last resource that uses it. So it uses
// the lease package's wait loop, schedule, confirmation and release, but
// not its held lease, whose background renewal would be a second pacemaker
// besides the engine's.
type leaseEphemeralResource struct {
	data *providerData
}

// leaseEphemeralResourceModel is the configuration and the result.
type leaseEphemeralResourceModel struct {
	Name               types.String `tfsdk:"name"`
	TTLSeconds         types.Int64  `tfsdk:"ttl_seconds"`
	Wait               types.Bool   `tfsdk:"wait"`
	WaitTimeoutSeconds types.Int64  `tfsdk:"wait_timeout_seconds"`
	Key                types.String `tfsdk:"key"`
	Holder             types.String `tfsdk:"holder"`
	Token              types.Int64  `tfsdk:"token"`
	ExpiresAt          types.String `tfsdk:"expires_at"`
}

func (r *leaseEphemeralResource) Metadata(_ context.Context, req ephemeral.MetadataRequest, resp *ephemeral.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_lease"
}

func (r *leaseEphemeralResource) Schema(_ context.Context, _ ephemeral.SchemaRequest, resp *ephemeral.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A lease on a named object, held while the resources that use it are applied: for " +
			"example around writes to an object several scopes write entries of, such as a project's variable " +
			"list or an allow-list of URLs. Opening it acquires the lease in the sponson store, the engine " +
			"renews it every third of its TTL, and closing it, after the last resource that uses it, releases " +
			"it. The lease is the one the `sponson` wrapper takes for a parent object named in the " +
			"`sponson_scope` `parents` policy, so configurations applied with and without the wrapper exclude " +
			"each other. The engine opens the resource during a plan too, briefly. A lease held by another " +
			"run fails with `LOCK_HELD`, unless `wait` is true. The lease is keyed by the run's environment " +
			"and the name, so it needs the run context, like `sponson_scope`. The store is the provider's " +
			"`store` attribute, else `SPONSON_STORE`, else `.sponson/` in the working directory; under the " +
			"wrapper, the run's store. A failed renewal fails the apply at its end, but does not stop " +
			"writes already under way: a lease excludes other runs, and only the store fences writes.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				MarkdownDescription: "The name of the object the lease is on. Runs that use the same name in " +
					"the same environment exclude each other. To take the lease the `sponson` wrapper takes " +
					"on a parent object, use the parent's name as the `sponson_scope` `parents` policy forms " +
					"it: `<provider type>|<attribute>=<value>[,...]` with the attributes sorted by name, for " +
					"example `vercel|project_id=prj_123`. The lease lives in the store under the scope " +
					"`_parent-` followed by 32 hexadecimal digits of the SHA-256 of the name, which no real " +
					"scope (`pr-<n>`, `main`, `branch-<name>`) can be.",
				Required:   true,
				Validators: []validator.String{notBlankValidator{}},
			},
			"ttl_seconds": schema.Int64Attribute{
				MarkdownDescription: fmt.Sprintf("How long the lease lasts without a renewal, in seconds: %d "+
					"by default, from %d to %d. The engine renews it every third of this time; if the "+
					"provider stops, other runs can take the object over after at most this long.",
					defaultLeaseTTLSeconds, minLeaseTTLSeconds, maxLeaseTTLSeconds),
				Optional:   true,
				Validators: []validator.Int64{int64RangeValidator{min: minLeaseTTLSeconds, max: maxLeaseTTLSeconds}},
			},
			"wait": schema.BoolAttribute{
				MarkdownDescription: "Whether to wait while another run holds the lease, asking the store " +
					"again every second, instead of failing with `LOCK_HELD`. It is false by default. Waiting " +
					"ends with `WAIT_TIMEOUT` after `wait_timeout_seconds`.",
				Optional: true,
			},
			"wait_timeout_seconds": schema.Int64Attribute{
				MarkdownDescription: fmt.Sprintf("How long `wait` waits for the lease, in seconds: %d by "+
					"default, from 1 to %d. It can only be set together with `wait = true`.",
					int(defaultLeaseWaitTimeout.Seconds()), maxLeaseTTLSeconds),
				Optional:   true,
				Validators: []validator.Int64{int64RangeValidator{min: 1, max: maxLeaseTTLSeconds}},
			},
			"key": schema.StringAttribute{
				MarkdownDescription: "The lease's key in the store: the run's environment and the lease's " +
					"scope joined by a slash, for example `preview/_parent-7b5a2444ab63d4a59805682a70a60636`.",
				Computed: true,
			},
			"holder": schema.StringAttribute{
				MarkdownDescription: "Who holds the lease: `lease-` followed by 8 hexadecimal digits, new for " +
					"each open. Under the wrapper, when the run itself already holds the lease on this object " +
					"(the `parents` policy names it), the run's holder: the resource then joins the run's " +
					"lease, and the run renews and releases it.",
				Computed: true,
			},
			"token": schema.Int64Attribute{
				MarkdownDescription: "The lease's fencing token. Every grant of the lease on this object gets " +
					"a larger one than the grant before.",
				Computed: true,
			},
			"expires_at": schema.StringAttribute{
				MarkdownDescription: "When the lease expires unless renewed, as granted when it was opened, " +
					"in RFC 3339 format. Renewals move the expiry in the store but not this value.",
				Computed: true,
			},
		},
	}
}

func (r *leaseEphemeralResource) ConfigValidators(_ context.Context) []ephemeral.ConfigValidator {
	return []ephemeral.ConfigValidator{waitTimeoutNeedsWait{}}
}

func (r *leaseEphemeralResource) Configure(_ context.Context, req ephemeral.ConfigureRequest, resp *ephemeral.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// Open acquires the lease, or waits for it, and leaves everything Renew and
// Close need in the private data: they receive nothing else.
func (r *leaseEphemeralResource) Open(ctx context.Context, req ephemeral.OpenRequest, resp *ephemeral.OpenResponse) {
	var data leaseEphemeralResourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &data)...)
	if resp.Diagnostics.HasError() {
		return
	}

	if data.Name.IsUnknown() || data.TTLSeconds.IsUnknown() || data.Wait.IsUnknown() || data.WaitTimeoutSeconds.IsUnknown() {
		// The engines do not open an ephemeral resource whose
		// configuration is not known yet; should one do so, take no
		// lease on a name that is not known.
		data.Key, data.Holder = types.StringUnknown(), types.StringUnknown()
		data.Token, data.ExpiresAt = types.Int64Unknown(), types.StringUnknown()
		resp.Diagnostics.Append(resp.Result.Set(ctx, &data)...)
		return
	}

	rc, diags := r.data.runContext("the sponson_lease ephemeral resource")
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	opts := leaseOptions{
		name:        data.Name.ValueString(),
		ttl:         time.Duration(defaultLeaseTTLSeconds) * time.Second,
		wait:        data.Wait.ValueBool(),
		waitTimeout: defaultLeaseWaitTimeout,
	}
	if !data.TTLSeconds.IsNull() {
		opts.ttl = time.Duration(data.TTLSeconds.ValueInt64()) * time.Second
	}
	if !data.WaitTimeoutSeconds.IsNull() {
		opts.waitTimeout = time.Duration(data.WaitTimeoutSeconds.ValueInt64()) * time.Second
	}
	m := r.manager()
	held, diags := m.acquire(ctx, rc, opts)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	data.Key = types.StringValue(held.key().String())
	data.Holder = types.StringValue(held.Holder)
	data.Token = types.Int64Value(held.Token)
	data.ExpiresAt = types.StringValue(held.ExpiresAt.UTC().Format(time.RFC3339))
	resp.Diagnostics.Append(resp.Result.Set(ctx, &data)...)
	resp.Diagnostics.Append(setLeaseState(ctx, resp.Private, held)...)
	if resp.Diagnostics.HasError() {
		// The engine will not close what failed to open.
		resp.Diagnostics.Append(m.release(ctx, held)...)
		return
	}
	resp.RenewAt = held.nextRenewal()
}

// Renew renews the lease the engine handed back in the private data; the
// engine calls it exactly at the RenewAt Open or the last Renew returned.
func (r *leaseEphemeralResource) Renew(ctx context.Context, req ephemeral.RenewRequest, resp *ephemeral.RenewResponse) {
	held, diags := getLeaseState(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	held, renewAt, diags := r.manager().renew(ctx, held)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(setLeaseState(ctx, resp.Private, held)...)
	resp.RenewAt = renewAt
}

// Close releases the lease; the engine calls it after the last resource
// that uses the lease, also when the apply failed.
func (r *leaseEphemeralResource) Close(ctx context.Context, req ephemeral.CloseRequest, resp *ephemeral.CloseResponse) {
	held, diags := getLeaseState(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(r.manager().release(ctx, held)...)
}

// manager returns the lease manager Configure handed over, or one with the
// process's own dependencies: Renew and Close need no run context.
func (r *leaseEphemeralResource) manager() *leaseManager {
	if r.data != nil && r.data.leases != nil {
		return r.data.leases
	}
	return newLeaseManager(newScopeStore(nil, nil, nil, ""))
}

// leaseOptions is what a configuration asks of a lease.
type leaseOptions struct {
	name        string
	ttl         time.Duration
	wait        bool
	waitTimeout time.Duration
}

// leaseState is a held lease as the private data carries it from Open to
// Renew and Close. The store URL may hold credentials: the engine keeps an
// ephemeral resource's private data in memory only, never in a plan or a
// state.
type leaseState struct {
	Name        string        `json:"name"`
	Store       string        `json:"store"`
	Dir         string        `json:"dir"`
	Environment string        `json:"environment"`
	Scope       string        `json:"scope"`
	Holder      string        `json:"holder"`
	Token       int64         `json:"token"`
	TTL         time.Duration `json:"ttl"`
	ExpiresAt   time.Time     `json:"expiresAt"`
	// ValidUntil is this provider's own deadline: the time the last grant
	// or renewal was sent, plus the TTL (docs/design.md §2.7 "Lease"); a slow
	// answer never extends it.
	ValidUntil time.Time `json:"validUntil"`
	// Joined is a lease the run itself holds: the wrapper took it for the
	// run's parent policy and renews and releases it.
	Joined bool `json:"joined,omitempty"`
}

func (s leaseState) key() store.Key {
	return store.Key{Environment: s.Environment, Scope: s.Scope}
}

func (s leaseState) lease() store.Lease {
	return store.Lease{Key: s.key(), Holder: s.Holder, Token: s.Token, ExpiresAt: s.ExpiresAt}
}

// schedule is the lease's renewal pacing, the wrapper's (package lease).
func (s leaseState) schedule() lease.Schedule { return lease.Schedule{TTL: s.TTL} }

// nextRenewal is TTL/3 after the last grant or renewal was sent.
func (s leaseState) nextRenewal() time.Time {
	return s.schedule().Next(s.ValidUntil.Add(-s.TTL))
}

// selfStop is when, without a successful renewal, the lease counts as lost
// to this provider: TTL/5 before its own deadline, like the wrapper's.
func (s leaseState) selfStop() time.Time {
	return s.schedule().SelfStop(s.ValidUntil)
}

// describe names the lease for messages: the object and its key.
func (s leaseState) describe() string {
	return fmt.Sprintf("%q (%s)", s.Name, s.key())
}

func setLeaseState(ctx context.Context, private interface {
	SetKey(context.Context, string, []byte) diag.Diagnostics
}, s leaseState) diag.Diagnostics {
	b, err := json.Marshal(s)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Lease Not Recorded", "The sponson provider could not encode the lease for the engine. "+
			"This is a bug in the provider; report it with the engine's output.\n\n"+err.Error())
		return diags
	}
	return private.SetKey(ctx, leasePrivateKey, b)
}

func getLeaseState(ctx context.Context, private interface {
	GetKey(context.Context, string) ([]byte, diag.Diagnostics)
}) (leaseState, diag.Diagnostics) {
	var s leaseState
	b, diags := private.GetKey(ctx, leasePrivateKey)
	if diags.HasError() {
		return s, diags
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Holder == "" || s.Scope == "" {
		if err == nil {
			err = fmt.Errorf("private data %q holds no lease", b)
		}
		diags.AddError("Lease Not Found",
			"The engine handed back no lease the sponson provider recorded when it opened sponson_lease, so it "+
				"cannot renew or release it. The lease expires after its TTL. This is a bug in the provider or "+
				"the engine; report it with the engine's output.\n\n"+err.Error())
	}
	return s, diags
}

// leaseManager acquires, renews and releases sponson_lease leases with the
// lease package's wait loop (lease.Take), schedule (lease.Schedule),
// confirmation and release, one call at a time as the engine asks. Its dependencies are the provider's: records resolves and
// opens the store like sponson_scope's writes; tests replace the clock, the
// holder names and the polling pace.
type leaseManager struct {
	records   *scopeStore
	newHolder func() string
	now       func() time.Time
	poll      time.Duration
}

// newLeaseManager returns a leaseManager over records with the process's
// clock.
func newLeaseManager(records *scopeStore) *leaseManager {
	return &leaseManager{records: records, newHolder: newLeaseHolderID, now: time.Now, poll: leasePollInterval}
}

// newLeaseHolderID names the holder of one sponson_lease: lease-<8 hex>, so
// that LOCK_HELD tells it from a wrapper run and from sponson_scope's own
// leases.
func newLeaseHolderID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes instead
	return "lease-" + hex.EncodeToString(b[:])
}

// acquire takes the lease on opts.name in the run's environment, waiting
// for it when opts.wait. Under the wrapper it uses the run's store with a
// holder of its own, and joins the run's lease when the run already holds
// this one.
func (m *leaseManager) acquire(ctx context.Context, rc runctx.Context, opts leaseOptions) (leaseState, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := leaseState{Name: opts.name, Environment: rc.Environment, Scope: ownership.ParentLeaseScope(opts.name), TTL: opts.ttl}
	key := s.key()

	handedURL, run, handedOver, err := lease.FromHandover(m.records.getenv, key)
	if err != nil {
		diags.AddError("Invalid Lease Hand-Over",
			fmt.Sprintf("%s: the sponson wrapper hands its store and lease to the provider in %s, %s and %s, but "+
				"they are incomplete or malformed, so sponson_lease did not take the lease on %s: it cannot tell "+
				"which store the run uses. Unset all three variables to apply without the wrapper, or run the "+
				"apply through sponson.\n\n%s",
				codeOf(err), lease.EnvStore, lease.EnvHolder, lease.EnvToken, s.describe(), err))
		return s, diags
	}
	raw, source := handedURL, lease.EnvStore+", the run's store"
	if !handedOver {
		raw, source, err = m.records.source()
	}
	if err == nil {
		s.Dir, err = m.records.dir()
	}
	if err != nil {
		diags.Append(storeErrorDiag("Store Not Opened",
			fmt.Sprintf("The sponson provider could not decide which store holds the lease on %s, so it did not "+
				"take it.", s.describe()), err))
		return s, diags
	}
	st, url, err := m.records.open(raw, s.Dir)
	if err != nil {
		diags.Append(storeErrorDiag("Store Not Opened",
			fmt.Sprintf("The sponson provider could not open the store %s (from %s) to take the lease on %s. Fix "+
				"the store URL, for example file:///path/to/dir.", describeStore(raw, s.Dir), source, s.describe()), err))
		return s, diags
	}
	defer st.Close()
	s.Store = url
	s.Holder = m.newHolder()

	t, err := lease.Take(ctx, st, key, s.Holder, lease.Config{
		TTL: opts.ttl, Wait: opts.wait, WaitTimeout: opts.waitTimeout, PollInterval: m.poll, Now: m.now,
		OnWait: func(l store.LeaseInfo) {
			tflog.Info(ctx, "Waiting for the lease", map[string]any{
				"name": s.Name, "key": key.String(), "held_by": l.Holder, "held_until": l.ExpiresAt,
			})
		},
		// The run took this lease for its parents policy. A second holder
		// in the same run would wait for itself; the run renews and
		// releases the lease, this resource only reports it.
		Join: func(l store.LeaseInfo) bool { return handedOver && l.Holder == run.Holder },
	})
	if err != nil {
		diags.Append(takeErrorDiag(s, url, opts, err))
		return s, diags
	}
	s.ValidUntil = lease.Schedule{TTL: opts.ttl}.Deadline(t.Sent)
	if j := t.Joined; j != nil {
		s.Holder, s.Token, s.ExpiresAt, s.Joined = j.Holder, j.Token, j.ExpiresAt, true
		tflog.Info(ctx, "Joined the run's lease", map[string]any{
			"name": s.Name, "key": key.String(), "holder": s.Holder, "token": s.Token,
		})
		return s, diags
	}
	s.Token, s.ExpiresAt = t.Grant.Lease.Token, t.Grant.Lease.ExpiresAt
	fields := map[string]any{"name": s.Name, "key": key.String(), "holder": s.Holder, "token": s.Token,
		"expires_at": s.ExpiresAt, "store": storeurl.Redact(url)}
	if t.Grant.Preempted != nil {
		fields["preempted_holder"] = t.Grant.Preempted.Holder
	}
	tflog.Info(ctx, "Acquired the lease", fields)
	return s, diags
}

// renew renews the lease and returns it with the time of the next renewal.
// A store that fails for a while is retried sooner, with a warning, until
// the provider's own deadline; a lease the store says is gone, or that
// could not be renewed before that deadline, is LOCK_LOST.
func (m *leaseManager) renew(ctx context.Context, s leaseState) (leaseState, time.Time, diag.Diagnostics) {
	var diags diag.Diagnostics
	sent := m.now()
	budget := s.schedule().RetryBudget(sent, s.ValidUntil)
	rctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	st, _, err := m.records.open(s.Store, s.Dir)
	if err == nil {
		defer st.Close()
		if s.Joined {
			// The run renews a joined lease: confirm it still holds it.
			err = lease.Confirm(rctx, st, s.lease(), m.now())
		} else {
			var l store.Lease
			if l, err = st.Renew(rctx, s.lease(), s.TTL); err == nil {
				s.ExpiresAt = l.ExpiresAt
			}
		}
	}
	switch {
	case err == nil:
		s.ValidUntil = s.schedule().Deadline(sent)
		tflog.Debug(ctx, "Renewed the lease", map[string]any{
			"name": s.Name, "key": s.key().String(), "holder": s.Holder, "token": s.Token, "expires_at": s.ExpiresAt,
			"joined": s.Joined,
		})
		return s, s.nextRenewal(), diags
	case errors.Is(err, store.ErrLeaseLost):
		diags.Append(leaseLostDiag(s, "it expired, or another run took it over", err))
		return s, time.Time{}, diags
	}
	retry := s.schedule().Retry(m.now())
	if !retry.Before(s.selfStop()) {
		diags.Append(leaseLostDiag(s, fmt.Sprintf("the store did not renew it in time (the last renewal was "+
			"sent at %s)", s.ValidUntil.Add(-s.TTL).UTC().Format(time.RFC3339)), err))
		return s, time.Time{}, diags
	}
	diags.Append(storeWarningDiag("Lease Not Renewed",
		fmt.Sprintf("The sponson provider could not renew the lease on %s and tries again at %s; the lease stays "+
			"valid until %s.", s.describe(), retry.UTC().Format(time.RFC3339), s.ExpiresAt.UTC().Format(time.RFC3339)), err))
	return s, retry, diags
}

// release frees the lease, retrying a store that fails, also when the
// engine was interrupted: a lease left behind blocks the object for a whole
// TTL. A joined lease is the run's to release.
func (m *leaseManager) release(ctx context.Context, s leaseState) diag.Diagnostics {
	var diags diag.Diagnostics
	if s.Joined {
		tflog.Debug(ctx, "Leaving the run's lease to the run", map[string]any{"name": s.Name, "key": s.key().String()})
		return diags
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	st, _, err := m.records.open(s.Store, s.Dir)
	if err == nil {
		defer st.Close()
		err = lease.Free(rctx, st, s.lease())
	}
	switch {
	case err == nil:
		tflog.Info(ctx, "Released the lease", map[string]any{"name": s.Name, "key": s.key().String(), "holder": s.Holder, "token": s.Token})
	case errors.Is(err, store.ErrLeaseLost):
		diags.Append(leaseLostDiag(s, "it expired before it was released, or another run took it over", err))
	default:
		diags.Append(storeWarningDiag("Lease Not Released",
			fmt.Sprintf("The sponson provider could not release the lease on %s. Other runs wait until it expires "+
				"at about %s; nothing else needs to be done.", s.describe(), s.ExpiresAt.UTC().Format(time.RFC3339)), err))
	}
	return diags
}

// waitTimeoutNeedsWait refuses wait_timeout_seconds without wait = true,
// where it would silently do nothing.
type waitTimeoutNeedsWait struct{}

func (waitTimeoutNeedsWait) Description(_ context.Context) string {
	return "wait_timeout_seconds can only be set together with wait = true"
}

func (v waitTimeoutNeedsWait) MarkdownDescription(ctx context.Context) string {
	return "`wait_timeout_seconds` can only be set together with `wait = true`"
}

func (waitTimeoutNeedsWait) ValidateEphemeralResource(ctx context.Context, req ephemeral.ValidateConfigRequest, resp *ephemeral.ValidateConfigResponse) {
	var wait types.Bool
	var timeout types.Int64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("wait"), &wait)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("wait_timeout_seconds"), &timeout)...)
	if resp.Diagnostics.HasError() || timeout.IsNull() || timeout.IsUnknown() || wait.IsUnknown() {
		return
	}
	if !wait.ValueBool() {
		resp.Diagnostics.AddAttributeError(path.Root("wait_timeout_seconds"), "Wait Timeout Without Wait",
			"wait_timeout_seconds says how long to wait for a held lease, but wait is not true, so sponson_lease "+
				"would not wait at all. Set wait = true, or remove wait_timeout_seconds.")
	}
}
