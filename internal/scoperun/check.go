package scoperun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/succession"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

// checked is what planAndCheck produced: the saved plan, what it changes,
// and the ownership and policy the later phases apply to it.
type checked struct {
	path    string // the saved plan file
	changed bool
	plan    *tfjson.Plan
	// planJSON and planText are the engine's JSON and redacted text of the
	// plan, for plan -out and --json-plan.
	planJSON []byte
	planText string
	policy   ownership.Policy
	planned  []ownership.Planned
	rules    ownership.Rules
	// owners are the owners the foreign check saw of the identities the
	// plan touches, for a saved plan.
	owners []store.Owner
	// rewrites are the unresolved entries this run creates again at the
	// same place (ownership.InPlace), by address: the record phase
	// settles them once the state holds them.
	rewrites map[string]receipt.Entry
	// fast is set on the no-change fast path (unchanged.go), and
	// unchanged is the ledger the run leaves; plan is nil then.
	fast      bool
	unchanged []receipt.Entry
	// early is the apply started as soon as the plan was written (nil:
	// the apply starts when the checks are done).
	early *earlyApply
}

// planAndCheck is the sixth phase: the engine plans (a run that writes
// takes the engine's state lock for it), and the plan is checked before the
// engine writes anything: no change may touch what another scope owns, and
// a run that writes production needs a named approver.
//
// An apply whose plan changes nothing stops here when the fast path allows
// it (unchanged.go): the plan is not read as JSON, and c.unchanged is the
// ledger to record. The plan is checked against st.prev, the receipt the
// run carries forward, and st.unresolved; ld.handover names the
// predecessor whose resources are not foreign to it.
func (r *runner) planAndCheck(ctx context.Context, eng *engineRun, work workdir, ld *loaded, st *settled) (*checked, error) {
	c := &checked{path: filepath.Join(work.tmp, "plan.bin")}
	if err := r.enginePlan(ctx, eng, c); err != nil {
		return nil, err
	}
	r.startApplyEarly(eng, c)
	if !c.changed && r.o.Saved == nil && r.fastPathAllowed(work, ld, st) {
		ledger, ok, err := r.unchangedLedger(ctx, eng, st.prev)
		if err != nil {
			return nil, err
		}
		if ok {
			c.fast, c.unchanged = true, ledger
			r.progress(Progress{Step: StepPlan, Summary: &engine.Summary{}})
			r.finishPlan(ld.handover)
			return c, nil
		}
	}
	if err := r.readPlan(ctx, eng, c); err != nil {
		return nil, err
	}
	summary := r.res.Summary
	r.progress(Progress{Step: StepPlan, Summary: &summary})
	r.finishPlan(ld.handover)
	if err := r.identify(ctx, eng, c, st.prev); err != nil {
		return nil, err
	}
	if err := r.check(ctx, c, ld.handover, st.unresolved); err != nil {
		return nil, err
	}
	return c, nil
}

// enginePlan has the engine plan (or takes the saved plan).
func (r *runner) enginePlan(ctx context.Context, eng *engineRun, c *checked) error {
	var err error
	if sp := r.o.Saved; sp != nil {
		// apply FILE: the engine's plan is the one reviewed; the checks
		// below run on it again, from the plan itself.
		if err := os.WriteFile(c.path, sp.Plan, 0o600); err != nil {
			return errcode.Wrap(errcode.Internal, err, "writing the saved plan for the engine")
		}
	} else {
		end := r.section("plan", "engine plan")
		c.changed, err = eng.sess.Plan(eng.ctx, engine.PlanOptions{Out: c.path, Destroy: r.o.Command == Destroy || r.o.EngineFlags.PlanDestroy, Lock: r.o.Command != Plan, Vars: r.o.Vars})
		end()
		if err != nil {
			r.diagnose(eng)
			return r.engineErr(ctx, err)
		}
	}
	return nil
}

// diagnose hands the Reporter the configuration's diagnostics after a plan
// the engine refused (Reporter.Diagnostics): the plan printed its own as
// text, without the files and lines validate's JSON gives. What validate
// cannot say (a provider's error at refresh) stays in the plan's text.
func (r *runner) diagnose(eng *engineRun) {
	v, ok := eng.sess.(Validator)
	if r.o.Report.Diagnostics == nil || !ok || eng.ctx.Err() != nil {
		return
	}
	out, _, err := v.Validate(eng.ctx)
	if err != nil || out == nil || len(out.Diagnostics) == 0 {
		return
	}
	r.o.Report.Diagnostics(out.Diagnostics)
}

// readPlan reads the plan's JSON, and its text where a summary or a saved
// plan wants it.
func (r *runner) readPlan(ctx context.Context, eng *engineRun, c *checked) error {
	var err error
	pj, wantJSON := eng.sess.(PlanJSONer)
	// The policies read the plan JSON as the engine printed it.
	policies := r.o.Policy != nil || r.o.ProposedPolicy != nil
	wantJSON = wantJSON && (policies || r.o.Command == Plan && (r.o.SavePlan != "" || r.o.JSONPlan != ""))
	if wantJSON {
		c.plan, c.planJSON, err = pj.ShowPlanJSON(eng.ctx, c.path)
	} else {
		c.plan, err = eng.sess.ShowPlan(eng.ctx, c.path)
	}
	if err != nil {
		return r.engineErr(ctx, err)
	}
	if r.o.Saved != nil {
		c.changed = planChanges(c.plan)
		r.warnUnauthenticated()
	}
	r.res.Summary = engine.Summarize(c.plan)
	r.res.Plan = c.plan
	if pt, ok := eng.sess.(PlanTexter); ok && (r.o.PlanText || (r.o.Command == Plan && r.o.SavePlan != "")) {
		if txt, err := pt.ShowPlanText(eng.ctx, c.path); err == nil {
			c.planText = summary.Redact(txt, c.plan)
			if r.o.PlanText {
				r.res.PlanText = c.planText
			}
		} else {
			r.warn(fmt.Sprintf("the engine's text of the plan is not in the summary: %v", err))
		}
	}
	return nil
}

// finishPlan notes in the result the succession the plan takes part in.
func (r *runner) finishPlan(h *succession.Handover) {
	if h != nil {
		if pred, ok := h.Predecessor(); ok {
			r.res.InheritedFrom = pred
		}
	}
}

// identify computes the policy (the scope's, with what the environment
// declares) and the identities of every planned change, under every
// scheme in use in the environment.
func (r *runner) identify(ctx context.Context, eng *engineRun, c *checked, prev *receipt.Receipt) error {
	c.policy = ownership.PolicyFromPlan(c.plan)
	decl := r.o.Declared.Policy()
	c.policy.Declared, c.policy.AddressOwned = decl.Declared, decl.AddressOwned
	// Sensitive identifying values are hashed with the environment's key.
	kcfg := r.o.Lease
	kcfg.About = r.holderInfo()
	var err error
	if c.policy.HashKey, err = ownership.LoadHashKey(ctx, r.o.Store, r.key.Environment, "hashkey-"+strings.TrimPrefix(r.o.RunID, "run-"), kcfg,
		c.policy.NeedsHashKey(c.plan), r.o.Command != Plan); err != nil {
		return err
	}
	c.planned = ownership.Identify(c.plan, c.policy)
	// Checked under every identity scheme in use in the environment, not
	// only this scope's (issue 12 item 1).
	if c.planned, err = ownership.Keyed(ctx, r.o.Store, r.key.Environment, c.plan, c.policy, c.planned); err != nil {
		return err
	}
	if err := r.checkPolicy(ctx, eng, prev, c.policy, c.planned); err != nil {
		return err
	}
	if r.o.Saved != nil {
		return checkSavedPlan(r.o.Saved.Meta, c.planned)
	}
	return nil
}

// check makes the checks before the engine writes: the foreign check, an
// import's, the unresolved creates' (unresolved: the entries settle could
// not vouch for) and the approval. h is the run's part in a succession.
func (r *runner) check(ctx context.Context, c *checked, h *succession.Handover, unresolved []receipt.Entry) error {
	r.noteUnknownIdentities(c.planned)
	// The foreign check: before the engine writes anything, no planned
	// change may touch an object another scope of the environment owns.
	// The owners it saw go into a saved plan.
	var err error
	if c.owners, err = ownership.CheckForeign(ctx, r.o.Store, r.key, c.planned, foreignExcept(h)); err != nil {
		return err
	}
	if r.o.ImportOnly {
		if err := importOnly(c.planned); err != nil {
			return err
		}
	}
	if err := r.checkUnresolved(c, unresolved); err != nil {
		return err
	}
	c.rules = ownership.RulesFromPlan(c.plan)
	return r.checkApproval(c.rules, c.plan)
}

// noteUnknownIdentities says which creates have an identity attribute the
// policy named that is not known until apply. An id the engine learns at
// apply is the usual case and needs no word.
func (r *runner) noteUnknownIdentities(planned []ownership.Planned) {
	for _, p := range planned {
		idOnly := len(p.Unknown) == 1 && p.Unknown[0] == "id"
		if p.Identity == "" && len(p.Unknown) > 0 && p.Creates() && !idOnly {
			r.info(fmt.Sprintf("identity of %s is unknown until apply (%s); it is recorded under its address until then", p.Address, strings.Join(p.Unknown, ", ")))
		}
	}
}

// planOutcome is where a plan ends: its status says whether it changes
// anything.
func (r *runner) planOutcome(c *checked) {
	r.res.Status = receipt.StatusUnchanged
	if c.changed {
		r.res.Status = "changes"
	}
}

// checkPolicy refuses a policy under which objects the scope owns would
// lose an identity other scopes can match (ownership.Unmatchable).
func (r *runner) checkPolicy(ctx context.Context, eng *engineRun, prev *receipt.Receipt, pol ownership.Policy, planned []ownership.Planned) error {
	if prev == nil || len(pol.Identity) == 0 && len(pol.Declared) == 0 {
		return nil
	}
	objects, err := r.currentState(ctx, eng)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "reading the state to check the identity policy")
	}
	return ownership.Unmatchable(prev, objects, pol, planned)
}

// checkApproval refuses a run that can write production without a named
// approver (ENV_NOT_APPROVED, exit 2), before the engine writes anything: in
// the production environment or another protected one, or when the plan
// changes a resource the sponson_scope policy marks as production. A plan is never refused; it says
// that its apply will need approval.
func (r *runner) checkApproval(rules ownership.Rules, plan *tfjson.Plan) error {
	hits := rules.ProductionChanges(plan)
	if !r.o.Protected && !ownership.NeedsApproval(r.key.Environment, hits) {
		if r.o.ApprovedBy != "" && r.o.Command != Plan {
			r.info(fmt.Sprintf("approval by %s is not recorded: this run needs none (the environment %s is not protected and it writes no production resource)",
				r.o.ApprovedBy, r.key.Environment))
		}
		return nil
	}
	var why []string
	for _, h := range hits {
		why = append(why, fmt.Sprintf("%s (%s)", h.Address, h.Rule))
	}
	reason := "the environment " + r.key.Environment + " is protected"
	if len(why) > 0 {
		reason = "it writes production: " + strings.Join(why, ", ")
	}
	name, err := rules.Approved(r.o.ApprovedBy)
	if r.o.Command == Plan {
		if err != nil {
			r.res.NeedsApproval = true
			r.warn(fmt.Sprintf("apply will need a named approver (--approved-by) because %s", reason))
		}
		return nil
	}
	if err != nil {
		e := errcode.As(err)
		e.Message += "; " + reason
		return e.With("productionChanges", why)
	}
	r.o.ApprovedBy, r.res.ApprovedBy = name, name
	r.info(fmt.Sprintf("approved by %s (%s)", name, reason))
	return nil
}

// importOnly refuses an import whose plan would also create, change or
// delete something: `sponson import`, like the engine's import, only
// brings an existing object under management.
func importOnly(planned []ownership.Planned) error {
	var other []string
	for _, p := range planned {
		if !p.Imports || len(p.Actions) != 1 {
			other = append(other, fmt.Sprintf("%s (%s)", p.Address, strings.Join(p.Actions, "+")))
		}
	}
	if len(other) == 0 {
		return nil
	}
	return errcode.New(errcode.Usage, "the import would also change %s; nothing was written", strings.Join(other, ", ")).
		WithHint("Make the configuration match the object (and apply what it needs first, such as the scope's sponson_scope), then import again; or import with an import block and `sponson apply`, which applies those changes too.")
}

// checkUnresolved refuses to create again an object whose earlier create
// may have happened (an unresolved intent): a second create could leave
// two objects, one of them owned by nobody. A person says which it is with
// `sponson resolve`. A create of a type that writes its object where its
// arguments say (ownership.InPlace: local_file's filename), planned at the
// same place as the unresolved one, goes through: it writes that object
// again, not a second one (c.rewrites). open are the entries settle could
// not vouch for.
func (r *runner) checkUnresolved(c *checked, open []receipt.Entry) error {
	unresolved := map[string]receipt.Entry{}
	for _, e := range open {
		unresolved[e.Address] = e
	}
	values := map[string]map[string]string{}
	if c.plan != nil {
		for _, rc := range c.plan.ResourceChanges {
			if rc.DeposedKey == "" && rc.Change != nil {
				values[rc.Address] = plannedValues(rc.Change)
			}
		}
	}
	var hit, described []string
	for _, p := range c.planned {
		e, ok := unresolved[p.Address]
		if !ok || !p.Creates() {
			continue
		}
		if p.Type == e.Type && p.Provider == e.Provider && ownership.SamePlace(e.Provider, e.Type, e.Planned, values[p.Address]) {
			if c.rewrites == nil {
				c.rewrites = map[string]receipt.Entry{}
			}
			c.rewrites[p.Address] = e
			continue
		}
		hit = append(hit, p.Address)
		described = append(described, e.Described())
	}
	if len(hit) == 0 {
		return nil
	}
	return errcode.New(errcode.IntentUnresolved, "%s: an earlier create of %s may have happened (the run that started it stopped before it could tell), so it is not created again",
		r.key, strings.Join(described, ", ")).
		WithHint("Find out whether the object exists. If it does, `sponson resolve "+hit[0]+" --id ID` and the next apply adopts it; if not, `sponson resolve "+hit[0]+" --gone` and the next apply creates it.").
		With("addresses", hit)
}
